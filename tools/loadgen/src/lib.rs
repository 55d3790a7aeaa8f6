//! loadgen: streaming load against an OpenAI-compatible server at several
//! concurrency levels or arrival rates, one bench record per level.
//!
//! Design: hyper HTTP/1.1 connections on one tokio event loop (one thread
//! by default), each connection driven by the task that uses it, with
//! timestamps taken when the socket read returned; an SSE line splitter
//! without a line-length cap; statistics in a pure module. See `man
//! loadgen` for every metric's definition.
//!
//! Two HTTP clients, on purpose. The load runs on hyper (`client.rs`): it
//! owns each connection, so a request's timestamps come from the socket
//! read that carried its bytes (kernel receive stamps, `sweepkit::rxstamp`)
//! and thousands of streams share one thread. Everything outside the load
//! (`server.rs`: model list, server info, `/tokenize`, `/metrics`) is a
//! few blocking calls with short timeouts on ureq, the client wait-ready
//! already uses (and llm-sim's tests: the workspace builds it once), on a
//! separate unpooled agent that never rides a load connection. Moving the probes to
//! hyper would put an event loop under code that runs before and between
//! levels for no gain; moving the load to ureq would cost a thread per
//! stream and the socket-level timestamps.

pub mod body;
pub mod capacity;
pub mod classify;
pub mod cli;
pub mod client;
pub mod generate;
pub mod level;
pub mod measure;
pub mod metrics;
pub mod output;
pub mod per_request;
pub mod plan;
pub mod prompts;
pub mod record;
pub mod replay;
pub mod reply_text;
pub mod run_capacity;
pub mod run_level;
pub mod sched_slice;
pub mod scrape;
pub mod server;
pub mod server_death;
pub mod session;
pub mod session_chat;
pub mod session_plan;
pub mod session_run;
pub mod session_stats;
pub mod setup;
pub mod speculative;
pub mod sse;
pub mod stability;
pub mod stats;
pub mod throughput;
pub mod trace_prompts;
pub mod upstream_record;
pub mod url_check;

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context as _;
pub use cli::Args;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Record;

/// Set by the Ctrl-C handler; ends the current level.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Install the Ctrl-C/SIGTERM handler (main calls this once).
pub fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            // Second Ctrl-C: the user means it.
            std::process::exit(exit::INTERRUPTED as i32);
        }
    });
}

/// Run loadgen. `stdin` is None when it is a terminal (no upstream record).
pub fn run(args: Args, stdin: Option<impl BufRead>, stdout: impl Write) -> Result<(), Exit> {
    run_with(args, stdin, stdout, &INTERRUPTED)
}

/// `run` with an explicit interrupt flag (tests).
pub fn run_with(
    args: Args,
    stdin: Option<impl BufRead>,
    stdout: impl Write,
    interrupted: &AtomicBool,
) -> Result<(), Exit> {
    let up = match (args.no_upstream, stdin) {
        (false, Some(r)) => upstream_record::read(r)?,
        _ => upstream_record::Upstream::default(),
    };
    let mut sink = output::Sink::new(stdout, args.format);
    // Run for a config (--pipeline-config) with no record from wait-ready:
    // no load is sent, and the failure keeps the config (issue 21).
    if let (None, None, false, Some(config)) = (
        &up.raw,
        &up.failure,
        args.no_upstream,
        args.pipeline.config(),
    ) {
        let e = sweepkit::upstream_input::missing(
            "loadgen",
            std::time::SystemTime::now(),
            sweepkit::records::Stage::Ready,
            config,
            &mut sink.out,
        );
        sink.finish().context("writing stdout")?;
        return Err(e);
    }
    if let Some(raw) = &up.failure {
        return Err(sweepkit::upstream_input::pass_through(
            "loadgen",
            raw,
            &mut sink.out,
        ));
    }
    let plan = plan::Plan::from_args(&args, &up)?;
    let ctx = match setup::connect(&args, &plan, &up) {
        Ok(c) => c,
        Err(setup::ConnectError::Unreachable(reason)) => {
            let kind = sweepkit::FailureKind::Unreachable;
            return Err(not_connected(&plan, &up, kind, reason, &mut sink));
        }
        Err(setup::ConnectError::Unauthorized(reason)) => {
            let kind = sweepkit::FailureKind::Unauthorized;
            return Err(not_connected(&plan, &up, kind, reason, &mut sink));
        }
        Err(setup::ConnectError::Other(e)) => return Err(e),
    };
    let ctx = Arc::new(ctx);
    let result = run_level::run_all(&plan, &ctx, &up, &mut sink, interrupted);
    sink.finish().context("writing stdout")?;
    result
}

/// No load was sent: write the failure record of `kind` and end with its
/// exit code (30, or 15 for a key the server wants).
fn not_connected<W: Write>(
    plan: &plan::Plan,
    up: &upstream_record::Upstream,
    kind: sweepkit::FailureKind,
    reason: String,
    sink: &mut output::Sink<W>,
) -> Exit {
    let rec = setup::failure_record(plan, up, kind, &reason);
    let code = rec.exit_code.map_or(exit::ALL_FAILED, |c| c as u8);
    let written = sink
        .record(&Record::Failure(rec))
        .and_then(|()| sink.finish())
        .context("writing stdout");
    match written {
        Ok(()) => Exit::new(code, anyhow::anyhow!("{reason}")),
        Err(e) => e.into(),
    }
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);
}
