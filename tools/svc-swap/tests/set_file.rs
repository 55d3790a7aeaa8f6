//! `--set-file` and a schedule's adaptive config, copied to the far side:
//! over the test sshd behind an exec prefix the file lands checked and the
//! server (llm-sim as SGLang) reads it there, and wait-ready, reading the
//! swap record, checks its SHA-256 there (changed: exit 13); a prefix that changes a byte
//! on the way in is refused with exit 29 and the running server untouched;
//! `--apply-from` a `summarize --schedule` record carries the adaptive
//! config through; a vLLM schedule's JSON takes in the dotted
//! `--speculative-config.FIELD` flags left on the line, and runs live.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{ssh_base, SimSpec};
use testkit::sshd::Sshd;
use testkit::Run;

mod support;

use support::EAGLE;

/// llm-sim as SGLang speculating with EAGLE, its spec in a shell-hostile
/// directory name.
fn sim_spec(tag: &str) -> SimSpec {
    SimSpec::in_shell_dir(tag, EAGLE)
}

/// A far-side wrapper for --exec-prefix: runs its argv, and with
/// `tamper` changes a byte of what the upload script reads (same size).
fn prefix(spec: &SimSpec, tamper: bool) -> String {
    let p = spec
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

/// `text` in a local file whose name would run commands in a shell.
fn local_file(spec: &SimSpec, text: &str) -> String {
    let p = spec
        .dir
        .parent()
        .unwrap()
        .join("my sched $(touch PWNED5).json");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn swap(pre: &[String], args: &[&str]) -> Run {
    support::swap_with(pre, args, "")
}

const ADAPTIVE: &str =
    "{\"1\": {\"candidate_steps\": [1, 3]}, \"8\": {\"candidate_steps\": [0, 1]}}\n";

fn sha256(path: &str) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(o.stdout).unwrap()[..64].to_string()
}

#[test]
fn set_file_over_ssh_behind_an_exec_prefix_lands_checked_and_is_served() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = sim_spec("setfile-ssh");
    let local = local_file(&spec, ADAPTIVE);
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), prefix(&spec, false)]);
    let set_file = format!("speculative-adaptive-config={local}");
    let mut args = vec!["--spec", &spec.spec];
    args.extend(support::set_adaptive(
        &set_file,
        &["--set", "speculative-num-steps=3"],
    ));
    let r = swap(&pre, &args);
    let rec = r.expect_one(0);
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
        far.starts_with(&format!("{}.sweepkit-files/", spec.spec)),
        "{far}"
    );
    assert_eq!(rec["config"]["speculative-adaptive-config"], far);
    // The server reads the far path and runs adaptive.
    let info = spec.server_info();
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    // Same file again: same far path, the live server already runs it.
    let r = swap(&pre, &args);
    let again = r.expect_one(0);
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
    testkit::assert_no_pwned(&[spec.dir.as_path(), parent, Path::new(".")]);
}

#[test]
fn a_copy_changed_on_the_way_is_refused_and_the_server_untouched() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = sim_spec("setfile-tamper");
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), prefix(&spec, false)]);
    swap(
        &pre,
        &["--spec", &spec.spec, "--set", "speculative-num-steps=3"],
    )
    .expect_code(0);
    let (pid, text) = (spec.pid(), spec.text());
    assert_eq!(spec.server_info()["speculative_num_steps"], 3);
    let local = local_file(&spec, ADAPTIVE);
    let mut pre = ssh_base(&sshd);
    pre.extend(["--exec-prefix".into(), prefix(&spec, true)]);
    let r = swap(
        &pre,
        &[
            "--spec",
            &spec.spec,
            "--set-file",
            &format!("speculative-adaptive-config={local}"),
            "--set",
            "speculative-adaptive",
        ],
    );
    let rec = r.expect_one(29);
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
    assert_eq!(spec.server_info()["speculative_num_steps"], 3);
    let files = format!("{}.sweepkit-files", spec.spec);
    let left: Vec<_> = std::fs::read_dir(&files).map_or(vec![], |d| d.flatten().collect());
    assert!(left.is_empty(), "nothing left in {files}: {left:?}");
}

/// A `summarize --schedule sglang` record (depth swept: it replaces
/// `speculative-num-steps`), written beside `spec`: its path and JSON.
fn schedule_record(spec: &SimSpec) -> (String, Value) {
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
    (sched.to_str().unwrap().to_string(), rec)
}

/// `summarize --schedule sglang`'s record, applied: the adaptive config it
/// carries becomes the far file; `replaces` keys are removed first.
#[test]
fn apply_from_a_schedule_record_copies_its_adaptive_config() {
    let spec = sim_spec("setfile-schedule");
    let (sched, rec) = schedule_record(&spec);
    let r = swap(&[], &["--spec", &spec.spec, "--apply-from", &sched]);
    let out = r.expect_one(0);
    let f = &out["files"][0];
    let far = f["far_path"].as_str().unwrap();
    assert!(f["local_path"]
        .as_str()
        .unwrap()
        .ends_with("schedule.json#adaptive_config"));
    let copied: Value = serde_json::from_str(&std::fs::read_to_string(far).unwrap()).unwrap();
    assert_eq!(copied, rec["adaptive_config"]);
    let info = spec.server_info();
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    assert_eq!(info["speculative_num_steps"], 3);
}

/// Regression: applying a schedule removed the swept flag it replaces and
/// set it again at the end of the line, so sweep's final restore (the
/// swept flag's old value, and the schedule's other changes undone) left
/// the flag at the end: the same meaning, not the same file. A replaced
/// flag the schedule sets is now set where it stands: applied, then
/// undone the way sweep undoes it, the spec is byte for byte the original.
#[test]
fn a_schedule_applied_then_undone_gives_back_the_spec_byte_for_byte() {
    // The swept flag stands in the middle of the line.
    let spec = SimSpec::in_shell_dir(
        "setfile-sched-undo",
        "--speculative-num-steps 1 --speculative-algorithm EAGLE --speculative-eagle-topk 1",
    );
    let original = spec.text();
    let (sched, _) = schedule_record(&spec);
    let r = swap(&[], &["--spec", &spec.spec, "--apply-from", &sched]);
    let rec = r.expect_one(0);
    let line = spec.text();
    assert!(
        line.contains("--speculative-num-steps 3 --speculative-algorithm EAGLE"),
        "set in place: {line}"
    );
    // sweep's restore: the swept flag's origin value (sweep-plan restore),
    // then every other change of the schedule's swap undone (sweep-plan
    // schedule --words restore: the old value, or --unset where none).
    let mut undo = vec!["--set".to_string(), "speculative-num-steps=1".into()];
    for c in rec["changes"].as_array().unwrap() {
        let flag = c["flag"].as_str().unwrap();
        if flag == "--speculative-num-steps" {
            assert_eq!(c["old"], "1", "the old value, not an addition: {c}");
            continue;
        }
        match c["old"].as_str() {
            Some(old) => undo.extend(["--set".into(), format!("{flag}={old}")]),
            None => undo.extend(["--unset".into(), flag.to_string()]),
        }
    }
    let mut a = vec!["--spec", spec.spec.as_str(), "--no-preflight"];
    a.extend(undo.iter().map(String::as_str));
    swap(&[], &a).expect_one(0);
    assert_eq!(spec.text(), original, "byte for byte (undo: {undo:?})");
    assert_eq!(spec.server_info()["speculative_num_steps"], 1);
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
    let spec = sim_spec("setfile-ctr");
    let host = spec.dir.parent().unwrap().join("mounted");
    std::fs::create_dir_all(&host).unwrap();
    let local = local_file(&spec, ADAPTIVE);
    let port = testkit::free_port();
    let p = port.to_string();
    let vol = format!("{}:/sched", host.display());
    let c = testkit::podman::Ctr::run_sim(None, "setfile", &["-v", &vol], port, &[]);
    let set_file = format!("speculative-adaptive-config={local}");
    let base: Vec<String> = ["--container", &c.name, "--engine", "podman", "--port", &p]
        .map(String::from)
        .to_vec();
    let edits = support::set_adaptive(&set_file, &["--set", "speculative-num-steps=3"]);
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
    let rec = r.expect_one(0);
    let f = &rec["files"][0];
    let far = f["far_path"].as_str().unwrap();
    let on_host = f["host_path"].as_str().unwrap();
    assert!(far.starts_with("/sched/adaptive/"), "{f}");
    assert!(on_host.starts_with(host.to_str().unwrap()), "{f}");
    assert_eq!(sha256(on_host), sha256(&local));
    let info = testkit::server_info_within(port, Duration::from_secs(30), || "never served".into());
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_adaptive_config"], far);
    let mut w = Command::new(testkit::bin("wait-ready"));
    w.args(["--timeout", "20s", "--server", "sglang"]);
    testkit::run(w, &r.stdout()).expect_code(0);
}

/// A `summarize --schedule vllm` record (the dotted depth swept).
const VLLM_SCHEDULE: &str = r#"{"type":"schedule","schema":1,"metric":"throughput.output_tok_per_s","per_level":[],"max_batch":64,"max_batch_source":"default","replaces":["speculative-config.num_speculative_tokens"],"warnings":[],"simulated":true,"server":"vllm","flags":["--speculative-config","{\"num_speculative_tokens\":4,\"num_speculative_tokens_per_batch_size\":[[1,1,4],[2,64,1]]}"],"speculative_config":{"num_speculative_tokens":4,"num_speculative_tokens_per_batch_size":[[1,1,4],[2,64,1]]},"provenance":{"tool":"summarize","version":"0","started_at":"","finished_at":""}}"#;

/// Regression: a vLLM schedule applied onto a line with other dotted
/// `--speculative-config.FIELD` flags left them beside its whole JSON, and
/// vLLM's FlexibleArgumentParser (llm-sim as vLLM, faithfully) replaced
/// the JSON with them: `{"method": "eagle"}` without a depth, refused at
/// start (exit 25, the old config back). Now they fold into the JSON: the
/// live server runs the schedule (wait-ready's `--expect-config`), the
/// record names each removed flag with its old value, and undoing the
/// changes as sweep's end does gives back the same flags (the dotted ones
/// now after the swept one).
#[test]
fn a_vllm_schedule_folds_the_dotted_fields_and_runs_live() {
    let dotted = "--personality vllm --speculative-config.method eagle \
                  --speculative-config.num_speculative_tokens 2 \
                  --speculative_config.model=/m/draft";
    let spec = SimSpec::new("setfile-vllm-fold", dotted);
    spec.start();
    let sched = spec.file("schedule.json", &format!("{VLLM_SCHEDULE}\n"));
    let r = spec.swap(&["--apply-from", &sched]);
    let rec = r.expect_one(0);
    let text = spec.text();
    assert!(!text.contains("--speculative-config."), "{text}");
    assert!(!text.contains("--speculative_config."), "{text}");
    // wait-ready on the live server, its `--expect-config` words.
    let live = |expect: &[&str], stdin: &str| {
        let mut w = Command::new(testkit::bin("wait-ready"));
        w.args(["--server", "vllm", "--timeout", "20s"]);
        for e in expect {
            w.args(["--expect-config", e]);
        }
        w.arg(format!("http://127.0.0.1:{}", spec.port));
        testkit::run(w, stdin).expect_code(0);
    };
    let ranges = "speculative-config.num_speculative_tokens_per_batch_size=[[1,1,4],[2,64,1]]";
    let method = "speculative-config.method=eagle";
    let k4 = "speculative-config.num_speculative_tokens=4";
    live(&[ranges, method, k4], &r.stdout());
    let changes: Vec<(String, Value)> = rec["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["flag"].as_str().unwrap().to_string(), c["old"].clone()))
        .collect();
    let want = [
        ("--speculative-config.num_speculative_tokens", "2".into()),
        ("--speculative-config", Value::Null),
        ("--speculative-config.method", "eagle".into()),
        ("--speculative_config.model", "/m/draft".into()),
    ];
    assert_eq!(changes.len(), want.len(), "{changes:?}");
    for ((f, old), (wf, wold)) in changes.iter().zip(want) {
        assert_eq!((f.as_str(), old), (wf, &wold));
    }
    // sweep's end: the swept key's original value (sweep-plan restore),
    // then the schedule's other changes undone (sweep-plan schedule.rs
    // `restore_words`).
    let mut undo = vec![
        "--no-preflight".to_string(),
        "--set".into(),
        "speculative-config.num_speculative_tokens=2".into(),
    ];
    for (flag, old) in &changes[1..] {
        match old.as_str() {
            Some(o) => undo.extend(["--set".into(), format!("{flag}={o}")]),
            None => undo.extend(["--unset".into(), flag.clone()]),
        }
    }
    let undo: Vec<&str> = undo.iter().map(String::as_str).collect();
    let r = spec.swap(&undo);
    r.expect_one(0);
    let back = spec.text();
    assert!(
        back.contains(
            "--personality vllm --speculative-config.num_speculative_tokens 2 \
             --speculative-config.method eagle --speculative_config.model /m/draft\n"
        ),
        "{back}"
    );
    live(
        &["speculative-config.num_speculative_tokens=2", method],
        &r.stdout(),
    );
}
