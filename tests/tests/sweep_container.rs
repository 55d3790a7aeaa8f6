//! scripts/sweep.sh over a server in a real podman container
//! (`--container NAME --engine podman`) and over a podman-compose service
//! (`--compose FILE --service NAME`), llm-sim inside (testkit::podman: the
//! host root as an overlay, host networking, no registry): each measures
//! two values of the speculative flag, checked live by wait-ready
//! --expect-config, and the original command is back and serving at the end;
//! the container sweep once more through the test sshd (the engine CLI on
//! the far side), and a signal mid-config restores the original container;
//! and the whole sweep through the test sshd and an exec prefix, cut by
//! Ctrl-C (SIGINT to its process group) and `--resume`d to the end, with
//! the original container back each time.
//! podman is the engine these sweeps run over; sweep passes --engine
//! through to svc-swap untouched, and svc-swap's own tests run the Docker
//! engine for real (tools/svc-swap/tests/container.rs, testkit::docker).

mod sweep_support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::child::{signal, signal_group, spawn_piped, to_files, wait_within};
use sweep_support::{dump, records, with_config, SimExec, SweepArgs};
use testkit::http_get;
use testkit::podman::{Ctr, Project, SERVICE_KEYS};

const KEY: &str = "speculative-num-steps";

fn sim_argv(port: u16) -> Vec<String> {
    SimExec::local(port)
        .load("10ms")
        .warmup("10ms")
        .eagle(1)
        .argv()
}

/// llm-sim in a podman container `name` on a free port, serving; what a
/// test compares with at the end and a scratch directory.
struct Served {
    c: Ctr,
    port: u16,
    url: String,
    original: String,
    dir: PathBuf,
}

impl Served {
    fn start(name: &str, tag: &str) -> Served {
        Served::start_with(name, tag, &[])
    }

    /// With more llm-sim flags (`--api-key K`: its /server_info then
    /// wants the key, so only /health is waited for here).
    fn start_with(name: &str, tag: &str, extra: &[&str]) -> Served {
        let port = testkit::free_port();
        let mut argv = sim_argv(port);
        argv.extend(extra.iter().map(|w| w.to_string()));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let c = Ctr::run(name, &[], &argv);
        healthy(port);
        let original = c.inspect("{{json .Config.Cmd}}");
        let dir = testkit::temp_dir(tag);
        let url = format!("http://127.0.0.1:{port}");
        Served {
            c,
            port,
            url,
            original,
            dir,
        }
    }

    fn results(&self) -> PathBuf {
        self.dir.join("results.jsonl")
    }

    /// The sweep's words for this container, past `head`, `n` requests a
    /// level.
    fn sweep(&self, head: &[&str], n: &str) -> SweepArgs {
        let res = self.results();
        SweepArgs::new()
            .args(head)
            .args(&["--container", &self.c.name])
            .extend(rest_n(&self.url, &res, n))
    }

    /// The original command is back, running and serving.
    fn assert_restored(&self, out: &Output) {
        assert_eq!(
            self.c.inspect("{{json .Config.Cmd}}"),
            self.original,
            "the original command is back\n{}",
            dump(out)
        );
        assert_eq!(self.c.inspect("{{.State.Status}}"), "running");
        assert_eq!(
            info(self.port)["speculative_num_steps"],
            1,
            "restored, live"
        );
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The test sshd, where podman runs (its gate says why not) and sshd
/// starts.
fn podman_and_sshd() -> Option<testkit::sshd::Sshd> {
    if !testkit::podman::gate() {
        return None;
    }
    testkit::sshd::Sshd::start()
}

/// llm-sim's /server_info once /health is 200.
fn info(port: u16) -> Value {
    healthy(port);
    let (_, b) = http_get(port, "/server_info").unwrap();
    serde_json::from_str(&b).unwrap()
}

fn healthy(port: u16) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if let Some((200, _)) = http_get(port, "/health") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("llm-sim on port {port} never healthy");
}

/// The sweep's options past the target: two values, one small level of
/// `n` requests.
fn rest_n(url: &str, results: &Path, n: &str) -> SweepArgs {
    SweepArgs::new()
        .args(&["--engine", "podman", "--url", url, "--server", "llm-sim"])
        .results(results)
        .param(KEY, "2,3")
        .levels("1")
        .args(&["--expect-config", "--ready-timeout", "60s"])
        .quick(n, "16")
}

/// Both values measured, each by the server that ran it.
fn assert_two_values_measured(results: &std::path::Path, out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(0), "{}", dump(out));
    let recs = records(results);
    for v in ["2", "3"] {
        let b = with_config(&recs, "bench", KEY, v);
        assert_eq!(b.len(), 1, "{KEY}={v}: one bench record\n{}", dump(out));
        assert_eq!(b[0]["counts"]["completed"], 4, "{}", b[0]);
        assert_eq!(b[0]["server"]["simulated"], true);
        assert_eq!(
            b[0]["server"]["args"]["speculative_num_steps"].as_u64(),
            Some(v.parse().unwrap()),
            "the bench ran against the swapped server: {}",
            b[0]
        );
    }
}

#[test]
fn sweep_over_a_podman_container_measures_each_value_and_restores() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Served::start("sweep", "sweep-container");
    let out = s.sweep(&[], "4").output();
    assert_two_values_measured(&s.results(), &out);
    s.assert_restored(&out);
}

/// Regression (issue 37): every container sweep left NAME.sweepkit-prev,
/// a stopped copy of the last swept config with the API key in its
/// command, and the definition file kept the key in clear. A clean sweep
/// now ends with the original container itself back (its ID), nothing
/// kept beside it, and the key in no file of svc-swap's state.
/// A kept winner leaves the user's own original beside it, stopped, and
/// the sweep says so with the two commands that restore or drop it.
#[test]
fn a_kept_winner_says_where_the_original_container_is() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Served::start("sweep-keep", "sweep-container-keep");
    let out = s.sweep(&["--keep-winner"], "4").output();
    assert_two_values_measured(&s.results(), &out);
    assert_ne!(
        s.c.inspect("{{json .Config.Cmd}}"),
        s.original,
        "the winner stays"
    );
    let prev = format!("{}.sweepkit-prev", s.c.name);
    let mut family = s.c.family();
    family.sort();
    assert_eq!(family, [s.c.name.clone(), prev.clone()], "{}", dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "the original container is kept, stopped, as {prev}"
        )) && err.contains(&format!("'podman rm {prev}' drops it")),
        "{err}"
    );
}

#[test]
fn a_clean_sweep_leaves_no_kept_container_and_no_key_on_disk() {
    if !testkit::podman::gate() {
        return;
    }
    let t0 = Instant::now();
    let key = format!("sk-sweep-hctr-{}", std::process::id());
    let s = Served::start_with("sweep-key", "sweep-container-key", &["--api-key", &key]);
    let id = s.c.inspect("{{.Id}}");
    let with_key = SweepArgs::new()
        .args(&["--ready-arg", "--api-key", "--ready-arg", &key])
        .load(&["--api-key", &key]);
    let out = s.sweep(&[], "4").extend(with_key).output();
    assert_two_values_measured(&s.results(), &out);
    assert_eq!(
        s.c.inspect("{{json .Config.Cmd}}"),
        s.original,
        "{}",
        dump(&out)
    );
    assert_eq!(s.c.inspect("{{.Id}}"), id, "the original container itself");
    assert_eq!(s.c.family(), [s.c.name.as_str()], "nothing kept beside it");
    assert_eq!(
        testkit::podman::state_files_holding(&key),
        Vec::<String>::new()
    );
    eprintln!("took {:.1}s", t0.elapsed().as_secs_f64());
}

#[test]
fn sweep_over_a_compose_service_measures_each_value_and_restores() {
    if !testkit::podman::compose_gate() {
        return;
    }
    let port = testkit::free_port();
    let words: Vec<String> = sim_argv(port)
        .iter()
        .map(|w| format!("      - \"{w}\"\n"))
        .collect();
    let text = format!(
        "# hand-written\nservices:\n  sim:\n{SERVICE_KEYS}    command:\n{}",
        words.concat()
    );
    let p = Project::new("sweep", &text);
    p.up();
    info(port);
    let name = p.container("sim");
    let original = Ctr::inspect_of(&name, "{{json .Config.Cmd}}");
    let results = p.dir.join("results.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let file = p.file.display().to_string();
    let out = SweepArgs::new()
        .args(&["--compose", file.as_str(), "--service", "sim"])
        .extend(rest_n(&url, &results, "4"))
        .output();
    assert_two_values_measured(&results, &out);
    assert_eq!(
        Ctr::inspect_of(&name, "{{json .Config.Cmd}}"),
        original,
        "the original command is back\n{}",
        dump(&out)
    );
    assert!(p.text().starts_with("# hand-written\n"), "{}", p.text());
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");
}

#[test]
fn sweep_over_a_container_through_the_test_sshd_restores_it() {
    let Some(sshd) = podman_and_sshd() else {
        return;
    };
    let s = Served::start("sweep-ssh", "sweep-container-ssh");
    let ssh = sshd.client_args();
    let ssh: Vec<&str> = ssh.iter().map(String::as_str).collect();
    let out = s.sweep(&ssh, "4").output();
    let results = s.results();
    assert_two_values_measured(&results, &out);
    let recs = records(&results);
    let b = with_config(&recs, "bench", KEY, "2");
    assert_eq!(
        b[0]["upstream"]["upstream"]["target"]["ssh"],
        sshd.target(),
        "the engine ran on the far side: {}",
        b[0]
    );
    s.assert_restored(&out);
}

#[test]
fn a_signal_mid_config_restores_the_original_container() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Served::start("sweep-term", "sweep-container-term");
    // A level that would run for ages: the signal cuts it short.
    let child = spawn_piped(&mut s.sweep(&[], "100000").cmd());
    let t0 = Instant::now();
    while http_get(s.port, "/server_info")
        .is_none_or(|(_, b)| !b.contains("\"speculative_num_steps\":2"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "config 1 never served"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "TERM");
    let out = wait_within(child, Duration::from_secs(180), None);
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&s.results());
    let b = with_config(&recs, "bench", KEY, "2");
    assert_eq!(b.len(), 1, "{}", dump(&out));
    assert_eq!(b[0]["partial"], true, "cut short: {}", b[0]);
    s.assert_restored(&out);
}

/// Regression (issue 37): with the container engine refusing every call
/// for a few seconds from the first config's create, that config (and the
/// next) became `swap_failed` class `config`, results that `--resume`
/// never measured again. An engine that does not answer is the
/// transport's: the job's rollback rides it out, the sweep records a
/// transport failure (not a result), retries with its backoff and
/// measures both values.
#[test]
fn an_engine_outage_mid_sweep_is_retried_not_taken_for_the_config() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Served::start("sweep-outage", "sweep-container-outage");
    let o = testkit::outage::Outage::new("podman");
    o.from_first("run", 4);
    let out = s
        .sweep(&[], "4")
        .cmd()
        .env("PATH", o.path())
        .output()
        .unwrap();
    assert!(o.refused().contains(" run "), "{}", dump(&out));
    assert_two_values_measured(&s.results(), &out);
    let recs = records(&s.results());
    let failed: Vec<&Value> = recs.iter().filter(|r| r["type"] == "failure").collect();
    assert!(!failed.is_empty(), "the outage cost a try: {}", dump(&out));
    for f in failed {
        assert_eq!(f["class"], "transport", "{f}");
        assert_eq!(f["exit_code"], 28, "{f}");
    }
    s.assert_restored(&out);
}

/// An exec prefix on the far side that logs each command it runs, so the
/// test sees the engine CLI went through it (as `pct exec 129 --` would).
fn logging_prefix(dir: &std::path::Path) -> (String, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let log = dir.join("via.log");
    let via = dir.join("via");
    let text = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'{}'\nexec \"$@\"\n",
        log.display()
    );
    std::fs::write(&via, text).unwrap();
    std::fs::set_permissions(&via, std::fs::Permissions::from_mode(0o755)).unwrap();
    (via.display().to_string(), log)
}

#[test]
fn ctrl_c_over_ssh_and_an_exec_prefix_then_resume_restores_the_container() {
    let Some(sshd) = podman_and_sshd() else {
        return;
    };
    let s = Served::start("sweep-int", "sweep-container-int");
    let dir = &s.dir;
    let (prefix, via_log) = logging_prefix(dir);
    let results = s.results();
    let ssh = sshd.client_args();
    let mut head: Vec<&str> = ssh.iter().map(String::as_str).collect();
    head.extend(["--exec-prefix", prefix.as_str()]);
    // A level far too long to finish: Ctrl-C must cut it.
    let mut cmd = s.sweep(&head, "100000").cmd();
    to_files(&mut cmd, dir);
    // Its own process group, as a terminal's foreground job: Ctrl-C reaches
    // the script and the tools of the running pipeline alike.
    let child = cmd.process_group(0).spawn().unwrap();
    // Cut while config 1 is benchmarked: its server is ready (wait-ready
    // said so on stderr) and loadgen is running.
    let t0 = Instant::now();
    while !std::fs::read_to_string(dir.join("err"))
        .unwrap_or_default()
        .contains("wait-ready: ready after")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "config 1 never ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(info(s.port)["speculative_num_steps"], 2);
    std::thread::sleep(Duration::from_millis(1500));
    signal_group(&child, "INT");
    let out = wait_within(child, Duration::from_secs(120), Some(dir));
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&results);
    assert_eq!(recs.len(), 1, "one record, cut short: {}", dump(&out));
    assert_eq!(
        with_config(&recs, "bench", KEY, "2").len(),
        1,
        "{}",
        dump(&out)
    );
    assert_eq!(recs[0]["partial"], true, "cut short: {}", recs[0]);
    s.assert_restored(&out);

    // --resume: 2 was cut short, so it is measured again; 3 is new.
    let mut cmd = s.sweep(&head, "4").arg("--resume").cmd();
    to_files(&mut cmd, dir);
    let child = cmd.process_group(0).stdin(Stdio::null()).spawn().unwrap();
    let out = wait_within(child, Duration::from_secs(180), Some(dir));
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&results);
    let cfgs: Vec<_> = recs[1..]
        .iter()
        .map(|r| r["config"][KEY].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(cfgs, ["2", "3"], "{}", dump(&out));
    for r in &recs[1..] {
        assert_eq!(r["partial"], false, "{r}");
        assert_eq!(r["counts"]["completed"], 4, "{r}");
        assert_eq!(
            r["upstream"]["upstream"]["target"]["ssh"],
            sshd.target(),
            "{r}"
        );
        assert_eq!(
            r["upstream"]["upstream"]["target"]["exec_prefix"],
            prefix.as_str(),
            "{r}"
        );
        assert_eq!(
            r["server"]["args"]["speculative_num_steps"].to_string(),
            r["config"][KEY].as_str().unwrap(),
            "measured by the swapped server: {r}"
        );
    }
    s.assert_restored(&out);
    let via = std::fs::read_to_string(&via_log).unwrap_or_default();
    assert!(
        via.lines().any(|l| l.contains("podman")),
        "the engine ran behind the prefix: {via}"
    );
}

/// Issue 47: the newcomer's mistakes meet the refusal they meet on every
/// other path (sweep_slurm.rs runs them through a process spec, a pool
/// and --slurm): a misspelt --param and a --param the container's command
/// lacks are refused before the first stop, with and without --dry-run;
/// the same line, exit 2, no results file, the container untouched.
#[test]
fn a_newcomer_s_mistakes_are_refused_before_the_container_is_touched() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Served::start("sweep-newcomer", "ctr-newcomer");
    let res = s.results();
    for (key, says) in [
        (
            "speculative-num-step",
            "sweep: error: --param speculative-num-step: the launch line has no --speculative-num-step (closest: --speculative-num-steps); fix the name, or give --param-new speculative-num-step to add the flag (the target was not touched)\n",
        ),
        (
            "max-running-requests",
            "sweep: error: --param max-running-requests: the launch line has no --max-running-requests; fix the name, or give --param-new max-running-requests to add the flag (the target was not touched)\n",
        ),
    ] {
        for dry in [&[][..], &["--dry-run"]] {
            let out = SweepArgs::new()
                .args(&["--container", &s.c.name, "--engine", "podman"])
                .args(&["--url", &s.url, "--server", "llm-sim"])
                .results(&res)
                .param(key, "2,3")
                .args(dry)
                .expect(2);
            assert_eq!(String::from_utf8_lossy(&out.stderr), says, "{key} {dry:?}");
            assert!(!res.exists(), "no results file: {key} {dry:?}");
            assert_eq!(s.c.inspect("{{json .Config.Cmd}}"), s.original);
        }
    }
}
