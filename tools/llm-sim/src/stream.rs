//! Turning a request's step results into an HTTP answer: SSE chunks or one
//! JSON body, with the stream faults (cut, malformed line, stall) applied.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Body, Frame};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::{GenReq, Ids, Stats};
use crate::model::{Chunk, Gen, Model};
use crate::state::State;
use crate::timer::Timer;
use crate::tokenize::detokenize;

pub type HttpBody = BoxBody<Bytes, io::Error>;

/// A whole body from bytes.
pub fn full(b: impl Into<Bytes>) -> HttpBody {
    Full::new(b.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A body fed from a channel; an `Err` item aborts the connection.
struct ChannelBody(mpsc::Receiver<Result<Bytes, io::Error>>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

/// Where a request's chunks come from.
pub enum Source {
    /// The batching engine (performance model).
    Engine(mpsc::UnboundedReceiver<Chunk>),
    /// Generated here, at once (zero delay) or on exact timing.
    Local {
        gen: Box<Gen>,
        model: Arc<Model>,
        timing: Option<(Timer, Instant, std::time::Duration, std::time::Duration)>,
        sent: u32,
        done: bool,
    },
}

impl Source {
    pub async fn next(&mut self) -> Option<Chunk> {
        match self {
            Source::Engine(rx) => rx.recv().await,
            Source::Local {
                gen,
                model,
                timing,
                sent,
                done,
            } => {
                if *done {
                    return None;
                }
                if let Some((timer, t0, ttft, itl)) = timing {
                    timer.sleep_until(*t0 + *ttft + *itl * *sent).await;
                }
                *sent += 1;
                let c = gen.step(model);
                *done = c.finish.is_some();
                Some(c)
            }
        }
    }
}

/// Faults drawn for one stream.
#[derive(Debug, Default, Clone, Copy)]
pub struct Faults {
    pub cut: bool,
    pub malformed: bool,
    pub stall: bool,
}

/// Everything a response producer needs.
pub struct Job {
    pub state: Arc<State>,
    pub req: GenReq,
    pub ids: Ids,
    pub source: Source,
    pub faults: Faults,
    /// When the request arrived (its connection's wire clock).
    pub t0: Instant,
    pub wire: Arc<crate::wire::Wire>,
}

/// Answer a streaming request: returns the body; a task feeds it.
pub fn streaming(job: Job) -> HttpBody {
    let (tx, rx) = mpsc::channel(32);
    tokio::spawn(produce(job, tx));
    ChannelBody(rx).boxed()
}

/// A body fed by `fill`, which gets the sending end of its channel.
pub fn channel_body<F, Fut>(fill: F) -> HttpBody
where
    F: FnOnce(mpsc::Sender<Result<Bytes, io::Error>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(32);
    tokio::spawn(fill(tx));
    ChannelBody(rx).boxed()
}

pub fn sse(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

async fn produce(mut job: Job, tx: mpsc::Sender<Result<Bytes, io::Error>>) {
    let mut stats = Stats {
        prompt_tokens: job.req.prompt_tokens,
        ..Stats::default()
    };
    if job.req.chat && tx.send(Ok(sse(&job.ids.role_chunk()))).await.is_err() {
        return count_aborted(&job);
    }
    let half = (job.req.max_tokens / 2).max(1);
    let mut first_at = None;
    let mut faulted = false;
    while let Some(c) = job.source.next().await {
        if first_at.is_none() {
            job.wire.arm(); // this chunk carries the first token
        }
        account(&mut stats, &mut first_at, job.t0, &c, &job.state);
        if let Some(w) = job.wire.first_write() {
            // TTFT as the client can see it: first token on the wire.
            stats.ttft_ms = ms(w.saturating_duration_since(job.t0));
        }
        let finish = c.finish.map(|f| f.as_str());
        let text = detokenize(&c.tokens);
        // SGLang's chat stream ends the text, then sends finish_reason in a
        // chunk of its own (tests/fixtures/real/sglang, the real server).
        let apart = job.ids.sglang && job.req.chat;
        let in_text = if apart { None } else { finish };
        let mut v = job.ids.chunk(&text, in_text, in_text.map(|_| &stats));
        if job.req.continuous_usage {
            v["usage"] = stats.usage();
        }
        if tx.send(Ok(sse(&v))).await.is_err() {
            // Client gone; dropping the source tells the engine.
            return count_aborted(&job);
        }
        if let (true, Some(f)) = (apart, finish) {
            if tx
                .send(Ok(sse(&job.ids.finish_chunk(f, &stats))))
                .await
                .is_err()
            {
                return count_aborted(&job);
            }
        }
        if !faulted && (stats.completion_tokens >= half || finish.is_some()) {
            faulted = true;
            if job.faults.cut {
                job.state.metrics.requests_error.fetch_add(1, Relaxed);
                let _ = tx.send(Err(io::Error::other("simulated stream cut"))).await;
                return;
            }
            if job.faults.malformed {
                let junk = Bytes::from_static(b"data: {\"id\":\"cmpl-sim\",\"choices\":[{\"te\n\n");
                let _ = tx.send(Ok(junk)).await;
            }
            if job.faults.stall {
                tokio::time::sleep(job.state.args.stall).await;
            }
        }
        if finish.is_some() {
            break;
        }
    }
    if job.req.include_usage {
        let _ = tx.send(Ok(sse(&job.ids.usage_chunk(&stats)))).await;
    }
    job.state.metrics.requests_success.fetch_add(1, Relaxed);
    let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
}

/// The client went away before the answer ended (it cancelled): llm-sim's
/// own counter (vLLM has none for it; metrics.rs says why).
fn count_aborted(job: &Job) {
    job.state.metrics.requests_aborted.fetch_add(1, Relaxed);
}

/// Answer a non-streaming request: wait for every token, then one JSON.
/// A cut fault aborts the connection instead.
pub async fn whole(mut job: Job) -> Result<Value, ()> {
    let mut stats = Stats {
        prompt_tokens: job.req.prompt_tokens,
        ..Stats::default()
    };
    let mut text = String::new();
    let mut first_at = None;
    let mut finish = "length";
    while let Some(c) = job.source.next().await {
        account(&mut stats, &mut first_at, job.t0, &c, &job.state);
        text.push_str(&detokenize(&c.tokens));
        if let Some(f) = c.finish {
            finish = f.as_str();
            break;
        }
    }
    if job.faults.stall {
        tokio::time::sleep(job.state.args.stall).await;
    }
    if job.faults.cut {
        job.state.metrics.requests_error.fetch_add(1, Relaxed);
        return Err(());
    }
    job.state.metrics.requests_success.fetch_add(1, Relaxed);
    Ok(job.ids.full(&text, finish, &stats))
}

/// A body that aborts the connection at once (a cut non-streamed answer).
pub fn aborted() -> HttpBody {
    let (tx, rx) = mpsc::channel(1);
    let _ = tx.try_send(Err(io::Error::other("simulated connection cut")));
    ChannelBody(rx).boxed()
}

/// Add one chunk to the request's stats and the server's counters.
pub fn account(
    stats: &mut Stats,
    first_at: &mut Option<Instant>,
    t0: Instant,
    c: &Chunk,
    s: &State,
) {
    let now = Instant::now();
    let first = *first_at.get_or_insert(now);
    stats.completion_tokens += c.tokens.len() as u64;
    stats.draft_n += c.drafted as u64;
    stats.draft_n_accepted += c.accepted as u64;
    stats.ttft_ms = ms(first - t0);
    stats.decode_ms = ms(now - first);
    s.metrics.spec(c.drafted, c.accepted);
    s.metrics
        .generation_tokens
        .fetch_add(c.tokens.len() as u64, Relaxed);
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
