//! svc-swap `--container` against real podman containers running the
//! workspace's llm-sim (testkit::podman: the host root as an overlay, host
//! networking, no registry): a swap of the speculative flag verified live by
//! wait-ready --expect-config, --restore, a container that ignores SIGTERM,
//! rollback by the ready rule, --dry-run, the same swap over the test sshd,
//! and bad input. The swap, the SIGTERM-ignoring container, rollback and
//! the swap over ssh run against Docker too: Debian's docker.io dockerd,
//! started by the test itself on a socket of its own (testkit::docker; a
//! local image from `docker import`, host networking). The client with no
//! daemon at the default socket is the engine-unavailable test.

use std::time::Duration;

use serde_json::Value;
use support::{ready_cmd, swap};
use testkit::docker::Dockerd;
use testkit::podman::Ctr;
use testkit::Run;

mod support;

/// llm-sim in a container on a fresh loopback port, speculative steps 1.
struct Sim {
    c: Ctr,
    port: u16,
}

impl Sim {
    /// In podman.
    fn start(tag: &str, extra_args: &[&str]) -> Sim {
        Sim::start_in(None, tag, extra_args)
    }

    /// In the test's dockerd when `d` is given, else in podman.
    fn start_in(d: Option<&Dockerd>, tag: &str, extra_args: &[&str]) -> Sim {
        let port = testkit::free_port();
        let c = Ctr::run_sim(d, tag, &[], port, extra_args);
        let s = Sim { c, port };
        s.info();
        s
    }

    fn name(&self) -> &str {
        &self.c.name
    }

    /// svc-swap against this container's engine: docker's with `--engine
    /// docker` and the test daemon's DOCKER_HOST; podman's as given.
    fn swap(&self, args: &[&str]) -> Run {
        let mut c = support::command();
        c.args(args);
        if self.c.engine() == "docker" {
            c.args(["--engine", "docker"]);
            let host = self
                .c
                .cli()
                .get_envs()
                .find_map(|(k, v)| (k == "DOCKER_HOST").then(|| v.unwrap().to_owned()));
            c.env("DOCKER_HOST", host.unwrap());
        }
        testkit::run(c, "")
    }

    /// /server_info once /health is 200.
    fn info(&self) -> Value {
        testkit::server_info_within(self.port, Duration::from_secs(30), || {
            self.c.inspect("{{.State.Status}} {{.State.ExitCode}}")
        })
    }

    fn ready_cmd(&self, expect: &str) -> String {
        ready_cmd(self.port, &format!(" --expect-config {expect}"), "30s")
    }
}

/// `#[test] fn $podman` runs `$body(None)` in podman and `#[test] fn
/// $docker` runs `$body(Some(&dockerd))` in the test's own dockerd.
macro_rules! on_podman_and_docker {
    ($podman:ident, $docker:ident, $body:ident) => {
        #[test]
        fn $podman() {
            if testkit::podman::gate() {
                $body(None);
            }
        }

        #[test]
        fn $docker() {
            if let Some(d) = Dockerd::start() {
                $body(Some(&d));
            }
        }
    };
}

on_podman_and_docker!(
    speculative_flag_swap_is_live_and_restore_brings_back_the_kept_container,
    docker_speculative_flag_swap_is_live_and_restore_brings_back_the_kept_container,
    swap_and_restore
);

fn swap_and_restore(d: Option<&Dockerd>) {
    let s = Sim::start_in(d, "swap", &[]);
    let old_id = s.c.inspect("{{.Id}}");
    let port = s.port.to_string();
    let ready = s.ready_cmd("speculative-num-steps=3");
    let r = s.swap(&[
        "--container",
        s.name(),
        "--set",
        "speculative-num-steps=3",
        "--port",
        &port,
        "--ready-cmd",
        &ready,
    ]);
    let rec = r.expect_one(0);
    let c = &rec["target"]["container"];
    assert_eq!(rec["target"]["manager"], "container");
    assert_eq!(c["engine"], s.c.engine());
    assert_eq!(c["name"], s.name());
    let new_id = s.c.inspect("{{.Id}}");
    assert_eq!(
        c["id"],
        new_id.as_str(),
        "the record names the new container"
    );
    assert_ne!(
        new_id, old_id,
        "a container's command changes by re-creating it"
    );
    assert_eq!(rec["stop"]["result"], "clean", "{rec}");
    assert_eq!(rec["start"]["cmdline_verified"], true);
    assert_eq!(rec["method"], "container");
    // Live, by the engine and by the server itself.
    let cmd = s.c.inspect("{{json .Config.Cmd}}");
    assert!(cmd.ends_with(r#""--speculative-num-steps","3"]"#), "{cmd}");
    assert_eq!(s.info()["speculative_num_steps"], 3);
    // The old container is kept, stopped, for a rollback.
    let prev = format!("{}.sweepkit-prev", s.name());
    assert_eq!(c["previous"], prev.as_str());
    assert_eq!(s.c.inspect_other(&prev, "{{.Id}}"), old_id);
    assert_eq!(s.c.inspect_other(&prev, "{{.State.Running}}"), "false");
    // Everything but the command is as it was (no differences warned).
    assert!(
        !r.stderr().contains("differs in"),
        "the re-created container differs: {}",
        r.stderr()
    );
    // --restore: the previous definition, by renaming the kept one back.
    let r = s.swap(&["--container", s.name(), "--restore", "--port", &port]);
    let rec = r.expect_one(0);
    assert_eq!(rec["method"], "restore");
    assert_eq!(
        s.c.inspect("{{.Id}}"),
        old_id,
        "the kept container serves again"
    );
    assert_eq!(s.info()["speculative_num_steps"], 1);
    // Regression (issue 37): the swapped-away container was kept as
    // NAME.sweepkit-prev, a stopped copy of the last config. The original
    // is back itself, and nothing is kept.
    assert_eq!(s.c.family(), [s.name().to_string()], "{new_id} removed");
}

on_podman_and_docker!(
    container_that_ignores_sigterm_is_killed_after_its_stop_timeout,
    docker_container_that_ignores_sigterm_is_killed_after_its_stop_timeout,
    ignores_sigterm
);

fn ignores_sigterm(d: Option<&Dockerd>) {
    let s = Sim::start_in(d, "sigterm", &["--ignore-sigterm", "60s"]);
    let r = s.swap(&[
        "--container",
        s.name(),
        "--set",
        "speculative-num-steps=2",
        "--stop-timeout",
        "1s",
        "--resend-term-after",
        "0",
    ]);
    let rec = r.expect_one(0);
    let stop = &rec["stop"];
    assert_eq!(stop["result"], "sigkill_after_timeout", "{rec}");
    let detail = stop["detail"].as_str().unwrap();
    assert!(
        detail.contains("SIGKILL") && detail.contains("137"),
        "{detail}"
    );
    assert!(stop["duration_s"].as_f64().unwrap() >= 1.0, "{stop}");
    assert!(
        r.stderr().contains("(stop: sigkill_after_timeout)"),
        "{}",
        r.stderr()
    );
    assert_eq!(s.info()["speculative_num_steps"], 2);
}

on_podman_and_docker!(
    rollback_on_fail_brings_the_old_container_back_by_the_ready_rule,
    docker_rollback_on_fail_brings_the_old_container_back_by_the_ready_rule,
    rollback
);

fn rollback(d: Option<&Dockerd>) {
    let s = Sim::start_in(d, "rollback", &[]);
    let old_id = s.c.inspect("{{.Id}}");
    let old_cmd = s.c.inspect("{{json .Config.Cmd}}");
    // Crashes at once: the far-side job itself puts the old one back, and
    // the record keeps the new container's last log lines.
    let r = s.swap(&["--container", s.name(), "--set", "crash-on-load"]);
    let rec = r.expect_one(25);
    assert_eq!(rec["running"], "old", "{rec}");
    let tail = rec["log_tail"].to_string();
    assert!(tail.contains("CUDA out of memory"), "{rec}");
    assert_eq!(s.c.inspect("{{.Id}}"), old_id);
    // Crashes at the end of a 2 s load: after the job's start check, so
    // only the ready command can tell.
    let rec = support::late_crash_is_rolled_back(s.port, |edits| {
        s.swap(&[&["--container", s.name()], edits].concat())
    });
    assert_eq!(rec["type"], "failure");
    assert_eq!(s.c.inspect("{{.Id}}"), old_id, "the old container itself");
    assert_eq!(s.c.inspect("{{json .Config.Cmd}}"), old_cmd);
    assert_eq!(s.info()["speculative_num_steps"], 1);
}

#[test]
fn dry_run_prints_the_command_diff_and_engine_commands_and_changes_nothing() {
    if !testkit::podman::gate() {
        return;
    }
    let s = Sim::start("dry", &[]);
    let id = s.c.inspect("{{.Id}}");
    let r = swap(&[
        "--container",
        s.name(),
        "--set",
        "speculative-num-steps=5",
        "--dry-run",
    ]);
    r.expect_code(0);
    assert_eq!(r.one()["method"], "dry-run");
    let err = r.stderr();
    assert!(err.contains("-    \"1\"\n+    \"5\""), "{err}");
    assert!(
        err.contains(&format!("\"podman stop -t 10 {}\"", s.name())),
        "{err}"
    );
    assert!(err.contains("podman --runtime runc run -d --name"), "{err}");
    assert_eq!(s.c.inspect("{{.Id}}"), id);
    assert_eq!(s.c.family(), [s.name().to_string()]);
}

#[test]
fn swap_over_ssh_runs_the_engine_on_the_far_side() {
    if !testkit::podman::gate() {
        return;
    }
    let Some(sshd) = testkit::sshd::Sshd::start() else {
        return;
    };
    let s = Sim::start("ssh", &[]);
    let rec = support::swap_to_2_over_ssh(&sshd, &["--container", s.name()]);
    assert_eq!(rec["target"]["container"]["engine"], "podman");
    assert_eq!(rec["start"]["cmdline_verified"], true);
    assert_eq!(s.info()["speculative_num_steps"], 2);
}

/// Docker over ssh: the far side reaches the test's dockerd through an
/// exec prefix that sets DOCKER_HOST (ssh passes no environment).
#[test]
fn docker_swap_over_ssh_and_an_exec_prefix_runs_the_engine_on_the_far_side() {
    let Some(d) = Dockerd::start() else {
        return;
    };
    let Some(sshd) = testkit::sshd::Sshd::start() else {
        return;
    };
    let s = Sim::start_in(Some(&d), "ssh", &[]);
    let prefix = format!("env DOCKER_HOST={}", d.host);
    let rec = support::swap_to_2_over_ssh(
        &sshd,
        &[
            "--exec-prefix",
            &prefix,
            "--container",
            s.name(),
            "--engine",
            "docker",
        ],
    );
    assert_eq!(rec["target"]["exec_prefix"], prefix.as_str());
    assert_eq!(rec["target"]["container"]["engine"], "docker");
    assert_eq!(
        rec["target"]["container"]["id"],
        s.c.inspect("{{.Id}}").as_str()
    );
    assert_eq!(rec["start"]["cmdline_verified"], true);
    assert_eq!(s.info()["speculative_num_steps"], 2);
}

#[test]
fn bad_input_gives_one_line_and_its_exit_code() {
    if !testkit::podman::gate() {
        return;
    }
    // An unknown container: 20, nothing started.
    let r = swap(&testkit::words(
        "--container sweepkit-test-no-such --set a=1",
    ));
    r.expect_one_error(20, "container sweepkit-test-no-such: no such container");
    assert_eq!(r.one()["type"], "failure");
    // Docker's client without a daemon: 28 (a socket no daemon listens
    // on, so a machine's own dockerd cannot answer for it).
    let dir = testkit::temp_dir("noengine");
    let dead = format!("env DOCKER_HOST=unix://{}/none.sock", dir.display());
    let r = swap(&[
        "--container",
        "x",
        "--engine",
        "docker",
        "--exec-prefix",
        &dead,
        "--set",
        "a=1",
    ]);
    r.expect_one_error(28, "its engine does not answer");
    // No engine CLI at all on the far side (a prefix whose PATH has none).
    std::os::unix::fs::symlink("/bin/sh", dir.join("sh")).unwrap();
    let prefix = format!("env PATH={}", dir.display());
    let r = swap(&["--container", "x", "--exec-prefix", &prefix, "--set", "a=1"]);
    r.expect_one_error(28, "docker is not installed; podman is not installed");
    // A container with no command: its flags live in the entrypoint.
    let port = testkit::free_port().to_string();
    let sim = testkit::bin("llm-sim").display().to_string();
    let ep = serde_json::to_string(&[&sim, "--host", "127.0.0.1", "--port", &port]).unwrap();
    let c = Ctr::run("nocmd", &["--entrypoint", &ep], &[]);
    let id = c.inspect("{{.Id}}");
    let r = swap(&["--container", &c.name, "--set", "port=1"]);
    r.expect_one_error(20, "has no command (Config.Cmd is empty)");
    assert_eq!(c.inspect("{{.Id}}"), id, "nothing was re-created");
    // A value with shell metacharacters reaches the server as one word.
    let s = Sim::start("inert", &[]);
    let nasty = "m; touch PWNED $(touch PWNED2) `touch PWNED3` 'q\" \\ $HOME 7%";
    let r = swap(&[
        "--container",
        s.name(),
        "--set",
        &format!("model-name={nasty}"),
    ]);
    r.expect_code(0);
    assert_eq!(s.info()["served_model_name"], nasty);
    testkit::assert_no_pwned(&[".", "/"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// The host PID whose parent is `ppid` (from /proc), within 10 s.
fn child_of(ppid: u32) -> u32 {
    let t0 = std::time::Instant::now();
    loop {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: comm may hold spaces, so after ") ".
            let ppid_of = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid_of == Some(ppid) {
                return pid;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no child of {ppid}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

on_podman_and_docker!(
    gpu_memory_held_by_a_child_in_the_old_container_is_waited_for,
    docker_gpu_memory_held_by_a_child_in_the_old_container_is_waited_for,
    gpu_held_by_a_child
);

/// `--gpu` on a container: nvidia-smi lists host PIDs, and the process that
/// holds the GPU is often not the container's main one (vLLM's EngineCore
/// under its API server; any server under `--init`). llm-sim runs here
/// under an init (`--init`: tini for podman, docker-init for Docker), so
/// `State.Pid` is the init's and llm-sim is its child. No GPU on these
/// machines: a stand-in nvidia-smi, first on the far side's PATH (an exec
/// prefix), lists llm-sim's host PID as holding GPU memory until the test
/// lets it go, 2 s after llm-sim has exited (a driver that frees a dead
/// process's memory late). The stop waits for that: svc-swap found the
/// child's host PID through `podman top NAME hpid` / `docker top NAME -eo
/// pid` (with `State.Pid` alone it would not have waited). What no test
/// here shows: a real nvidia-smi's output.
fn gpu_held_by_a_child(d: Option<&Dockerd>) {
    let port = testkit::free_port();
    let init: &[&str] = match d {
        Some(_) => &["--init"],
        None => &["--init", "--init-path", "/usr/bin/tini"],
    };
    let s = Sim {
        c: Ctr::run_sim(d, "gpu", init, port, &[]),
        port,
    };
    s.info();
    let main: u32 = s.c.inspect("{{.State.Pid}}").parse().unwrap();
    let sim = child_of(main);
    let dir = testkit::temp_dir("gpu-smi");
    let (held, released, calls) = (dir.join("held"), dir.join("released"), dir.join("calls"));
    std::fs::write(&held, format!("{sim}\n")).unwrap();
    let smi = dir.join("nvidia-smi");
    std::fs::write(
        &smi,
        format!(
            "#!/bin/sh\necho \"$*\" >>'{}'\n[ -e '{}' ] || cat '{}'\n",
            calls.display(),
            released.display(),
            held.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Lets the GPU go 2 s after llm-sim is gone; says when.
    let rel = released.clone();
    let freer = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        while std::path::Path::new(&format!("/proc/{sim}")).exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "llm-sim never stopped"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_secs(2));
        std::fs::write(&rel, "").unwrap();
        std::time::Instant::now()
    });
    let prefix = format!("env PATH={}:/usr/sbin:/usr/bin:/sbin:/bin", dir.display());
    let r = s.swap(&[
        "--exec-prefix",
        &prefix,
        "--container",
        s.name(),
        "--set",
        "speculative-num-steps=2",
        "--gpu",
    ]);
    let done = std::time::Instant::now();
    r.expect_code(0);
    let rec = r.one();
    let stop = &rec["stop"];
    assert_eq!(stop["gpu"], "freed", "{rec}");
    let pids: Vec<u64> = stop["old_pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(
        pids.contains(&u64::from(sim)),
        "llm-sim's host PID {sim}: {stop}"
    );
    let freed_at = freer.join().unwrap();
    assert!(done > freed_at, "the swap did not wait for the GPU: {rec}");
    let asked = std::fs::read_to_string(&calls).unwrap();
    assert!(
        asked.contains("--query-compute-apps=pid --format=csv,noheader"),
        "{asked}"
    );
    // The re-created container kept --init and serves the new value.
    assert_eq!(s.c.inspect("{{.HostConfig.Init}}"), "true");
    assert_eq!(s.info()["speculative_num_steps"], 2);
    let _ = std::fs::remove_dir_all(dir);
}
