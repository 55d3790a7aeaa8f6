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
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::{dump, records, sweep, with_config};
use testkit::http_get;
use testkit::podman::{Ctr, Project, SERVICE_KEYS};

const KEY: &str = "speculative-num-steps";

fn sim_argv(port: u16) -> Vec<String> {
    let sim = testkit::bin("llm-sim").display().to_string();
    let p = port.to_string();
    [
        sim.as_str(),
        "--host",
        "127.0.0.1",
        "--port",
        &p,
        "--load-time",
        "10ms",
        "--warmup-time",
        "10ms",
        "--seed",
        "1",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-steps",
        "1",
    ]
    .map(String::from)
    .to_vec()
}

/// llm-sim's /server_info once /health is 200.
fn info(port: u16) -> Value {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if let Some((200, _)) = http_get(port, "/health") {
            let (_, b) = http_get(port, "/server_info").unwrap();
            return serde_json::from_str(&b).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("llm-sim on port {port} never healthy");
}

/// The sweep's options past the target: two values, one small level.
fn rest<'a>(url: &'a str, results: &'a str) -> Vec<&'a str> {
    rest_n(url, results, "4")
}

/// [`rest`] with `n` requests per level.
fn rest_n<'a>(url: &'a str, results: &'a str, n: &'a str) -> Vec<&'a str> {
    vec![
        "--engine",
        "podman",
        "--url",
        url,
        "--server",
        "llm-sim",
        "--results",
        results,
        "--param",
        KEY,
        "--values",
        "2,3",
        "--concurrency",
        "1",
        "--expect-config",
        "--ready-timeout",
        "60s",
        "--load-arg",
        "-n",
        "--load-arg",
        n,
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "16",
    ]
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
    let port = testkit::free_port();
    let argv = sim_argv(port);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let c = Ctr::run("sweep", &[], &argv);
    info(port);
    let original = c.inspect("{{json .Config.Cmd}}");
    let dir = testkit::temp_dir("sweep-container");
    let results = dir.join("results.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let mut args = vec!["--container", c.name.as_str()];
    args.extend(rest(&url, results.to_str().unwrap()));
    let out = sweep(&args).output().unwrap();
    assert_two_values_measured(&results, &out);
    assert_eq!(
        c.inspect("{{json .Config.Cmd}}"),
        original,
        "the original command is back\n{}",
        dump(&out)
    );
    assert_eq!(c.inspect("{{.State.Status}}"), "running");
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");
    let _ = std::fs::remove_dir_all(dir);
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
    let mut args = vec!["--compose", file.as_str(), "--service", "sim"];
    args.extend(rest(&url, results.to_str().unwrap()));
    let out = sweep(&args).output().unwrap();
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
    if !testkit::podman::gate() {
        return;
    }
    let Some(sshd) = testkit::sshd::Sshd::start() else {
        return;
    };
    let port = testkit::free_port();
    let argv = sim_argv(port);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let c = Ctr::run("sweep-ssh", &[], &argv);
    info(port);
    let original = c.inspect("{{json .Config.Cmd}}");
    let dir = testkit::temp_dir("sweep-container-ssh");
    let results = dir.join("results.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let ssh = sshd.client_args();
    let mut args: Vec<&str> = ssh.iter().map(String::as_str).collect();
    args.extend(["--container", c.name.as_str()]);
    args.extend(rest(&url, results.to_str().unwrap()));
    let out = sweep(&args).output().unwrap();
    assert_two_values_measured(&results, &out);
    let recs = records(&results);
    let b = with_config(&recs, "bench", KEY, "2");
    assert_eq!(
        b[0]["upstream"]["upstream"]["target"]["ssh"],
        sshd.target(),
        "the engine ran on the far side: {}",
        b[0]
    );
    assert_eq!(
        c.inspect("{{json .Config.Cmd}}"),
        original,
        "{}",
        dump(&out)
    );
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_signal_mid_config_restores_the_original_container() {
    if !testkit::podman::gate() {
        return;
    }
    let port = testkit::free_port();
    let argv = sim_argv(port);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let c = Ctr::run("sweep-term", &[], &argv);
    info(port);
    let original = c.inspect("{{json .Config.Cmd}}");
    let dir = testkit::temp_dir("sweep-container-term");
    let results = dir.join("results.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let mut args = vec!["--container", c.name.as_str()];
    // A level that would run for ages: the signal cuts it short.
    args.extend(rest_n(&url, results.to_str().unwrap(), "100000"));
    let child = sweep(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while http_get(port, "/server_info")
        .is_none_or(|(_, b)| !b.contains("\"speculative_num_steps\":2"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "config 1 never served"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&results);
    let b = with_config(&recs, "bench", KEY, "2");
    assert_eq!(b.len(), 1, "{}", dump(&out));
    assert_eq!(b[0]["partial"], true, "cut short: {}", b[0]);
    assert_eq!(
        c.inspect("{{json .Config.Cmd}}"),
        original,
        "{}",
        dump(&out)
    );
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");
    let _ = std::fs::remove_dir_all(dir);
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

/// Waits for `child`, SIGKILLing its group after `limit`; its output went
/// to `dir`'s out/err files.
fn wait_group(
    child: &mut std::process::Child,
    dir: &std::path::Path,
    limit: Duration,
) -> std::process::Output {
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            panic!("sweep did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_default();
    std::process::Output {
        status,
        stdout: read("out"),
        stderr: read("err"),
    }
}

#[test]
fn ctrl_c_over_ssh_and_an_exec_prefix_then_resume_restores_the_container() {
    if !testkit::podman::gate() {
        return;
    }
    let Some(sshd) = testkit::sshd::Sshd::start() else {
        return;
    };
    let port = testkit::free_port();
    let argv = sim_argv(port);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let c = Ctr::run("sweep-int", &[], &argv);
    info(port);
    let original = c.inspect("{{json .Config.Cmd}}");
    let dir = testkit::temp_dir("sweep-container-int");
    let (prefix, via_log) = logging_prefix(&dir);
    let results = dir.join("results.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let ssh = sshd.client_args();
    let mut head: Vec<&str> = ssh.iter().map(String::as_str).collect();
    head.extend([
        "--exec-prefix",
        prefix.as_str(),
        "--container",
        c.name.as_str(),
    ]);
    // A level far too long to finish: Ctrl-C must cut it.
    let mut long = head.clone();
    long.extend(rest_n(&url, results.to_str().unwrap(), "100000"));
    let files = |cmd: &mut Command| {
        cmd.stdout(std::fs::File::create(dir.join("out")).unwrap())
            .stderr(std::fs::File::create(dir.join("err")).unwrap());
    };
    let mut cmd = sweep(&long);
    files(&mut cmd);
    // Its own process group, as a terminal's foreground job: Ctrl-C reaches
    // the script and the tools of the running pipeline alike.
    let mut child = cmd.process_group(0).spawn().unwrap();
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
    assert_eq!(info(port)["speculative_num_steps"], 2);
    std::thread::sleep(Duration::from_millis(1500));
    Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    let out = wait_group(&mut child, &dir, Duration::from_secs(120));
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
    assert_eq!(
        c.inspect("{{json .Config.Cmd}}"),
        original,
        "{}",
        dump(&out)
    );
    assert_eq!(c.inspect("{{.State.Status}}"), "running");
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");

    // --resume: 2 was cut short, so it is measured again; 3 is new.
    let mut resume = head.clone();
    resume.extend(rest_n(&url, results.to_str().unwrap(), "4"));
    resume.push("--resume");
    let mut cmd = sweep(&resume);
    files(&mut cmd);
    let mut child = cmd.process_group(0).stdin(Stdio::null()).spawn().unwrap();
    let out = wait_group(&mut child, &dir, Duration::from_secs(180));
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
    assert_eq!(
        c.inspect("{{json .Config.Cmd}}"),
        original,
        "{}",
        dump(&out)
    );
    assert_eq!(c.inspect("{{.State.Status}}"), "running");
    assert_eq!(info(port)["speculative_num_steps"], 1, "restored, live");
    let via = std::fs::read_to_string(&via_log).unwrap_or_default();
    assert!(
        via.lines().any(|l| l.contains("podman")),
        "the engine ran behind the prefix: {via}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
