//! `--set-file` and a schedule's adaptive config, copied to the far side:
//! over the test sshd behind an exec prefix the file lands checked and the
//! server (llm-sim as SGLang) reads it there, and wait-ready, reading the
//! swap record, checks its SHA-256 there (changed: exit 13); a prefix that changes a byte
//! on the way in is refused with exit 29 and the running server untouched;
//! `--apply-from` a `summarize --schedule` record carries the adaptive
//! config through.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::sshd::Sshd;

struct Spec {
    dir: PathBuf,
    path: String,
    port: u16,
}

impl Spec {
    fn new(tag: &str) -> Spec {
        // A directory name that would run commands if spliced into a shell.
        let dir = testkit::temp_dir(tag).join("d $(touch PWNED) ;x 'q");
        std::fs::create_dir_all(&dir).unwrap();
        let port = testkit::free_port();
        let path = dir.join("sim.spec");
        std::fs::write(
            &path,
            format!(
                "ExecStart={} --host 127.0.0.1 --port {port} --load-time 10ms --warmup-time 10ms \
                 --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1\n\
                 TimeoutStopSec=10\nPort={port}\n",
                testkit::bin("llm-sim").display()
            ),
        )
        .unwrap();
        Spec {
            path: path.to_str().unwrap().into(),
            dir,
            port,
        }
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap()
    }

    fn pid(&self) -> String {
        std::fs::read_to_string(format!("{}.pid", self.path)).unwrap_or_default()
    }

    fn info(&self) -> Value {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if let Some((200, _)) = testkit::http_get(self.port, "/health") {
                let (_, b) = testkit::http_get(self.port, "/server_info").unwrap();
                return serde_json::from_str(&b).unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("llm-sim never healthy");
    }

    /// A far-side wrapper for --exec-prefix: runs its argv, and with
    /// `tamper` changes a byte of what the upload script reads (same size).
    fn prefix(&self, tamper: bool) -> String {
        let p = self
            .dir
            .parent()
            .unwrap()
            .join(if tamper { "tamper.sh" } else { "pass.sh" });
        let body = if tamper {
            "#!/bin/sh\ncase \"$3\" in \"# sweepkit-upload\"*) sed 's/3/4/' | \"$@\"; exit $? ;; esac\nexec \"$@\"\n"
        } else {
            "#!/bin/sh\nexec \"$@\"\n"
        };
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.to_str().unwrap().to_string()
    }

    fn local_file(&self, text: &str) -> String {
        let p = self
            .dir
            .parent()
            .unwrap()
            .join("my sched $(touch PWNED5).json");
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
}

impl Drop for Spec {
    fn drop(&mut self) {
        let pid = self.pid();
        if !pid.trim().is_empty() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", pid.trim())])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(self.dir.parent().unwrap());
    }
}

fn swap(pre: &[String], args: &[&str]) -> testkit::Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    c.env_remove("SSH_AUTH_SOCK");
    c.args(pre).args(args);
    testkit::run(c, "")
}

fn ssh_base(sshd: &Sshd) -> Vec<String> {
    vec![
        "--ssh".into(),
        sshd.target(),
        "--ssh-key".into(),
        sshd.client_key.to_str().unwrap().into(),
        "--known-hosts".into(),
        sshd.known_hosts.to_str().unwrap().into(),
    ]
}

fn one(r: &testkit::Run) -> Value {
    let v = r.json_lines();
    assert_eq!(v.len(), 1, "{}", r.stdout());
    v.into_iter().next().unwrap()
}

const ADAPTIVE: &str =
    "{\"1\": {\"candidate_steps\": [1, 3]}, \"8\": {\"candidate_steps\": [0, 1]}}\n";

fn sha256(path: &str) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(o.stdout).unwrap()[..64].to_string()
}

fn no_pwned(dirs: &[&Path]) {
    for d in dirs {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            assert!(
                !e.file_name().to_string_lossy().starts_with("PWNED"),
                "injection ran in {}",
                d.display()
            );
        }
    }
}

#[test]
fn set_file_over_ssh_behind_an_exec_prefix_lands_checked_and_is_served() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = Spec::new("setfile-ssh");
    let local = spec.local_file(ADAPTIVE);
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), spec.prefix(false)]);
    let set_file = format!("speculative-adaptive-config={local}");
    let args = [
        "--spec",
        &spec.path,
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-num-steps=3",
    ];
    let r = swap(&pre, &args);
    r.expect_code(0);
    let rec = one(&r);
    let f = &rec["files"][0];
    let far = f["far_path"].as_str().unwrap();
    assert_eq!(f["flag"], "--speculative-adaptive-config");
    assert_eq!(f["local_path"], local.as_str());
    assert_eq!(f["size_bytes"], ADAPTIVE.len());
    assert_eq!(f["sha256"], sha256(&local));
    assert_eq!(
        sha256(far),
        sha256(&local),
        "the far copy is the local file"
    );
    assert!(
        far.starts_with(&format!("{}.sweepkit-files/", spec.path)),
        "{far}"
    );
    assert_eq!(rec["config"]["speculative-adaptive-config"], far);
    // The server reads the far path and runs adaptive.
    let info = spec.info();
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    // Same file again: same far path, the live server already runs it.
    let r = swap(&pre, &args);
    r.expect_code(0);
    let again = one(&r);
    assert_eq!(again["noop"], true, "{again}");
    assert_eq!(again["files"][0]["far_path"], far);
    // wait-ready, with the record on stdin, checks the far copy over the
    // same SSH session and prefix: as copied it is ready; changed, exit 13.
    let ready = |stdin: &str| {
        let mut c = Command::new(testkit::bin("wait-ready"));
        c.env_remove("SSH_AUTH_SOCK");
        c.args(["--timeout", "20s", "--server", "sglang"]);
        testkit::run(c, stdin)
    };
    ready(&r.stdout()).expect_code(0);
    std::fs::write(far, "{\"1\": {\"candidate_steps\": [7]}}\n").unwrap();
    let w = ready(&r.stdout());
    w.expect_code(13);
    let reason = w.json_lines()[0]["reason"].to_string();
    assert!(
        reason.contains(&format!("file {far} has sha256")),
        "{reason}"
    );
    let parent = spec.dir.parent().unwrap();
    no_pwned(&[&spec.dir, parent, Path::new(".")]);
}

#[test]
fn a_copy_changed_on_the_way_is_refused_and_the_server_untouched() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = Spec::new("setfile-tamper");
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), spec.prefix(false)]);
    swap(
        &pre,
        &["--spec", &spec.path, "--set", "speculative-num-steps=3"],
    )
    .expect_code(0);
    let (pid, text) = (spec.pid(), spec.text());
    assert_eq!(spec.info()["speculative_num_steps"], 3);
    let local = spec.local_file(ADAPTIVE);
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), spec.prefix(true)]);
    let r = swap(
        &pre,
        &[
            "--spec",
            &spec.path,
            "--set-file",
            &format!("speculative-adaptive-config={local}"),
            "--set",
            "speculative-adaptive",
        ],
    );
    r.expect_code(29);
    let rec = one(&r);
    assert_eq!(rec["type"], "failure");
    assert_eq!(rec["exit_code"], 29);
    assert_eq!(rec["running"], "old");
    let err = r.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("arrived at") && lines[0].contains("nothing was stopped"),
        "{err}"
    );
    assert_eq!(spec.pid(), pid, "the server was not restarted");
    assert_eq!(spec.text(), text, "the spec is untouched");
    assert_eq!(spec.info()["speculative_num_steps"], 3);
    let files = format!("{}.sweepkit-files", spec.path);
    let left: Vec<_> = std::fs::read_dir(&files).map_or(vec![], |d| d.flatten().collect());
    assert!(left.is_empty(), "nothing left in {files}: {left:?}");
}

/// `summarize --schedule sglang`'s record, applied: the adaptive config it
/// carries becomes the far file; `replaces` keys are removed first.
#[test]
fn apply_from_a_schedule_record_copies_its_adaptive_config() {
    let spec = Spec::new("setfile-schedule");
    let sched = spec.dir.parent().unwrap().join("schedule.json");
    let rec = serde_json::json!({
        "type": "schedule", "schema": 1, "metric": "throughput.output_tok_per_s",
        "per_level": [], "max_batch": 48, "max_batch_source": "default",
        "replaces": ["speculative-num-steps"], "warnings": [], "simulated": true,
        "server": "sglang",
        "flags": ["--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "1",
                  "--speculative-num-steps", "3", "--speculative-adaptive",
                  "--speculative-adaptive-config", "speculative-adaptive.json"],
        "adaptive_config": {"1": {"candidate_steps": [3, 5]}, "16": {"candidate_steps": [1]}},
        "adaptive_config_file": "speculative-adaptive.json",
        "provenance": {"tool": "summarize", "version": "0", "started_at": "", "finished_at": ""}
    });
    std::fs::write(&sched, format!("{rec}\n")).unwrap();
    let r = swap(
        &[],
        &[
            "--spec",
            &spec.path,
            "--apply-from",
            sched.to_str().unwrap(),
        ],
    );
    r.expect_code(0);
    let out = one(&r);
    let f = &out["files"][0];
    let far = f["far_path"].as_str().unwrap();
    assert!(f["local_path"]
        .as_str()
        .unwrap()
        .ends_with("schedule.json#adaptive_config"));
    let copied: Value = serde_json::from_str(&std::fs::read_to_string(far).unwrap()).unwrap();
    assert_eq!(copied, rec["adaptive_config"]);
    let info = spec.info();
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    assert_eq!(info["speculative_num_steps"], 3);
}

/// Real podman: the copy goes to the host side of a bind mount of the
/// container (`--file-dir` names the directory inside it); the re-created
/// container keeps the mount and llm-sim in it reads the file at its
/// container path; wait-ready checks the host copy. Without `--file-dir`,
/// or with one no bind mount holds: exit 2, nothing stopped.
#[test]
fn a_container_swap_copies_through_a_bind_mount() {
    if !testkit::podman::gate() {
        return;
    }
    let spec = Spec::new("setfile-ctr");
    let host = spec.dir.parent().unwrap().join("mounted");
    std::fs::create_dir_all(&host).unwrap();
    let local = spec.local_file(ADAPTIVE);
    let port = testkit::free_port();
    let p = port.to_string();
    let sim = testkit::bin("llm-sim").display().to_string();
    let vol = format!("{}:/sched", host.display());
    let mut argv = vec![
        sim.as_str(),
        "--host",
        "127.0.0.1",
        "--port",
        &p,
        "--load-time",
        "10ms",
        "--warmup-time",
        "10ms",
    ];
    argv.extend(testkit::flags::eagle("1"));
    let c = testkit::podman::Ctr::run("setfile", &["-v", &vol], &argv);
    let set_file = format!("speculative-adaptive-config={local}");
    let base: Vec<String> = ["--container", &c.name, "--engine", "podman", "--port", &p]
        .map(String::from)
        .to_vec();
    let edits = [
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-num-steps=3",
    ];
    let r = swap(&base, &edits);
    r.expect_code(2);
    assert!(r.stderr().contains("give --file-dir"), "{}", r.stderr());
    let mut a = edits.to_vec();
    a.extend(["--file-dir", "/elsewhere"]);
    let r = swap(&base, &a);
    r.expect_code(2);
    assert!(r.stderr().contains("not on a bind mount"), "{}", r.stderr());
    let mut a = edits.to_vec();
    a.extend(["--file-dir", "/sched/adaptive"]);
    let r = swap(&base, &a);
    r.expect_code(0);
    let rec = one(&r);
    let f = &rec["files"][0];
    let far = f["far_path"].as_str().unwrap();
    let on_host = f["host_path"].as_str().unwrap();
    assert!(far.starts_with("/sched/adaptive/"), "{f}");
    assert!(on_host.starts_with(host.to_str().unwrap()), "{f}");
    assert_eq!(sha256(on_host), sha256(&local));
    let t0 = Instant::now();
    let info = loop {
        if let Some((200, b)) = testkit::http_get(port, "/server_info") {
            break serde_json::from_str::<Value>(&b).unwrap();
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "never served");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    let mut w = Command::new(testkit::bin("wait-ready"));
    w.args(["--timeout", "20s", "--server", "sglang"]);
    testkit::run(w, &r.stdout()).expect_code(0);
}
