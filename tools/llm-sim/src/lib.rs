//! llm-sim: a labelled stand-in LLM inference server. It binds at once,
//! stays closed while "loading", warms up, then serves OpenAI-style
//! completions timed by a speculative-decoding performance model.

mod api;
mod cli;
mod engine;
mod metrics;
mod model;
mod server;
mod state;
mod stream;
mod timer;
mod tokenize;
mod wire;

use std::io::{BufRead, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use socket2::{Domain, Protocol, Socket, Type};
use sweepkit::exit;
use sweepkit::report::{Exit, WithCode};

pub use cli::{Args, Mode};
pub use model::Model;

/// Listen backlog: room for loadgen's 1024 simultaneous connects.
const BACKLOG: i32 = 4096;

/// Run llm-sim: print the bound line on `stdout`, then serve until a signal
/// or a simulated crash ends the process. `stdin` is not read.
pub fn run(args: Args, _stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    args.validate()
        .map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))?;
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
    eprintln!(
        "llm-sim: SIMULATED server (no model runs): model {:?}, port {port}, \
         speculative_num_steps {}, seed {seed}",
        args.model_name, args.speculative_num_steps
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(lifecycle(args, socket, seed, port))
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

async fn lifecycle(args: Args, socket: Socket, seed: u64, port: u16) -> Result<(), Exit> {
    signals::install(args.ignore_sigterm);
    eprintln!(
        "llm-sim: loading simulated weights for {:?}",
        args.load_time
    );
    tokio::time::sleep(args.load_time).await;
    let model = Model::from_args(&args);
    if args.crash_on_load {
        state::crash(state::OOM_LINE, "--crash-on-load");
    }
    if let Some(why) = model.load_oom() {
        state::crash(
            state::OOM_LINE,
            &format!("speculative KV does not fit: {why}"),
        );
    }
    socket.listen(BACKLOG).context("listen")?;
    socket.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(socket.into()).context("listener")?;
    let state = Arc::new(state::State::new(args, seed, port));
    eprintln!(
        "llm-sim: listening on port {port}; warming up for {:?} (/health 503)",
        state.args.warmup_time
    );
    let st = state.clone();
    tokio::spawn(async move {
        tokio::time::sleep(st.args.warmup_time).await;
        st.ready.store(true, Relaxed);
        eprintln!("llm-sim: ready (/health 200); SIMULATED, not a real model");
        if let Some(after) = st.args.crash_after {
            tokio::time::sleep(after).await;
            state::crash(state::CRASH_LINE, "--crash-after");
        }
    });
    server::serve(listener, state).await;
    Ok(())
}

mod signals {
    //! SIGTERM/SIGINT handling, including the simulated hung shutdown.
    use super::Duration;
    use tokio::signal::unix::{signal, SignalKind};

    pub fn install(ignore: Option<Duration>) {
        tokio::spawn(async move {
            let Ok(mut int) = signal(SignalKind::interrupt()) else {
                return;
            };
            int.recv().await;
            eprintln!("llm-sim: received SIGINT, exiting");
            std::process::exit(0);
        });
        tokio::spawn(async move {
            let Ok(mut term) = signal(SignalKind::terminate()) else {
                return;
            };
            term.recv().await;
            let Some(d) = ignore else {
                eprintln!("llm-sim: received SIGTERM, exiting");
                std::process::exit(0);
            };
            eprintln!(
                "llm-sim: received SIGTERM; ignoring it for {} (--ignore-sigterm; \
                 simulated hung shutdown, SIGKILL ends it sooner)",
                humantime::format_duration(d)
            );
            tokio::spawn(async move {
                while term.recv().await.is_some() {
                    eprintln!("llm-sim: received SIGTERM again; still ignoring it");
                }
            });
            tokio::time::sleep(d).await;
            eprintln!("llm-sim: exiting after ignoring SIGTERM");
            std::process::exit(0);
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        super::Args::command().debug_assert();
    }

    #[test]
    fn man_page_up_to_date() {
        use clap::CommandFactory;
        testkit::check_man_page(super::Args::command());
    }

    #[test]
    fn help_lines_fit_79_columns() {
        use clap::CommandFactory;
        let help = super::Args::command().render_long_help().to_string();
        for line in help.lines() {
            assert!(line.chars().count() <= 79, "too long: {line}");
        }
    }
}
