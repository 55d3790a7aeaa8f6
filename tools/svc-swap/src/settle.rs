//! After a stop, before the start: wait until the port is free and, with
//! `--gpu`, no old PID holds GPU memory. Shared by both managers.

use std::time::{Duration, Instant};

use sweepkit::exit;
use sweepkit::records::StopInfo;
use sweepkit::report::Exit;
use sweepkit::transport::Transport;

use crate::far;
use crate::target::Opts;

fn err(code: u8, msg: String) -> Exit {
    Exit::new(code, anyhow::anyhow!(msg))
}

/// After a stop: wait until `port` is free and, with `--gpu`, no old PID
/// holds GPU memory (skipped with a note when nvidia-smi is absent).
pub fn wait_port_and_gpu(
    t: &dyn Transport,
    port: Option<u16>,
    o: &Opts,
    pids: &[u32],
    info: &mut StopInfo,
) -> Result<(), Exit> {
    let deadline = Instant::now() + o.wait;
    if let Some(port) = port {
        while far::port_listening(t, port)? {
            if Instant::now() >= deadline {
                return Err(err(
                    exit::STOP_FAILED,
                    format!(
                        "port {port} is still in use {:.0}s after the stop",
                        o.wait.as_secs_f64()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    if !o.gpu {
        return Ok(());
    }
    loop {
        let Some(holding) = far::gpu_pids(t)? else {
            info.gpu = Some("skipped: nvidia-smi not found".into());
            return Ok(());
        };
        let ours: Vec<u32> = holding.into_iter().filter(|p| pids.contains(p)).collect();
        if ours.is_empty() {
            info.gpu = Some("freed".into());
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(err(
                exit::STOP_FAILED,
                format!("old PIDs {ours:?} still hold GPU memory"),
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
