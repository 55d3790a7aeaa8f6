//! The record names where the server ran and on what: the host (SSH
//! destination or localhost, exec prefix) and its hardware, read once per
//! run through the transport. A fake `nvidia-smi` behind an exec prefix
//! proves the GPU path on a machine without GPUs; llm-sim is the server.

mod common;

use std::path::PathBuf;

use common::{run_ssh, run_timed, wr, LoggedSim};
use serde_json::Value;
use testkit::sshd::Sshd;
use testkit::Sim;

/// An exec prefix whose PATH finds a fake `nvidia-smi` first: it prints
/// `body` for exactly the query wait-ready makes (exit `code`), and exits
/// 2 on any other arguments.
fn fake_smi(tag: &str, body: &str, code: i32) -> (PathBuf, String) {
    let dir = testkit::temp_dir(tag);
    let smi = dir.join("nvidia-smi");
    std::fs::write(
        &smi,
        format!(
            "#!/bin/sh\n[ \"$*\" = '--query-gpu=name,memory.total --format=csv,noheader' ] \
             || {{ echo \"unexpected args: $*\" >&2; exit 2; }}\nprintf '{body}'\nexit {code}\n"
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x", smi.to_str().unwrap()])
        .status()
        .unwrap();
    let prefix = format!("env PATH={}:/usr/local/bin:/usr/bin:/bin", dir.display());
    (dir, prefix)
}

fn host_via(sim: &Sim, prefix: &str) -> Value {
    let (r, _) = run_timed(
        wr(&[
            "--server",
            "llm-sim",
            "--exec-prefix",
            prefix,
            "--no-stdin",
            "--timeout",
            "20s",
            &sim.base_url(),
        ]),
        "",
    );
    r.expect_code(0);
    r.one()["server"]["host"].clone()
}

/// No GPU and no error: nvidia-smi absent, or listing none.
fn assert_no_gpu(h: &Value) {
    assert!(
        h.get("gpus").is_none() && h.get("gpu_error").is_none(),
        "{h}"
    );
    assert!(h["fingerprint"].as_str().unwrap().starts_with("no GPU; "));
}

fn cpu_count_here() -> u64 {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    info.lines().filter(|l| l.starts_with("processor")).count() as u64
}

#[test]
fn local_ready_record_names_localhost_and_its_cpu() {
    let sim = Sim::start(&[]);
    let (r, _) = run_timed(
        wr(&["--server", "llm-sim", "--no-stdin", &sim.base_url()]),
        "",
    );
    let rec = r.expect_one(0);
    let h = &rec["server"]["host"];
    assert_eq!(h["name"], "localhost", "{rec}");
    assert!(h.get("exec_prefix").is_none(), "{h}");
    let uname = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    let uname = String::from_utf8_lossy(&uname.stdout).trim().to_string();
    assert_eq!(h["hostname"], uname.as_str());
    assert_eq!(h["cpu_count"], cpu_count_here(), "{h}");
    assert!(!h["fingerprint"].as_str().unwrap().is_empty(), "{h}");
    // The server version sits beside it, as before.
    assert!(rec["server"]["version"].is_string(), "{rec}");
}

#[test]
fn fake_nvidia_smi_behind_the_exec_prefix_gives_the_gpus() {
    let sim = Sim::start(&[]);
    let eight = "NVIDIA H200, 143771 MiB\\n".repeat(8);
    let (dir, prefix) = fake_smi("smi-8", &eight, 0);
    let h = host_via(&sim, &prefix);
    assert_eq!(h["name"], "localhost");
    assert_eq!(h["exec_prefix"], prefix.as_str(), "{h}");
    assert_eq!(h["gpus"].as_array().unwrap().len(), 8, "{h}");
    assert_eq!(h["gpus"][0]["name"], "NVIDIA H200");
    assert_eq!(h["gpus"][7]["memory_mib"], 143771);
    let fp = h["fingerprint"].as_str().unwrap();
    assert!(fp.starts_with("8x NVIDIA H200 (143771 MiB); "), "{fp}");
    assert_eq!(h["cpu_count"], cpu_count_here());
    let _ = std::fs::remove_dir_all(dir);

    let (dir, prefix) = fake_smi("smi-1", "NVIDIA L4, 23034 MiB\\n", 0);
    let h = host_via(&sim, &prefix);
    assert!(h["fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("1x NVIDIA L4 (23034 MiB); "));
    let _ = std::fs::remove_dir_all(dir);

    // Installed but listing none: no GPU, no error.
    let (dir, prefix) = fake_smi("smi-0", "", 0);
    let h = host_via(&sim, &prefix);
    assert_no_gpu(&h);
    let _ = std::fs::remove_dir_all(dir);

    // Installed but failing (no driver): recorded, and still ready.
    let msg = "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\\n";
    let (dir, prefix) = fake_smi("smi-fail", msg, 9);
    let h = host_via(&sim, &prefix);
    let e = h["gpu_error"].as_str().unwrap();
    assert!(
        e.starts_with("nvidia-smi exit 9: NVIDIA-SMI has failed"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_prefix_without_nvidia_smi_is_no_gpu() {
    let sim = Sim::start(&[]);
    let dir = testkit::temp_dir("smi-none");
    // Only what the far-side script needs, so nvidia-smi is surely absent.
    for tool in ["sh", "uname", "grep", "cut"] {
        let p = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| PathBuf::from(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} not in /usr/bin or /bin"));
        std::os::unix::fs::symlink(p, dir.join(tool)).unwrap();
    }
    let prefix = format!("env PATH={}", dir.display());
    let h = host_via(&sim, &prefix);
    assert_no_gpu(&h);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_crash_at_load_failure_record_names_the_host() {
    let sim = LoggedSim::start("hw-crash", &["--crash-on-load", "--load-time", "200ms"]);
    let pid = sim.pid();
    let (r, _) = run_timed(
        wr(&[
            "--pid",
            &pid,
            "--no-stdin",
            "--timeout",
            "20s",
            &sim.base_url(),
        ]),
        "",
    );
    let rec = r.expect_one(10);
    assert_eq!(rec["type"], "failure");
    assert_eq!(rec["host"]["name"], "localhost", "{rec}");
    assert_eq!(rec["host"]["cpu_count"], cpu_count_here());
}

#[test]
fn over_ssh_the_record_names_the_destination() {
    let sshd = Sshd::start().expect("sshd (openssh-server) is needed for this test");
    let sim = Sim::start(&[]);
    let (r, _) = run_ssh(
        &sshd,
        "--server llm-sim --no-stdin --timeout 20s",
        &sim.base_url(),
    );
    let rec = r.expect_one(0);
    let h = &rec["server"]["host"];
    assert_eq!(h["name"], sshd.target().as_str(), "{rec}");
    assert_eq!(h["cpu_count"], cpu_count_here(), "{h}");
    assert!(h["hostname"].is_string(), "{h}");
}
