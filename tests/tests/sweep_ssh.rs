//! The seed topology's faults over a real sshd (testkit::sshd) on
//! 127.0.0.1, llm-sim under svc-swap's process manager reached over SSH:
//! the SSH flags given once flow down the pipe in the swap record's target;
//! an sshd outage during a config's load costs a retry, not a result;
//! `--resume` re-runs a transport failure and restores the original
//! recorded at the file's first start, not the swept value running when it
//! resumed; a rollback returns with the old server ready. sshd missing is a
//! failure (scripts/deps.sh installs it). Needs `cargo build --workspace`.

mod sweep_support;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::sim::{url_port, wait_healthy};
use sweep_support::{dump, records, with_config, SimExec, SpecFile, SweepArgs};
use testkit::sshd::Sshd;

/// One outage at a time: the machine has 2 cores and the timings matter.
static LOCK: Mutex<()> = Mutex::new(());

const KEY: &str = "speculative-num-steps";

fn sshd() -> Sshd {
    Sshd::start().expect("sshd is not installed (scripts/deps.sh installs openssh-server)")
}

/// llm-sim with speculation on (SGLang's flag set: steps need EAGLE and
/// topk 1), steps 1 originally; steps > 8 is an OOM at load.
fn sim_spec(tag: &str, load: &str) -> (SpecFile, String) {
    SimExec::free().load(load).kv(8192).eagle(1).spec(tag)
}

/// `--ssh ... --ssh-key ... --known-hosts ...`: given once, to the first stage.
fn ssh_flags(s: &Sshd) -> Vec<String> {
    vec![
        "--ssh".into(),
        s.target(),
        "--ssh-key".into(),
        s.client_key.display().to_string(),
        "--known-hosts".into(),
        s.known_hosts.display().to_string(),
    ]
}

/// One test's fixture, in drop order last to first: the lock (one outage
/// at a time), sshd, llm-sim loading for `load`, and the SSH flags.
fn setup(tag: &str, load: &str) -> (MutexGuard<'static, ()>, Sshd, SpecFile, String, Vec<String>) {
    let one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let s = sshd();
    let (spec, url) = sim_spec(tag, load);
    let ssh = ssh_flags(&s);
    (one, s, spec, url, ssh)
}

fn sweep_args(spec: &SpecFile, url: &str, ssh: &[String]) -> SweepArgs {
    let ssh: Vec<&str> = ssh.iter().map(String::as_str).collect();
    SweepArgs::on_spec(spec, url, "llm-sim")
        .param(KEY, "2,3,4")
        .levels("1")
        .quick("2", "8")
        .args(&["--ready-timeout", "30s"])
        .args(&ssh)
}

/// Wait (at most `limit`) until `cond` holds; false if it never did.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn spec_has_steps(spec: &Path, v: &str) -> bool {
    std::fs::read_to_string(spec)
        .unwrap_or_default()
        .contains(&format!("--speculative-num-steps {v}"))
}

/// No failure record may lose its config; returns the transport ones.
fn transport_failures(recs: &[Value]) -> Vec<&Value> {
    for f in recs.iter().filter(|r| r["type"] == "failure") {
        assert!(
            f["config"].as_object().is_some_and(|c| !c.is_empty()),
            "a failure without its config: {f}"
        );
    }
    recs.iter()
        .filter(|r| r["type"] == "failure" && r["class"] == "transport")
        .collect()
}

#[test]
fn the_pipeline_needs_the_ssh_flags_once() {
    let (_one, mut s, spec, url, ssh) = setup("ssh-once", "200ms");
    let mut swap_args = vec!["--spec", spec.s(), "--set", "speculative-num-steps=2"];
    swap_args.extend(ssh.iter().map(String::as_str));
    let swap = testkit::run(testkit::cmd("svc-swap", &swap_args), "");
    swap.expect_code(0);
    let target = &swap.json_lines()[0]["target"];
    assert_eq!(target["ssh"], s.target());
    assert_eq!(
        target["ssh_key"][0],
        s.client_key.display().to_string(),
        "{}",
        swap.stdout()
    );
    assert_eq!(target["known_hosts"], s.known_hosts.display().to_string());

    // wait-ready with no SSH flag: the record says how to get there (its
    // default ~/.ssh/known_hosts would not know this host).
    let ready = testkit::run(
        testkit::cmd(
            "wait-ready",
            &[&url, "--server", "llm-sim", "--timeout", "20s"],
        ),
        &swap.stdout(),
    );
    ready.expect_code(0);
    let r = &ready.json_lines()[0];
    assert_eq!(r["type"], "ready", "{r}");
    assert!(r["via"].as_str().unwrap().starts_with("ssh"), "{r}");
    let bench = testkit::run(
        testkit::cmd(
            "loadgen",
            &["--url", &url, "-c", "1", "-n", "2", "--max-tokens", "8"],
        ),
        &ready.stdout(),
    );
    bench.expect_code(0);
    let b = &bench.json_lines()[0];
    assert_eq!(b["type"], "bench");
    assert_eq!(b["config"][KEY], "2");
    // The bench record names the host it ran on: the swap record's SSH
    // destination, its hardware read over that session (issue 15 item 2).
    let host = &b["server"]["host"];
    assert_eq!(host["name"], s.target(), "{b}");
    assert!(host["cpu_count"].as_u64() >= Some(1), "{host}");
    assert!(host["fingerprint"].is_string(), "{host}");

    // --ssh-key without --ssh: the destination comes from the record.
    let again = testkit::run(
        testkit::cmd(
            "wait-ready",
            &[
                &url,
                "--server",
                "llm-sim",
                "--ssh-key",
                s.client_key.to_str().unwrap(),
                "--timeout",
                "20s",
            ],
        ),
        &swap.stdout(),
    );
    again.expect_code(0);
    // Without a record, it is still a usage error.
    testkit::run(
        testkit::cmd("wait-ready", &[&url, "--ssh-key", "/k", "--no-stdin"]),
        "",
    )
    .expect_code(2);

    // sshd down: wait-ready writes a transport failure that keeps the
    // config (it used to write nothing), and loadgen passes it through.
    s.stop();
    let down = testkit::run(
        testkit::cmd("wait-ready", &[&url, "--timeout", "5s"]),
        &swap.stdout(),
    );
    down.expect_code(21);
    let f = &down.json_lines()[0];
    assert_eq!(f["type"], "failure", "{f}");
    assert_eq!(f["class"], "transport", "{f}");
    assert_eq!(f["config"][KEY], "2", "{f}");
    let passed = testkit::run(testkit::cmd("loadgen", &["--url", &url]), &down.stdout());
    passed.expect_code(4);
    assert_eq!(passed.json_lines()[0]["config"][KEY], "2");
    s.restart();
}

#[test]
fn an_sshd_outage_during_a_load_costs_a_retry_not_a_result() {
    let (_one, mut s, spec, url, ssh) = setup("ssh-outage", "1s");
    let original = spec.exec_start();
    let results = spec.results();
    let args = sweep_args(&spec, &url, &ssh);
    let t0 = Instant::now();
    let out = std::thread::scope(|sc| {
        let run = sc.spawn(|| args.output());
        // Config 2 of 3 is loading: sshd goes away for 5 s.
        let hit = wait_for(Duration::from_secs(90), || spec_has_steps(&spec.path, "3"));
        s.stop();
        std::thread::sleep(Duration::from_secs(5));
        s.restart();
        assert!(hit, "the sweep never reached steps=3");
        run.join().unwrap()
    });
    eprintln!("sweep with a 5 s outage took {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&results);
    for v in ["2", "3", "4"] {
        assert_eq!(
            with_config(&recs, "bench", KEY, v).len(),
            1,
            "steps={v}\n{}",
            dump(&out)
        );
    }
    // The SSH layer's own reconnect (--ssh-retry, 30 s) usually rides out
    // a 5 s outage with no record at all; when a stage gives up first, its
    // transport failure is for the config that was loading and is retried
    // (the resume test below forces that path with --retries 0).
    let t = transport_failures(&recs);
    assert!(t.iter().all(|f| f["config"][KEY] == "3"), "{t:?}");
    let all = sweep_support::all_records(&results);
    assert_eq!(all.iter().filter(|r| r["type"] == "origin").count(), 1);
    assert_eq!(spec.exec_start(), original, "the original is back");
    assert!(spec.live_pid().is_some(), "restored and running");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        !table.contains("unset"),
        "a transport failure became a row:\n{table}"
    );
}

#[test]
fn resume_reruns_a_transport_failure_and_restores_the_recorded_original() {
    let (_one, mut s, spec, url, ssh) = setup("ssh-resume", "500ms");
    let original = spec.exec_start();
    let results = spec.results();
    let args = sweep_args(&spec, &url, &ssh).args(&["--retries", "0"]);
    // sshd is down from steps=3's swap until its transport failure is on
    // file: with --retries 0 it stays a transport failure.
    let out = std::thread::scope(|sc| {
        let run = sc.spawn(|| args.output());
        let hit = wait_for(Duration::from_secs(90), || spec_has_steps(&spec.path, "3"));
        s.stop();
        let seen = wait_for(Duration::from_secs(60), || {
            std::fs::read_to_string(&results)
                .unwrap_or_default()
                .contains(r#""class":"transport""#)
        });
        s.restart();
        assert!(hit && seen, "no transport failure at steps=3");
        run.join().unwrap()
    });
    assert_eq!(out.status.code(), Some(40), "{}", dump(&out));
    let recs = records(&results);
    assert!(with_config(&recs, "bench", KEY, "3").is_empty());
    assert!(!transport_failures(&recs).is_empty());
    // steps=4 may have met the outage too (sshd takes a moment to return).
    let measured = ["2", "4"]
        .iter()
        .filter(|v| !with_config(&recs, "bench", KEY, v).is_empty())
        .count();

    // A swept value runs when the resume starts: the restore must still
    // put back the original recorded when the file was first started.
    let mut set = vec!["--spec", spec.s(), "--set", "speculative-num-steps=4"];
    set.extend(ssh.iter().map(String::as_str));
    testkit::run(testkit::cmd("svc-swap", &set), "").expect_code(0);
    assert_ne!(spec.exec_start(), original);
    let out = sweep_args(&spec, &url, &ssh).arg("--resume").expect(0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("already in").count(), measured, "{err}");
    let recs = records(&results);
    assert_eq!(
        with_config(&recs, "bench", KEY, "3").len(),
        1,
        "{}",
        dump(&out)
    );
    assert_eq!(with_config(&recs, "bench", KEY, "4").len(), 1);
    let all = sweep_support::all_records(&results);
    assert_eq!(all.iter().filter(|r| r["type"] == "origin").count(), 1);
    assert_eq!(spec.exec_start(), original, "the recorded original is back");
}

#[test]
fn a_rollback_returns_with_the_old_server_ready() {
    let (_one, _sshd, spec, url, ssh) = setup("ssh-rollback", "1500ms");
    let mut first = vec!["--spec", spec.s(), "--set", "speculative-num-steps=2"];
    first.extend(ssh.iter().map(String::as_str));
    testkit::run(testkit::cmd("svc-swap", &first), "").expect_code(0);
    let port = url_port(&url);
    wait_healthy(port, Duration::from_secs(30));

    // The documented example: a plain `wait-ready URL` as the ready
    // command; the record on stdin and SWEEPKIT_SSH carry the SSH target.
    let ready_cmd = format!(
        "test -n \"$SWEEPKIT_SSH\" && test -n \"$SWEEPKIT_SSH_KEY\" && {} {url} --server llm-sim --timeout 20s",
        testkit::bin("wait-ready").display()
    );
    let mut bad = vec![
        "--spec",
        spec.s(),
        "--set",
        "speculative-num-steps=9",
        "--rollback-on-fail",
        "--ready-cmd",
        &ready_cmd,
    ];
    bad.extend(ssh.iter().map(String::as_str));
    let r = testkit::run(testkit::cmd("svc-swap", &bad), "");
    r.expect_code(25);
    // Back at once, ready, and on the old config.
    let (code, body) = testkit::http_get(port, "/health").unwrap_or((0, String::new()));
    assert_eq!(
        code, 200,
        "old server not ready when the rollback returned: {body}"
    );
    assert!(spec_has_steps(&spec.path, "2"), "{}", spec.exec_start());
    assert!(r.stderr().contains("rolled back"), "{}", r.stderr());
}

/// Every process's argv (what `ps` shows any user) that holds `needle`,
/// word by word, from /proc now.
fn argvs_holding(needle: &str) -> Vec<Vec<String>> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.contains(needle))
        .map(|c| c.split_terminator('\0').map(String::from).collect())
        .collect()
}

/// Issue 46: over SSH with an exec prefix (the seeds' topology), svc-swap's
/// far-side staging passed the job's JSON (the launch line and its
/// `--api-key`) as an argument of the login shell, the prefix and `sh -c`,
/// and the job kept its words in its argv for its whole life: any local
/// user saw the key in `ps`. A sampler reads every argv on the host while
/// a three-config sweep runs over the real sshd with a prefix; only the
/// server itself (whose launch line it is) may hold the key.
#[test]
fn the_api_key_is_in_no_argv_but_the_server_s_over_ssh_with_an_exec_prefix() {
    const SECRET: &str = "sk-argv-46-c0ffee";
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let s = sshd();
    let (spec, url) = SimExec::free()
        .load("100ms")
        .kv(8192)
        .eagle(1)
        .flags(&format!("--api-key {SECRET}"))
        .spec("argv-key");
    let ssh = ssh_flags(&s);
    let mut sweep = sweep_args(&spec, &url, &ssh)
        .args(&["--exec-prefix", "env SWEEPKIT_VIA=prefix"])
        .cmd();
    sweep
        .env("SWEEPKIT_API_KEY", SECRET)
        .env_remove("OPENAI_API_KEY");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let (mut seen, mut samples) = (Vec::new(), 0u32);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                seen.extend(argvs_holding(SECRET));
                samples += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            (seen, samples)
        })
    };
    let out = sweep.output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (seen, samples) = sampler.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&spec.results());
    for v in ["2", "3", "4"] {
        assert_eq!(
            with_config(&recs, "bench", KEY, v).len(),
            1,
            "{}",
            dump(&out)
        );
    }
    // The server's own launch line (the server, and its launcher's `env`
    // and `sh -c ... exec "$@"` words just before it execs): the key a word
    // of its own after `--api-key`, after the llm-sim binary. Anywhere
    // else (inside a shell-quoted word, a JSON) it was put there by us.
    let bin = testkit::bin("llm-sim").display().to_string();
    let server = |argv: &Vec<String>| {
        let Some(at) = argv.iter().position(|w| *w == bin) else {
            return false;
        };
        argv.iter().enumerate().all(|(i, w)| {
            !w.contains(SECRET) || (w == SECRET && i > at + 1 && argv[i - 1] == "--api-key")
        })
    };
    // Not vacuous: the sampler saw the key where it belongs.
    assert!(seen.iter().any(server), "{samples} samples: {seen:?}");
    let leaks: Vec<String> = seen
        .iter()
        .filter(|a| !server(a))
        .map(|a| a.join(" ").chars().take(300).collect())
        .collect();
    assert!(
        leaks.is_empty(),
        "{} of {samples} samples: {leaks:#?}",
        leaks.len()
    );
    drop(s);
}
