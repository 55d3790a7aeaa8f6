//! svc-swap `--container` under faults (issue 37), on real podman with the
//! workspace's llm-sim inside (testkit::podman): a swap that starts while a
//! killed run's job is between its rename and its create; an engine that
//! does not answer (testkit::outage, a stand-in podman first on PATH that
//! refuses every command for a few seconds); a create that fails with the
//! rollback inside the same outage, and a container left without its name;
//! a container its user stopped; and what svc-swap keeps on disk. The
//! failed create runs on Docker too (its own dockerd, testkit::docker),
//! where the new container is made by `docker create` and started apart.

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::docker::Dockerd;
use testkit::outage::Outage;
use testkit::podman::Ctr;
use testkit::Run;

mod support;

/// llm-sim in podman on a fresh port, speculative steps 1, serving.
struct Sim {
    c: Ctr,
    port: u16,
}

impl Sim {
    fn start(tag: &str) -> Sim {
        Sim::start_in(None, tag)
    }

    /// In the test's own dockerd when `d` is given, else in podman.
    fn start_in(d: Option<&Dockerd>, tag: &str) -> Sim {
        let port = testkit::free_port();
        let s = Sim {
            c: Ctr::run_sim(d, tag, &[], port, &[]),
            port,
        };
        s.steps();
        s
    }

    fn name(&self) -> &str {
        &self.c.name
    }

    /// The live `speculative_num_steps` once /health is 200.
    fn steps(&self) -> Value {
        testkit::server_info_within(self.port, Duration::from_secs(30), || {
            self.c.inspect("{{.State.Status}} {{.State.ExitCode}}")
        })["speculative_num_steps"]
            .clone()
    }

    /// `svc-swap --container NAME ARGS` with `path` as PATH when given.
    fn swap(&self, path: Option<&str>, args: &[&str]) -> Run {
        let mut c = support::command();
        c.args(["--container", self.name()]).args(args);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        if self.c.engine() == "docker" {
            c.arg("--engine").arg("docker");
            let cli = self.c.cli();
            let host = cli.get_envs().find(|(k, _)| *k == "DOCKER_HOST");
            c.env("DOCKER_HOST", host.and_then(|(_, v)| v).unwrap());
        }
        testkit::run(c, "")
    }

    fn spawn(&self, path: &str, args: &[&str]) -> Child {
        support::command()
            .args(["--container", self.name()])
            .args(args)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

fn reason(rec: &Value) -> &str {
    rec["reason"].as_str().unwrap_or_default()
}

/// Regression: svc-swap SIGKILLed between the job's rename of the old
/// container and its create of the new one left NAME absent for seconds;
/// the next run inspected NAME before it waited for that job and failed
/// with "no such container" (exit 20), recorded as the config's failure.
/// Now it waits for the job, reports how it ended, then swaps.
#[test]
fn a_swap_while_a_killed_runs_job_holds_the_name_waits_for_it() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Sim::start("busy");
    let o = Outage::new("podman");
    o.slow("run", 6);
    let t0 = Instant::now();
    let mut a = s.spawn(&o.path(), &["--set", "speculative-num-steps=2"]);
    o.await_slowed(Duration::from_secs(30));
    a.kill().unwrap();
    let _ = a.wait();
    assert!(
        s.c.inspect("{{.Id}}").is_empty(),
        "NAME is absent while the job creates: {:?}",
        s.c.family()
    );
    let r = s.swap(None, &["--set", "speculative-num-steps=3"]);
    let rec = r.expect_one(0);
    assert!(
        r.stderr().contains("waiting for swap job"),
        "{}",
        r.stderr()
    );
    let w = rec["warnings"].to_string();
    assert!(
        w.contains("an earlier swap") && w.contains("new config running"),
        "{rec}"
    );
    assert_eq!(s.steps(), 3);
    assert_eq!(s.c.family().len(), 2, "NAME and NAME.sweepkit-prev");
    eprintln!("took {:.1}s", t0.elapsed().as_secs_f64());
}

/// Regression: with every podman call refused ("connection refused") the
/// swap failed with exit 28 (the probe) or 20 (the inspect) as the
/// config's failure; a sweep never tried it again. Both are the engine's:
/// exit 28, class transport, and the container untouched.
#[test]
fn an_engine_that_does_not_answer_is_a_transport_failure() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Sim::start("down");
    let id = s.c.inspect("{{.Id}}");
    let o = Outage::new("podman");
    o.now(30);
    let args = ["--set", "speculative-num-steps=2"];
    let rec = s.swap(Some(&o.path()), &args).expect_one(28);
    assert_eq!(rec["class"], "transport", "{rec}");
    assert!(reason(&rec).contains("does not answer"), "{rec}");
    // The probe answers, the inspect does not.
    o.spare_version();
    let rec = s.swap(Some(&o.path()), &args).expect_one(28);
    assert_eq!(rec["class"], "transport", "{rec}");
    assert!(
        reason(&rec).contains("container inspect failed") && reason(&rec).contains("refused"),
        "{rec}"
    );
    assert_eq!((s.c.inspect("{{.Id}}"), s.steps()), (id, 1.into()));
}

/// Regression: the engine failing from the new container's create on
/// failed the job's rollback too (`running: none`, exit 24) and left only
/// NAME.sweepkit-old-JOB and NAME.sweepkit-prev, no NAME, even once the
/// engine was back. The rollback now rides out an outage (up to --wait):
/// the old container itself is NAME again, and the failure is the
/// engine's (28, transport), not the config's.
#[test]
fn a_failed_create_in_an_outage_is_rolled_back_once_the_engine_answers() {
    if testkit::podman::gate() {
        create_outage(None);
    }
}

/// The same on Docker, where svc-swap creates with `docker create` and
/// starts apart (no create command to replay).
#[test]
fn docker_a_failed_create_in_an_outage_is_rolled_back_once_the_engine_answers() {
    if let Some(d) = Dockerd::start() {
        create_outage(Some(&d));
    }
}

fn create_outage(d: Option<&Dockerd>) {
    let s = Sim::start_in(d, "create");
    let id = s.c.inspect("{{.Id}}");
    let o = Outage::new(s.c.engine());
    let verb = if d.is_some() { "create" } else { "run" };
    o.from_first(verb, 3);
    let args = ["--set", "speculative-num-steps=2", "--wait", "20s"];
    let rec = s.swap(Some(&o.path()), &args).expect_one(28);
    assert_eq!(
        (&rec["running"], &rec["class"]),
        (&"old".into(), &"transport".into()),
        "{rec}"
    );
    assert!(reason(&rec).contains("could not create"), "{rec}");
    assert!(o.refused().contains(&format!("{verb} ")), "{}", o.refused());
    assert_eq!(
        s.c.inspect("{{.Id}}"),
        id,
        "the old container is NAME again"
    );
    assert_eq!(s.steps(), 1);
    assert_eq!(s.c.family(), [s.name().to_string()]);
}

/// Regression, the same outage longer than the rollback waits: the failure
/// record names the kept container and the command that puts it back, and
/// the next svc-swap (before: "no such container", exit 20) puts it back
/// itself and swaps.
#[test]
fn a_container_left_without_its_name_is_put_back_by_the_next_swap() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Sim::start("stranded");
    let id = s.c.inspect("{{.Id}}");
    let o = Outage::new("podman");
    o.from_first("run", 6);
    let args = ["--set", "speculative-num-steps=2", "--wait", "1s"];
    let rec = s.swap(Some(&o.path()), &args).expect_one(28);
    assert_eq!(rec["running"], "none", "{rec}");
    let kept = format!(
        "{}.sweepkit-old-{}",
        s.name(),
        rec["swap_id"].as_str().unwrap()
    );
    let by_hand = format!("'podman rename {kept} {0} && podman start {0}'", s.name());
    assert!(reason(&rec).contains(&by_hand), "{rec}");
    o.await_end();
    assert!(s.c.inspect("{{.Id}}").is_empty(), "{:?}", s.c.family());
    assert_eq!(s.c.inspect_other(&kept, "{{.Id}}"), id);
    let r = s.swap(None, &["--set", "speculative-num-steps=2"]);
    let rec = r.expect_one(0);
    assert!(
        rec["warnings"]
            .to_string()
            .contains(&format!("had kept it as {kept}")),
        "{rec}"
    );
    assert_eq!(
        rec["target"]["container"]["previous"].as_str(),
        Some(&*format!("{}.sweepkit-prev", s.name()))
    );
    assert_eq!(
        s.c.inspect_other(&format!("{}.sweepkit-prev", s.name()), "{{.Id}}"),
        id
    );
    assert_eq!(s.steps(), 2);
}

/// Regression: a container its user had stopped was swapped and left
/// running. Refused now (20), the container as it was; one that a swap
/// made and that then crashed at load is still swapped (a sweep goes on
/// past a crashing config).
#[test]
fn a_container_its_user_stopped_is_refused_one_that_crashed_is_not() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Sim::start("stopped");
    testkit::helper::checked(
        s.c.cli().args(["stop", "-t", "5", "--", s.name()]),
        "podman stop",
    );
    let id = s.c.inspect("{{.Id}}");
    let r = s.swap(None, &["--set", "speculative-num-steps=2"]);
    r.expect_one_error(
        20,
        "is not running (exited): a stopped server is not a swap target",
    );
    assert_eq!(
        s.c.inspect("{{.Id}} {{.State.Running}}"),
        format!("{id} false")
    );
    testkit::helper::checked(s.c.cli().args(["start", "--", s.name()]), "podman start");
    s.steps();
    // A config that crashes after the job's one-second check.
    let late = ["--set", "crash-on-load", "--set", "load-time=2s"];
    s.swap(None, &late).expect_one(0);
    let t0 = Instant::now();
    while s.c.inspect("{{.State.Running}}") != "false" {
        assert!(t0.elapsed() < Duration::from_secs(20), "it never crashed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let back = ["--unset", "crash-on-load", "--set", "load-time=10ms"];
    let rec = s.swap(None, &back).expect_one(0);
    assert_eq!(rec["stop"]["result"], "already_stopped", "{rec}");
    assert_eq!(s.steps(), 1);
}

/// Regression: the definition file and its backups held the command
/// (`--api-key` and all) at mode 0644, and kept the key in clear after
/// the run; a config that exited at once pointed to `podman logs NAME`
/// for a container already removed. Now 0600, the key sealed (a
/// fingerprint), and `--restore` fills it back from the live container.
#[test]
fn the_kept_definition_is_private_and_keyless_and_a_failed_start_points_to_the_record() {
    if !testkit::podman::gate() {
        return;
    }
    let t0 = Instant::now();
    let s = Sim::start("private");
    let key = format!("sk-test-hctr-{}", std::process::id());
    s.swap(None, &["--set", &format!("api-key={key}")])
        .expect_one(0);
    s.swap(None, &["--set", "speculative-num-steps=2"])
        .expect_one(0);
    assert_eq!(
        testkit::podman::state_files_holding(&key),
        Vec::<String>::new()
    );
    let def = format!("/run/sweepkit-swap/container-podman-{}.json", s.name());
    let mut files = vec![def.clone()];
    for e in std::fs::read_dir("/run/sweepkit-swap").unwrap().flatten() {
        let p = e.path().display().to_string();
        if p.starts_with(&format!("{def}.sweepkit-bak.")) {
            files.push(p);
        }
    }
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{f}");
    }
    s.swap(None, &["--restore"]).expect_one(0);
    let cmd = s.c.inspect("{{json .Config.Cmd}}");
    assert!(
        cmd.contains(&format!(r#""--api-key","{key}""#))
            && cmd.contains(r#""--speculative-num-steps","1""#),
        "the restore filled the key back: {cmd}"
    );
    assert_eq!(
        testkit::podman::state_files_holding(&key),
        Vec::<String>::new()
    );
    let rec = s.swap(None, &["--set", "crash-on-load"]).expect_one(25);
    assert!(!reason(&rec).contains("podman logs"), "{rec}");
    assert!(reason(&rec).contains("log_tail"), "{rec}");
    assert!(
        rec["log_tail"].to_string().contains("CUDA out of memory"),
        "{rec}"
    );
    eprintln!("took {:.1}s", t0.elapsed().as_secs_f64());
}
