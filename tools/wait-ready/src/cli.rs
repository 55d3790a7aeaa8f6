//! wait-ready's flags (clap derive). Parsing of values lives beside the
//! code that uses them; this file only declares what the user can say.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::time::parse_duration;
use sweepkit::transport_args::TransportArgs;

/// Wait until an inference server is ready, and tell loading from crashed
/// from unreachable.
///
/// Probes every TARGET (http://, https:// or tcp://host:port) until all
/// pass, while watching the server's process, log or systemd unit, so a
/// crash ends the wait at once. Writes a `ready` record (or a `failure`
/// record) as one JSON line on stdout; the reason goes to stderr.
#[derive(Debug, Parser)]
// An option given twice takes the last value: sweep's restore after an
// interrupt adds a shorter --timeout after the stages' own.
#[command(
    name = "wait-ready",
    version,
    about,
    max_term_width = 79,
    args_override_self = true
)]
pub struct Args {
    /// URLs (http://, https://) or tcp://HOST:PORT; all must pass. With
    /// --server, a base URL is completed with the server's health path.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,

    /// Server preset: picks the readiness endpoint and knows its traps.
    #[arg(long, value_enum, value_name = "KIND")]
    pub server: Option<ServerKind>,

    /// With --server sglang: also require /health_generate (one token).
    #[arg(long)]
    pub deep: bool,

    /// Overall time limit (humantime: 90s, 10m); then exit 124.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Limit for one probe (connect plus response) [default: 25s with
    /// --server sglang, whose /health generates a token and may take 20 s;
    /// else 2s]
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub attempt_timeout: Option<Duration>,

    /// First pause between probes; also the pause after any change seen.
    #[arg(long, value_name = "DUR", default_value = "50ms", value_parser = parse_duration)]
    pub interval: Duration,

    /// How the pause grows while nothing changes.
    #[arg(long, value_enum, value_name = "HOW", default_value = "exponential")]
    pub backoff: Backoff,

    /// Cap on the pause between probes.
    #[arg(long, value_name = "DUR", default_value = "100ms", value_parser = parse_duration)]
    pub max_interval: Duration,

    /// Fail fast: a target that never accepted a connection for this long
    /// is unreachable (exit 12), refused ones only with nothing watched
    /// (no --pid, --unit, --log). By default a refused port is a server
    /// still starting, probed until --timeout: exit 12 if it never opened.
    #[arg(long, value_name = "DUR", default_value = "never", value_parser = parse_grace)]
    pub unreachable_after: Duration,

    /// A target whose host name has not resolved for this long is
    /// unreachable (exit 12): a typo, as a rule. Raise it where names appear
    /// late (Compose, Kubernetes); `never` waits until --timeout. Over --ssh
    /// the far side resolves names: one it cannot resolve reads as refused.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_grace)]
    pub unresolved_after: Duration,

    /// A listening server that answers HTTP 404 or 405 (no such path) for
    /// this long is probed at the wrong path (exit 14): a loading server
    /// refuses or answers 503. `never` waits until --timeout.
    #[arg(long, value_name = "DUR", default_value = "3s", value_parser = parse_grace)]
    pub not_found_after: Duration,

    /// Accepted HTTP statuses: codes, ranges and classes (200,204 2xx
    /// 200-399). Default 2xx.
    #[arg(long, value_name = "LIST", default_value = "2xx")]
    pub expect_status: String,

    /// Require a JSON value in the body: `.status=ok`, `.data[0].id`
    /// (PATH alone: must exist). Repeatable.
    #[arg(long, value_name = "PATH=VALUE")]
    pub expect_json: Vec<String>,

    /// Require the body to match this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub expect_body: Option<String>,

    /// HTTP method of the probes.
    #[arg(long, value_name = "METHOD", default_value = "GET")]
    pub method: String,

    /// Extra request header `Name: value`. Repeatable.
    #[arg(long, value_name = "HEADER")]
    pub header: Vec<String>,

    /// Request body of the probes.
    #[arg(long, value_name = "TEXT")]
    pub body: Option<String>,

    /// Bearer token for the probes; never printed. Prefer the environment
    /// (OPENAI_API_KEY is also read with --server openai).
    #[arg(
        long,
        value_name = "KEY",
        env = "SWEEPKIT_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// Watch this process: its exit ends the wait as crashed (exit 10).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// Watch this log file: fatal lines (OOM, Traceback) end the wait.
    #[arg(long, value_name = "FILE")]
    pub log: Option<String>,

    /// Read --log from this byte offset: where this instance's output
    /// begins [default: the swap record's start.log_offset, else the
    /// file's size when the wait starts]
    #[arg(long, value_name = "BYTES")]
    pub log_offset: Option<u64>,

    /// Extra regular expression for fatal log lines. Repeatable.
    #[arg(long, value_name = "REGEX")]
    pub fatal_regex: Vec<String>,

    /// Watch this systemd unit (failed: crashed; restarts: restart loop).
    #[arg(long, value_name = "NAME")]
    pub unit: Option<String>,

    /// Watch this container (exited: crashed, with its exit code and log
    /// tail; OOMKilled: oom; restarted by its engine: restart loop)
    /// [default: the swap record's container]
    #[arg(long, value_name = "NAME")]
    pub container: Option<String>,

    /// Container engine CLI for --container [default: the swap record's,
    /// else docker when its daemon answers, else podman]
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<sweepkit::engine::Engine>,

    // Where the unit, process and log live (with --ssh, targets are probed
    // through an SSH tunnel too) and the --exec-prefix for commands.
    #[command(flatten)]
    pub transport: TransportArgs,

    /// Once ready, require the live server argument KEY to equal VALUE
    /// (dashes or underscores). Repeatable. Mismatch: exit 13.
    #[arg(long, value_name = "KEY=VALUE")]
    pub expect_config: Vec<String>,

    /// Once ready, require far-side file PATH to have this SHA-256 (the
    /// swap record's copied files are checked too). Mismatch: exit 13
    #[arg(long, value_name = "PATH=SHA256")]
    pub expect_file: Vec<String>,

    /// Wait until the targets fail (server down) instead.
    #[arg(long)]
    pub invert: bool,

    /// Never read an upstream record from stdin.
    #[arg(long)]
    pub no_stdin: bool,

    #[command(flatten)]
    pub pipeline: sweepkit::upstream_input::PipelineArgs,

    /// Write no record on stdout, not even a passed-through failure (the
    /// stderr reason line stays).
    #[arg(short, long)]
    pub quiet: bool,

    /// Print each change of state on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// Command run once ready; its exit status becomes wait-ready's.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Known servers: one enum in sweepkit, which sweep's `--server` names too.
pub use sweepkit::server_kind::ServerKind;

/// The per-probe limit `kind`'s preset needs. SGLang's `/health` and
/// `/health_generate` are one handler that generates a token, polling once
/// a second for up to `SGLANG_HEALTH_CHECK_TIMEOUT` (20 s)
/// (sgl-project/sglang `python/sglang/srt/entrypoints/http_server.py`
/// `health_generate`): 25 s leaves it room to answer.
pub fn attempt_timeout(kind: Option<ServerKind>) -> Duration {
    match kind {
        Some(ServerKind::Sglang) => Duration::from_secs(25),
        _ => Duration::from_secs(2),
    }
}

/// How the pause between probes grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backoff {
    /// Always --interval.
    None,
    /// Grows by --interval each probe.
    Linear,
    /// Grows by half each probe.
    Exponential,
}

/// A flag's value that does not read: a usage error (exit 2).
pub fn usage(msg: impl Into<String>) -> Exit {
    Exit::new(exit::USAGE, anyhow::anyhow!(msg.into()))
}

/// `never`/`off`/`0` disable the unreachable rule (zero: disabled).
fn parse_grace(s: &str) -> Result<Duration, String> {
    match s {
        "never" | "off" | "0" => Ok(Duration::ZERO),
        _ => parse_duration(s),
    }
}
