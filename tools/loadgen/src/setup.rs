//! Before the first level: find the server and its model, build prompts
//! and request bodies once (a request costs no JSON building at send time),
//! and the HTTP agent the load uses. The flags were validated in plan.rs.

use std::sync::Arc;

use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{FailureKind, FailureRecord, ServerInfo, ServerKind, Stage, Workload};

use crate::body::{Bodies, BodySpec};
use crate::cli::{Args, Endpoint};
use crate::client::{self, Target};
use crate::level::Prepared;
use crate::plan::Plan;
use crate::prompts::{self, Prompt};
use crate::server::{self, ModelsError, Probe, RemoteTokenizer};
use crate::upstream_record::Upstream;

/// Most distinct prompts prepared; levels cycle through them.
pub const PROMPT_POOL: usize = 512;

/// Everything the levels share.
pub struct Context {
    /// The event loop every level's requests run on.
    pub rt: tokio::runtime::Runtime,
    pub target: Arc<Target>,
    pub probe: Probe,
    pub server: ServerInfo,
    pub server_info: Option<Value>,
    pub prepared: Arc<Vec<Prepared>>,
    pub prompts_label: String,
    pub input_len_method: Option<String>,
    pub synthetic_input_tokens: Option<u64>,
    /// What is sent, for each record's `load.workload`.
    pub workload: Workload,
    /// `--trace`: each prompt's send time, ms after the first.
    pub trace_ms: Option<Arc<Vec<f64>>>,
    /// `--sessions`: the sessions each level runs.
    pub sessions: Option<Arc<crate::session_run::SessionRun>>,
    /// What each level samples besides its load (scrape/).
    pub sources: crate::scrape::sources::Sources,
}

pub enum ConnectError {
    /// The server cannot be reached: a failure record, exit 30.
    Unreachable(String),
    /// HTTP 401/403: the server wants an API key (the line says which
    /// variable to set): a failure record, exit 15.
    Unauthorized(String),
    Other(Exit),
}

impl From<Exit> for ConnectError {
    fn from(e: Exit) -> Self {
        ConnectError::Other(e)
    }
}

/// How many distinct prompts the run can use.
fn pool_size(plan: &Plan) -> usize {
    let per_level = match plan.level.requests {
        Some(n) => n as usize + plan.level.warmup as usize,
        None => PROMPT_POOL,
    };
    (per_level * plan.shapes.len()).clamp(1, PROMPT_POOL)
}

/// Find the server and model, build the prompts and the request bodies,
/// and the event loop the load runs on.
pub fn connect(a: &Args, plan: &Plan, up: &Upstream) -> Result<Context, ConnectError> {
    let auth = api_key(a).map(|k| format!("Bearer {k}"));
    let probe = Probe::new(&plan.base_url, auth.clone());
    let (model, owner) = match &a.model {
        Some(m) => (m.clone(), None),
        None => probe.first_model().map_err(|e| match e {
            ModelsError::Key(status) => {
                ConnectError::Unauthorized(key_refused("GET /v1/models", status, &probe, up))
            }
            ModelsError::Other(why) => ConnectError::Unreachable(why),
        })?,
    };
    let info = if a.no_scrape {
        None
    } else {
        probe.server_info()
    };
    let mut server = server::describe(
        &plan.base_url,
        &model,
        owner.as_deref(),
        info.as_ref(),
        up.server.clone(),
    );
    let want = crate::scrape::sources::Want {
        scrape: !a.no_scrape,
        interval: a.scrape_interval,
        gpu: a.gpu_metrics.as_ref(),
        gpu_cmd: a.gpu_metrics_cmd.as_deref(),
        auth: auth.clone(),
    };
    let sources = crate::scrape::sources::open(&want, &probe, &mut server, info.as_ref());
    let pool = match (&plan.trace, &plan.sessions) {
        (Some(tp), _) => trace_pool(a, tp, &probe, &model)?,
        (None, Some(sp)) => session_pool(sp),
        (None, None) => prompt_pool(a, &probe, &model, pool_size(plan))?,
    };
    let bodies = bodies(a, plan, &model);
    let prepared: Vec<Prepared> = pool.prompts.iter().map(|p| bodies.prepare(p)).collect();
    let sessions = plan.sessions.as_ref().map(|sp| {
        let needs_words = sp.has_blocks();
        let vocab = needs_words
            .then(|| block_words(a, &probe, &model))
            .flatten();
        Arc::new(crate::session_run::SessionRun {
            scripts: crate::session_plan::scripts(sp, vocab.as_deref().unwrap_or(prompts::WORDS)),
            bodies: bodies.clone(),
            think_time: sp.think_time,
            closed_speed: a
                .speed
                .as_ref()
                .and_then(|s| s.first().copied())
                .unwrap_or(1.0),
        })
    });
    let mut target = Target::new(
        &format!("{}{}", plan.base_url, plan.endpoint_path),
        auth.as_deref(),
        !a.no_stream,
        a.request_timeout,
        a.idle_timeout,
        a.idle_timeout.min(std::time::Duration::from_secs(10)),
    )
    .map_err(|e| Exit::new(exit::USAGE, anyhow::anyhow!(e)))?;
    target.cumulative_text = a.endpoint == Endpoint::Generate
        && crate::generate::cumulative_text(info.as_ref().or(server.args.as_ref()));
    let rt = client::runtime(a.client_threads as usize).map_err(|e| {
        Exit::new(
            exit::FAILURE,
            anyhow::anyhow!("cannot start the event loop: {e}"),
        )
    })?;
    Ok(Context {
        rt,
        target: Arc::new(target),
        probe,
        server,
        server_info: info,
        prepared: Arc::new(prepared),
        prompts_label: pool.label,
        input_len_method: pool.method,
        synthetic_input_tokens: pool.synthetic_input_tokens,
        workload: pool.workload,
        trace_ms: plan
            .trace
            .as_ref()
            .map(|tp| Arc::new(crate::trace_prompts::times_ms(tp))),
        sessions,
        sources,
    })
}

/// The line for a 401 or 403 at `what`: which variable to set (naming
/// OPENAI_API_KEY when the upstream server is `--server openai`'s kind).
pub fn key_refused(what: &str, status: u16, probe: &Probe, up: &Upstream) -> String {
    let openai = up
        .server
        .as_ref()
        .is_some_and(|s| s.kind == Some(ServerKind::Openai));
    sweepkit::api::key_refused(what, status, probe.has_key(), openai)
}

/// The API key: `--api-key`/`OPENAI_API_KEY`, else `SWEEPKIT_API_KEY`
/// (wait-ready reads it, and a sweep sets one key for every tool;
/// otherwise each level fails on HTTP 401).
fn api_key(a: &Args) -> Option<String> {
    let key = a.api_key.clone().or_else(|| {
        std::env::var("SWEEPKIT_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
    });
    if let Some(k) = &key {
        // Never echoed: scrubbed from every record and message from here on.
        sweepkit::redact::remember(k);
    }
    key
}

/// The prompts and how the record describes them.
struct Pool {
    prompts: Vec<Prompt>,
    label: String,
    method: Option<String>,
    synthetic_input_tokens: Option<u64>,
    workload: Workload,
}

/// The trace's prompts, one per line in the window, in order. With a
/// tokenizer, blocks are made of the words it keeps whole, and the first
/// few prompts are measured: a tokenizer that still disagrees is named
/// here, before the run (the records compare the server's counts with the
/// trace's).
fn trace_pool(
    a: &Args,
    tp: &crate::trace_prompts::TracePlan,
    probe: &Probe,
    model: &str,
) -> Result<Pool, Exit> {
    use crate::prompts::Tokenizer;
    let tok = RemoteTokenizer { probe, model };
    let vocab = block_words(a, probe, model);
    let chat = a.endpoint == Endpoint::Chat;
    let words = vocab.as_deref().unwrap_or(prompts::WORDS);
    let prompts = crate::trace_prompts::prompts(tp, chat, words)?;
    let method = match vocab {
        Some(_) => prompts::METHOD_TOKENIZE,
        None => prompts::METHOD_APPROX,
    };
    if vocab.is_some() {
        for (p, e) in prompts.iter().zip(&tp.entries).take(4) {
            let Some(n) = p.messages.is_none().then(|| tok.count(&p.text)).flatten() else {
                break;
            };
            if n.abs_diff(p.input_tokens) > 1 {
                sweepkit::diag::warning(
                    "loadgen",
                    format!(
                        "--trace line {}: the server's tokenizer makes {n} tokens of a \
                         prompt the trace gives {}",
                        e.line, p.input_tokens
                    ),
                );
            }
        }
    }
    let workload = crate::trace_prompts::workload(tp, &prompts);
    Ok(Pool {
        label: format!("{}_trace:{}", tp.kind, tp.path.display()),
        prompts,
        method: Some(method.into()),
        synthetic_input_tokens: None,
        workload,
    })
}

/// The words Mooncake blocks are made of: those the server's tokenizer
/// keeps whole (trace_prompts.rs), None without one.
fn block_words(a: &Args, probe: &Probe, model: &str) -> Option<Vec<&'static str>> {
    let tok = RemoteTokenizer { probe, model };
    (!a.no_tokenize)
        .then(|| crate::trace_prompts::one_token_words(&tok))
        .flatten()
}

/// Sessions build each turn's request as they go: no prompts up front.
fn session_pool(sp: &crate::session_plan::SessionsPlan) -> Pool {
    Pool {
        prompts: Vec::new(),
        label: format!("sessions:{}", sp.path.display()),
        method: Some(prompts::METHOD_APPROX.into()),
        synthetic_input_tokens: None,
        workload: sp.workload(),
    }
}

/// `n` synthetic prompts (sized with the server's /tokenize when it has
/// one) or the `--prompts-file`.
fn prompt_pool(a: &Args, probe: &Probe, model: &str, n: usize) -> Result<Pool, Exit> {
    if let Some(path) = &a.prompts_file {
        let fmt = format!("{:?}", a.prompts_format).to_lowercase();
        let prompts::PromptsFile {
            prompts,
            label,
            sha256,
        } = prompts::from_file(path, &fmt)
            .map_err(|e| Exit::new(exit::BAD_INPUT, e.context("--prompts-file")))?;
        let workload = Workload {
            kind: label.split(':').next().unwrap_or_default().into(),
            sha256: Some(sha256),
            requests: prompts.len() as u64,
            ..Workload::default()
        };
        return Ok(Pool {
            prompts,
            label,
            method: Some(prompts::METHOD_APPROX.into()),
            synthetic_input_tokens: None,
            workload,
        });
    }
    let tok = RemoteTokenizer { probe, model };
    let use_tok = !a.no_tokenize && {
        use crate::prompts::Tokenizer;
        tok.count("hello world").is_some()
    };
    let t: Option<&dyn prompts::Tokenizer> = if use_tok { Some(&tok) } else { None };
    let (prompts, m) = prompts::synthetic(n, a.input_tokens, a.seed, t);
    let workload = Workload {
        kind: "synthetic".into(),
        requests: prompts.len() as u64,
        ..Workload::default()
    };
    Ok(Pool {
        prompts,
        label: "synthetic".into(),
        method: Some(m.into()),
        synthetic_input_tokens: Some(a.input_tokens),
        workload,
    })
}

/// The request bodies the flags ask for.
fn bodies(a: &Args, plan: &Plan, model: &str) -> Bodies {
    let spec = BodySpec {
        model: model.to_string(),
        chat: a.endpoint == Endpoint::Chat,
        native: a.endpoint == Endpoint::Generate,
        stream: !a.no_stream,
        continuous_usage: !a.no_continuous_usage,
        max_tokens: Some(a.max_tokens),
        ignore_eos: a.ignore_eos,
        temperature: a.temperature,
        extra: plan.extra.clone(),
    };
    Bodies::new(spec)
}

/// A failure record for this run (stage bench), carrying the upstream.
pub fn failure_record(
    plan: &Plan,
    up: &Upstream,
    kind: FailureKind,
    reason: &str,
) -> FailureRecord {
    // Without an upstream record loadgen cannot know the config: say so in
    // the record rather than let `config: {}` pass for a config.
    let reason = match &up.raw {
        Some(_) => reason.to_string(),
        None => format!("{reason} (no upstream record: config unknown)"),
    };
    let mut f = sweepkit::records::failure(
        "loadgen",
        plan.started,
        up.config.clone(),
        Stage::Bench,
        kind,
        reason,
        up.raw.clone(),
    );
    f.exit_code = Some(match kind {
        FailureKind::Unauthorized => exit::AUTH_REFUSED,
        _ => exit::ALL_FAILED,
    } as i32);
    f
}
