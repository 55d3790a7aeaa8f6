//! llm-sim: a labelled stand-in LLM inference server. It binds at once,
//! stays closed while "loading", warms up, then serves OpenAI-style
//! completions timed by a speculative-decoding performance model.

mod adaptive;
mod api;
mod cli;
mod draft_depth;
mod dynamic_sd;
mod engine;
pub mod flexible;
mod generation;
mod info;
mod metrics;
mod model;
mod native;
mod noise;
mod prefix_cache;
mod reply;
mod resolve;
mod routes;
mod server;
mod state;
mod stream;
mod timer;
mod tokenize;
mod wire;

use std::io::{BufRead, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use socket2::{Domain, Protocol, Socket, Type};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};

pub use cli::{Args, Mode, Personality};
pub use model::Model;
use resolve::{Failure, Resolved};

/// Listen backlog: room for loadgen's 1024 simultaneous connects.
const BACKLOG: i32 = 4096;

/// Run llm-sim: print the bound line on `stdout`, then serve until a signal
/// or a simulated crash ends the process. `stdin` is not read.
pub fn run(args: Args, _stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    args.validate()?;
    // The real server's own argparse rejects these before anything starts.
    let spec = match resolve::resolve(&args) {
        Err(Failure::Usage(lines)) => {
            for l in &lines {
                sweepkit::diag::verbatim(l);
            }
            let why = "flags the imitated server's argparse rejects (lines above; simulated)";
            return Err(Exit::new(exit::USAGE, anyhow!(why)));
        }
        r => r,
    };
    let addr = resolve(&args.host, args.port).code(exit::USAGE)?;
    let socket = bind(addr).with_context(|| format!("binding {addr}"))?;
    let port = socket
        .local_addr()?
        .as_socket()
        .map(|a| a.port())
        .unwrap_or(args.port);
    let bound = serde_json::json!({
        "event": "bound", "host": args.host, "port": port,
        "pid": std::process::id(), "simulated": true,
    });
    writeln!(stdout, "{bound}")?;
    stdout.flush()?;

    let seed = args.seed.unwrap_or_else(clock_seed);
    sweepkit::diag::verbatim(&format!(
        "llm-sim: SIMULATED {:?} server (no model runs): model {:?}, port {port}, seed {seed}",
        args.personality, args.model_name
    ));
    let mut args = args;
    if args.noise > 0.0 {
        let start = match &args.noise_counter {
            Some(f) => {
                noise::next_start(f).with_context(|| format!("--noise-counter {}", f.display()))?
            }
            None => 0,
        };
        let f = noise::speed_factor(args.noise, seed, start);
        sweepkit::diag::verbatim(&format!(
            "llm-sim: --noise: start {start} runs at {f:.4} x the modelled speed"
        ));
        noise::apply(&mut args, f);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(lifecycle(args, spec, socket, seed, port))
}

fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("--host {host}"))?
        .next()
        .ok_or_else(|| anyhow!("--host {host}: no address"))
}

/// Bind without listening: connects are refused until `listen`.
fn bind(addr: SocketAddr) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    Ok(s)
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

async fn lifecycle(
    args: Args,
    spec: Result<Resolved, Failure>,
    socket: Socket,
    seed: u64,
    port: u16,
) -> Result<(), Exit> {
    let loading = Arc::new(AtomicBool::new(true));
    let lose_first = args.personality == Personality::Vllm;
    signals::install(args.ignore_sigterm, lose_first.then(|| loading.clone()));
    if args.personality == Personality::LlamaCpp {
        // llama-server listens at once and answers 503 while loading.
        return serve_now(args, spec, socket, seed, port, loading).await;
    }
    // vLLM's API server binds only once its engine is built: its warm-up
    // happens behind a closed port too.
    let closed = match args.personality {
        Personality::Vllm => args.load_time + args.warmup_time,
        _ => args.load_time,
    };
    sweepkit::diag::verbatim(&format!(
        "llm-sim: loading simulated weights for {closed:?} (port closed)"
    ));
    tokio::time::sleep(closed).await;
    let spec = loaded(&args, spec);
    let (state, listener) = start(args, spec, socket, seed, port)?;
    let ready_now = state.personality == Personality::Vllm;
    tokio::spawn(warm_up(state.clone(), loading, ready_now));
    server::serve(listener, state).await;
    Ok(())
}

async fn serve_now(
    args: Args,
    spec: Result<Resolved, Failure>,
    socket: Socket,
    seed: u64,
    port: u16,
    loading: Arc<AtomicBool>,
) -> Result<(), Exit> {
    let spec = spec.unwrap_or_else(|f| fail(&f));
    let (state, listener) = start(args, spec, socket, seed, port)?;
    let st = state.clone();
    tokio::spawn(async move {
        let a = &st.args;
        tokio::time::sleep(a.load_time + a.warmup_time).await;
        check_load(a, &st.spec);
        warm_up(st, loading, true).await;
    });
    server::serve(listener, state).await;
    Ok(())
}

/// The end of loading: the start-up failures and simulated OOMs.
fn loaded(args: &Args, spec: Result<Resolved, Failure>) -> Resolved {
    let spec = spec.unwrap_or_else(|f| fail(&f));
    check_load(args, &spec);
    spec
}

fn fail(f: &Failure) -> ! {
    match f {
        Failure::Start(lines) => state::die(lines, "start-up argument check", 1),
        Failure::Usage(lines) => state::die(lines, "argparse", exit::USAGE as i32),
    }
}

fn check_load(args: &Args, spec: &Resolved) {
    let model = Model::from_args(args, spec.steps).reserving(spec.kv_steps());
    if args.crash_on_load {
        state::crash(state::OOM_LINE, "--crash-on-load");
    }
    if let Some(why) = model.load_oom() {
        state::crash(
            state::OOM_LINE,
            &format!("speculative KV does not fit: {why}"),
        );
    }
}

/// Listen, and build the shared state around the listener.
fn start(
    args: Args,
    spec: Resolved,
    socket: Socket,
    seed: u64,
    port: u16,
) -> Result<(Arc<state::State>, tokio::net::TcpListener), Exit> {
    for w in &spec.warnings {
        sweepkit::diag::verbatim(&format!(
            "llm-sim: warning (as the real server logs it): {w}"
        ));
    }
    for n in &spec.notes {
        sweepkit::diag::verbatim(&format!(
            "llm-sim: note (llm-sim's own; the real server says nothing): {n}"
        ));
    }
    socket.listen(BACKLOG).context("listen")?;
    socket.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(socket.into()).context("listener")?;
    Ok((
        Arc::new(state::State::new(args, spec, seed, port)),
        listener,
    ))
}

/// Warm up (SGLang: /health 503 meanwhile), then ready; then the timed
/// crash fault.
async fn warm_up(st: Arc<state::State>, loading: Arc<AtomicBool>, now: bool) {
    if !now {
        sweepkit::diag::verbatim(&format!(
            "llm-sim: listening on port {}; warming up for {:?} (/health 503)",
            st.port, st.args.warmup_time
        ));
        tokio::time::sleep(st.args.warmup_time).await;
        if let Some(lines) = &st.spec.warmup_failure {
            state::die(lines, "the warm-up request's first draft", 1);
        }
    }
    st.ready.store(true, Relaxed);
    loading.store(false, Relaxed);
    sweepkit::diag::verbatim(&format!(
        "llm-sim: ready (port {}); SIMULATED, not a real model",
        st.port
    ));
    if let Some(after) = st.args.crash_after {
        tokio::time::sleep(after).await;
        state::crash(state::CRASH_LINE, "--crash-after");
    }
}

mod signals {
    //! SIGTERM/SIGINT handling, including the simulated hung shutdown.
    use super::Duration;
    use tokio::signal::unix::{signal, SignalKind};

    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;

    /// `lose_first`: vLLM's CPU build loses a SIGTERM that arrives while it
    /// loads (issue 13: it came up anyway, or its API server and engine
    /// deadlocked); a second SIGTERM ends it. The flag is true while loading.
    pub fn install(ignore: Option<Duration>, lose_first: Option<Arc<AtomicBool>>) {
        tokio::spawn(async move {
            let Ok(mut int) = signal(SignalKind::interrupt()) else {
                return;
            };
            int.recv().await;
            sweepkit::diag::verbatim("llm-sim: received SIGINT, exiting");
            std::process::exit(0);
        });
        tokio::spawn(async move {
            let Ok(mut term) = signal(SignalKind::terminate()) else {
                return;
            };
            term.recv().await;
            if lose_first.is_some_and(|loading| loading.load(Relaxed)) {
                sweepkit::diag::verbatim(
                    "llm-sim: received SIGTERM while loading; lost, as on vLLM's CPU build \
                     (simulated; a second SIGTERM ends it)",
                );
                term.recv().await;
                sweepkit::diag::verbatim("llm-sim: received a second SIGTERM, exiting");
                std::process::exit(0);
            }
            let Some(d) = ignore else {
                sweepkit::diag::verbatim("llm-sim: received SIGTERM, exiting");
                std::process::exit(0);
            };
            sweepkit::diag::verbatim(&format!(
                "llm-sim: received SIGTERM; ignoring it for {} (--ignore-sigterm; \
                 simulated hung shutdown, SIGKILL ends it sooner)",
                humantime::format_duration(d)
            ));
            tokio::spawn(async move {
                while term.recv().await.is_some() {
                    sweepkit::diag::verbatim("llm-sim: received SIGTERM again; still ignoring it");
                }
            });
            tokio::time::sleep(d).await;
            sweepkit::diag::verbatim("llm-sim: exiting after ignoring SIGTERM");
            std::process::exit(0);
        });
    }
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);

    #[test]
    fn help_lines_fit_79_columns() {
        use clap::CommandFactory;
        let help = super::Args::command().render_long_help().to_string();
        for line in help.lines() {
            assert!(line.chars().count() <= 79, "too long: {line}");
        }
    }
}
