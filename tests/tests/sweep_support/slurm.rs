//! `sweep --slurm`'s test fixtures: llm-sim under a process spec, the
//! sweep's words, running it against a [`Slurm`] cluster (in the
//! foreground or in its own process group), and reading what its jobs
//! left (records, servers, the jobs' folders).

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::slurm::Slurm;

use super::sim::SimExec;
use super::{dump, SpecFile, SweepArgs};

pub const STEPS: &str = "speculative-num-steps";
pub const MRR: &str = "max-running-requests";

/// llm-sim under a process spec (EAGLE, steps 1, 8 running requests).
pub fn sim_spec(tag: &str) -> (SpecFile, String) {
    SimExec::free()
        .eagle(1)
        .flags("--max-running-requests 8")
        .spec(tag)
}

/// `sweep --slurm` over `spec` at levels 1,2 with few short requests.
pub fn slurm_sweep(spec: &SpecFile, url: &str) -> SweepArgs {
    timed_sweep(spec, url).load(&["-n", "3"])
}

/// The same, each level as long as the test's `--duration` says.
pub fn timed_sweep(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .arg("--slurm")
        .levels("1,2")
        .args(&["--ready-timeout", "60s", "--retries", "1"])
        .load(&["--warmup", "0", "--max-tokens", "8"])
}

/// Run `args` against cluster `s`, killed after `limit` (a hang fails).
pub fn run_on(s: &Slurm, args: &SweepArgs, limit: u64) -> Output {
    let mut c = args.behind(&["timeout", &limit.to_string()]);
    let (k, v) = s.env();
    c.env(k, v);
    c.output().unwrap()
}

/// The sweep's output, its results file and its jobs' output and server
/// logs, for a failing assertion.
pub fn show(out: &Output, spec: &SpecFile) -> String {
    let text = std::fs::read_to_string(spec.results()).unwrap_or_default();
    let mut jobs = String::new();
    let dir = format!("{}.slurm", spec.results().display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|e| [e.path(), e.path().join("server.spec.log")])
        .filter(|p| p.is_file() && !p.ends_with("sweep.sbatch"))
        .collect();
    files.sort();
    for f in files {
        let t = std::fs::read_to_string(&f).unwrap_or_default();
        jobs.push_str(&format!("--- {}\n{t}", f.display()));
    }
    format!("{}\n--- results\n{text}\n{jobs}", dump(out))
}

pub fn slurm_of(r: &Value) -> &Value {
    &r["slurm"]
}

pub fn benches<'a>(recs: &'a [Value], key: &str, v: &str) -> Vec<&'a Value> {
    recs.iter()
        .filter(|r| r["type"] == "bench" && r["config"][key] == v)
        .collect()
}

/// Wait for a sweep from [`spawn_on`] at most `limit`; on a hang, kill
/// it and fail with its stderr and the queue.
pub fn wait_for(s: &Slurm, mut child: std::process::Child, limit: u64, dir: &Path) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(limit) {
            let err = std::fs::read_to_string(dir.join("err")).unwrap_or_default();
            let q = s.out("squeue", &["-h", "-o", "%i %T %R"]);
            super::child::signal_group(&child, "KILL");
            panic!("sweep did not end within {limit} s\n--- stderr\n{err}\n--- squeue\n{q}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    super::child::wait_within(child, Duration::from_secs(1), Some(dir))
}

/// Whether process `pid` runs: a zombie (ended, not yet reaped by the
/// PID 1 that adopted it, which on some machines takes a second) does not.
fn runs(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    !state.is_empty() && !state.starts_with(['Z', 'X'])
}

/// Every job's server stopped: no pid file in the jobs' folder names a
/// running process.
pub fn assert_no_server_left(results: &Path) {
    let dir = format!("{}.slurm", results.display());
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let pidf = e.path().join("server.spec.pid");
        let Ok(pid) = std::fs::read_to_string(&pidf) else {
            continue;
        };
        assert!(
            !runs(pid.trim()),
            "{}: server {} still runs",
            pidf.display(),
            pid.trim()
        );
    }
}

/// Jobs of `results` serving: their folders (`job-ID`) with a port in
/// `env` whose server answers /health, once `n` of them do.
pub fn wait_serving(results: &Path, n: usize, limit: Duration) -> Vec<(String, u16, String)> {
    let dir = format!("{}.slurm", results.display());
    let t0 = Instant::now();
    loop {
        let mut up = Vec::new();
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_prefix("job-").filter(|_| e.path().is_dir()) else {
                continue;
            };
            let env = std::fs::read_to_string(e.path().join("env")).unwrap_or_default();
            let get = |k: &str| {
                env.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}=")).map(String::from))
            };
            let Some(port) = get("port").and_then(|p| p.parse::<u16>().ok()) else {
                continue;
            };
            if testkit::http_get(port, "/health").is_some_and(|(s, _)| s == 200) {
                up.push((id.to_string(), port, get("node").unwrap_or_default()));
            }
        }
        if up.len() >= n {
            return up;
        }
        assert!(
            t0.elapsed() < limit,
            "{n} job(s) not serving after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A sweep in its own process group, its output to files in `dir`.
pub fn spawn_on(s: &Slurm, args: &SweepArgs, dir: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = args.cmd();
    let (k, v) = s.env();
    c.env(k, v).process_group(0);
    super::child::to_files(&mut c, dir);
    c.spawn().unwrap()
}

/// The job steps' tasks of job `job` running now, from /proc: each
/// one's program name, step id and CUDA_VISIBLE_DEVICES. Processes of the
/// batch script itself carry no SLURM_STEP_ID.
pub fn step_tasks(job: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let env: Vec<String> = env
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let get = |k: &str| {
            env.iter()
                .find_map(|w| w.strip_prefix(&format!("{k}=")).map(String::from))
        };
        if get("SLURM_JOB_ID").as_deref() != Some(job) {
            continue;
        }
        let Some(step) = get("SLURM_STEP_ID") else {
            continue;
        };
        let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let gpus = get("CUDA_VISIBLE_DEVICES").unwrap_or_default();
        out.push((name.trim().to_string(), step, gpus));
    }
    out
}
