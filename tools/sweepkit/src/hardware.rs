//! The hardware fingerprint of the machine a server runs on: one far-side
//! command through the transport (local, exec prefix, SSH) lists the GPUs
//! (`nvidia-smi`, when installed), the CPU model and count and the host
//! name; its output is parsed here into a `HostInfo`.

use std::time::Duration;

use crate::records::{Gpu, HostInfo};
use crate::transport::{Transport, TransportError};

/// Why the far side's hardware was not read (a missing `nvidia-smi` is
/// not one): `via` names the transport.
#[derive(Debug, thiserror::Error)]
pub enum HardwareError {
    #[error("via {via}: {err}")]
    Transport { via: String, err: TransportError },
    /// The script did not run: its exit status (`?` for a signal) and its
    /// first line of stderr.
    #[error("via {via}: exit {status}: {why}")]
    Script {
        via: String,
        status: String,
        why: String,
    },
}

/// A line of `nvidia-smi` output that is no GPU of its CSV (an error
/// message instead).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a GPU line of nvidia-smi: {0}")]
pub struct NotGpuLine(pub String);

/// The far-side script. A constant: no value of ours is spliced into it,
/// so nothing can be injected (the transport quotes it as one word).
/// Each output line is tagged, so a message from a tool cannot pass for
/// data. `nvidia-smi` absent is `gpu-status: absent`, not an error.
pub const SCRIPT: &str = r#"printf 'host: %s\n' "$(uname -n 2>/dev/null)"
if command -v nvidia-smi >/dev/null 2>&1; then
  o=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1)
  printf 'gpu-status: %s\n' "$?"
  printf '%s\n' "$o" | while IFS= read -r l; do printf 'gpu: %s\n' "$l"; done
else
  printf 'gpu-status: absent\n'
fi
printf 'cpu-model: %s\n' "$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2-)"
printf 'cpu-count: %s\n' "$(grep -c '^processor' /proc/cpuinfo 2>/dev/null)"
"#;

/// How long the far side may take (nvidia-smi wakes every GPU: ~1 s on 8).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The argv that runs `SCRIPT` on the far side.
pub fn argv() -> Vec<String> {
    vec!["sh".into(), "-c".into(), SCRIPT.into()]
}

/// `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader` lines
/// (`NVIDIA H200, 143771 MiB`) as GPUs. A line without a comma or with an
/// unreadable memory keeps its name; blank lines are skipped. `Err` with
/// the first line that is no GPU (an error message instead).
pub fn parse_nvidia_smi(text: &str) -> Result<Vec<Gpu>, NotGpuLine> {
    let mut gpus = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        // The name may hold a comma in principle; memory is the last field.
        let Some((name, mem)) = line.rsplit_once(',') else {
            return Err(NotGpuLine(line.to_string()));
        };
        let mem = mem.trim();
        let memory_mib = mem
            .strip_suffix("MiB")
            .and_then(|n| n.trim().parse::<u64>().ok());
        if memory_mib.is_none() && !mem.starts_with('[') {
            // `[N/A]` is a real answer (some MIG setups); anything else
            // after the comma is not nvidia-smi's CSV.
            return Err(NotGpuLine(line.to_string()));
        }
        gpus.push(Gpu {
            name: name.trim().to_string(),
            memory_mib,
        });
    }
    Ok(gpus)
}

/// Parse `SCRIPT`'s output. `name` and `exec_prefix` say how the far side
/// was reached; they are not read from it.
pub fn parse(out: &str, name: &str, exec_prefix: Option<String>) -> HostInfo {
    let mut h = HostInfo {
        name: name.to_string(),
        exec_prefix,
        ..HostInfo::default()
    };
    let mut status = None;
    let mut gpu_lines = String::new();
    for line in out.lines() {
        let Some((tag, val)) = line.split_once(": ").or_else(|| line.split_once(':')) else {
            continue;
        };
        let val = val.trim();
        match tag {
            "host" if !val.is_empty() => h.hostname = Some(val.to_string()),
            "gpu-status" => status = Some(val.to_string()),
            "gpu" => {
                gpu_lines.push_str(val);
                gpu_lines.push('\n');
            }
            "cpu-model" if !val.is_empty() => h.cpu_model = Some(squash(val)),
            "cpu-count" => h.cpu_count = val.parse().ok().filter(|&n| n > 0),
            _ => {}
        }
    }
    match status.as_deref() {
        None | Some("absent") => {}
        Some(s) => match parse_nvidia_smi(&gpu_lines) {
            Ok(g) if s == "0" => h.gpus = g,
            Ok(_) | Err(_) => {
                let first = gpu_lines.lines().next().unwrap_or("").trim();
                h.gpu_error = Some(format!("nvidia-smi exit {s}: {first}"));
            }
        },
    }
    h.fingerprint = fingerprint(&h);
    h
}

/// Runs of blanks in a CPU model collapse to one (`/proc/cpuinfo` pads).
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The hardware in one comparable line: GPUs grouped by model and memory
/// in first-seen order, then the CPU, e.g. `8x NVIDIA H200 (143771 MiB);
/// 192x AMD EPYC 9654`. `no GPU` when none was listed.
pub fn fingerprint(h: &HostInfo) -> String {
    let mut groups: Vec<(&Gpu, usize)> = Vec::new();
    for g in &h.gpus {
        match groups.iter_mut().find(|(x, _)| *x == g) {
            Some((_, n)) => *n += 1,
            None => groups.push((g, 1)),
        }
    }
    let gpu = if groups.is_empty() {
        "no GPU".to_string()
    } else {
        let parts: Vec<String> = groups
            .iter()
            .map(|(g, n)| match g.memory_mib {
                Some(m) => format!("{n}x {} ({m} MiB)", g.name),
                None => format!("{n}x {}", g.name),
            })
            .collect();
        parts.join(" + ")
    };
    let cpu = match (&h.cpu_model, h.cpu_count) {
        (Some(m), Some(n)) => format!("{n}x {m}"),
        (Some(m), None) => m.clone(),
        (None, Some(n)) => format!("{n}x unknown CPU"),
        (None, None) => "unknown CPU".to_string(),
    };
    format!("{gpu}; {cpu}")
}

/// Read the far side's hardware once. `Err` says why (the transport
/// failed, or the script did not run); a missing `nvidia-smi` is not one.
pub fn read(
    t: &dyn Transport,
    name: &str,
    exec_prefix: Option<String>,
) -> Result<HostInfo, HardwareError> {
    let o = t
        .run_idempotent(&argv(), None, TIMEOUT)
        .map_err(|err| HardwareError::Transport {
            via: t.describe(),
            err,
        })?;
    let out = o.stdout_str();
    if !o.success() || !out.contains("gpu-status:") {
        let err = o.stderr_str();
        let why = err.lines().next().unwrap_or("no output");
        return Err(HardwareError::Script {
            via: t.describe(),
            status: o.status.map_or("?".into(), |s| s.to_string()),
            why: why.to_string(),
        });
    }
    Ok(parse(&out, name, exec_prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "cpu-model:  AMD EPYC 9654   96-Core Processor\ncpu-count: 192\n";

    fn out(gpu: &str) -> String {
        format!("host: gpu1\n{gpu}{CPU}")
    }

    #[test]
    fn no_gpu_when_nvidia_smi_is_absent() {
        let h = parse(&out("gpu-status: absent\n"), "localhost", None);
        assert!(h.gpus.is_empty());
        assert_eq!(h.gpu_error, None);
        assert_eq!(h.hostname.as_deref(), Some("gpu1"));
        assert_eq!(
            h.cpu_model.as_deref(),
            Some("AMD EPYC 9654 96-Core Processor")
        );
        assert_eq!(h.cpu_count, Some(192));
        assert_eq!(
            h.fingerprint,
            "no GPU; 192x AMD EPYC 9654 96-Core Processor"
        );
    }

    #[test]
    fn zero_gpus_listed_is_no_gpu_without_error() {
        // nvidia-smi present, exit 0, nothing listed (every GPU hidden).
        let h = parse(&out("gpu-status: 0\ngpu: \n"), "localhost", None);
        assert!(h.gpus.is_empty());
        assert_eq!(h.gpu_error, None);
        assert!(h.fingerprint.starts_with("no GPU; "), "{}", h.fingerprint);
    }

    #[test]
    fn one_gpu() {
        let h = parse(
            &out("gpu-status: 0\ngpu: NVIDIA H200, 143771 MiB\n"),
            "root@gpu1",
            Some("pct exec 129 --".into()),
        );
        assert_eq!(
            h.gpus,
            [Gpu {
                name: "NVIDIA H200".into(),
                memory_mib: Some(143771)
            }]
        );
        assert_eq!(h.name, "root@gpu1");
        assert_eq!(h.exec_prefix.as_deref(), Some("pct exec 129 --"));
        assert!(h
            .fingerprint
            .starts_with("1x NVIDIA H200 (143771 MiB); 192x AMD"));
    }

    #[test]
    fn eight_gpus_group_and_mixed_models_stay_apart() {
        let eight: String = (0..8)
            .map(|_| "gpu: NVIDIA A100-SXM4-80GB, 81920 MiB\n")
            .collect();
        let h = parse(&out(&format!("gpu-status: 0\n{eight}")), "h", None);
        assert_eq!(h.gpus.len(), 8);
        assert!(
            h.fingerprint
                .starts_with("8x NVIDIA A100-SXM4-80GB (81920 MiB); "),
            "{}",
            h.fingerprint
        );
        let mixed = "gpu-status: 0\ngpu: NVIDIA L4, 23034 MiB\ngpu: NVIDIA T4, [N/A]\n";
        let h = parse(&out(mixed), "h", None);
        assert_eq!(h.gpus[1].memory_mib, None);
        assert!(h
            .fingerprint
            .starts_with("1x NVIDIA L4 (23034 MiB) + 1x NVIDIA T4; "));
    }

    #[test]
    fn a_failing_nvidia_smi_is_recorded_not_fatal() {
        let msg = "gpu-status: 9\ngpu: NVIDIA-SMI has failed because it couldn't \
                   communicate with the NVIDIA driver.\n";
        let h = parse(&out(msg), "h", None);
        assert!(h.gpus.is_empty());
        let e = h.gpu_error.unwrap();
        assert!(
            e.starts_with("nvidia-smi exit 9: NVIDIA-SMI has failed"),
            "{e}"
        );
        // With the driver loaded and no GPU, nvidia-smi says "No devices
        // were found" and exits 6: no GPU, and the fingerprint says so.
        let h = parse(
            &out("gpu-status: 6\ngpu: No devices were found\n"),
            "h",
            None,
        );
        assert!(h.gpus.is_empty());
        assert!(h.fingerprint.starts_with("no GPU; "), "{}", h.fingerprint);
        assert_eq!(
            h.gpu_error.as_deref(),
            Some("nvidia-smi exit 6: No devices were found")
        );
        // Exit 0 with something that is not the CSV is an error too.
        let h = parse(
            &out("gpu-status: 0\ngpu: No devices were found\n"),
            "h",
            None,
        );
        assert!(h.gpu_error.is_some());
    }

    #[test]
    fn nvidia_smi_csv_lines() {
        assert_eq!(parse_nvidia_smi("").unwrap(), []);
        let g = parse_nvidia_smi("NVIDIA H100 80GB HBM3, 81559 MiB\n\n").unwrap();
        assert_eq!(g[0].name, "NVIDIA H100 80GB HBM3");
        assert!(parse_nvidia_smi("command not found").is_err());
        assert!(parse_nvidia_smi("a, b").is_err());
    }

    #[test]
    fn the_script_runs_here_and_the_missing_binary_is_absent() {
        // A PATH holding only what the script needs: no nvidia-smi, for
        // real, whatever this machine has installed.
        let dir = std::env::temp_dir().join(format!("hw-nosmi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["sh", "uname", "grep", "cut"] {
            let found = std::env::var("PATH")
                .unwrap_or_default()
                .split(':')
                .map(|d| std::path::Path::new(d).join(tool))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("{tool} not on PATH"));
            let _ = std::fs::remove_file(dir.join(tool));
            std::os::unix::fs::symlink(found, dir.join(tool)).unwrap();
        }
        let t = crate::transport::Local::with_prefix(vec![
            "env".into(),
            format!("PATH={}", dir.display()),
        ]);
        let h = read(&t, "localhost", None).unwrap();
        assert!(h.gpus.is_empty() && h.gpu_error.is_none(), "{h:?}");
        assert!(h.cpu_count.unwrap_or(0) >= 1, "{h:?}");
        assert!(h.hostname.is_some(), "{h:?}");
        assert!(h.fingerprint.starts_with("no GPU; "), "{h:?}");
        std::fs::remove_dir_all(&dir).unwrap();
        // A prefix that cannot run at all is an error, not a panic.
        let bad = crate::transport::Local::with_prefix(vec!["/nonexistent/prefix".into()]);
        assert!(read(&bad, "localhost", None).is_err());
    }
}
