//! What `make install` ships runs on its own: the installed `sweep` finds
//! its library (`--hosts`) and the tools it was installed with, from a PATH
//! that holds only the install PREFIX and the system, and off PATH too
//! (issue 21: `bin/lib/fleet.sh: No such file or directory`, and a sweep
//! that looked for the tools on PATH and in the repository only).
//! Needs `cargo build --workspace` and GNU parallel (`make deps`).

mod sweep_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sweep_support::{dump, fleet, records, with_config};

const KEY: &str = "speculative-num-steps";
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `make install-files PREFIX=<temp>` from the workspace's debug build.
fn install() -> PathBuf {
    let prefix = testkit::temp_dir("installed");
    let bin_src = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let out = Command::new("make")
        .args(["-s", "install-files"])
        .arg(format!("PREFIX={}", prefix.display()))
        .arg(format!("BIN_SRC={}", bin_src.display()))
        .current_dir(testkit::repo_root())
        .output()
        .expect("run make");
    assert!(out.status.success(), "make install-files: {}", dump(&out));
    prefix
}

/// A shell in a directory outside the repository, PATH as given.
fn shell(script: &str, path: &str, cwd: &Path) -> std::process::Output {
    Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .env_remove("SWEEPKIT_BIN")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_installed_sweep_runs_the_readme_fleet_examples_from_its_prefix_alone() {
    let prefix = install();
    let path = format!("{}/bin:{SYSTEM_PATH}", prefix.display());
    let blocks = sweep_support::readme_fleet_blocks();
    for block in &blocks {
        let dir = testkit::temp_dir("installed-readme");
        let script = format!("set -e\nsweep() {{ command sweep \"$@\" --dry-run; }}\n{block}");
        let out = shell(&script, &path, &dir);
        assert_eq!(out.status.code(), Some(0), "{block}\n{}", dump(&out));
        let plan = String::from_utf8_lossy(&out.stdout);
        assert!(plan.contains("# host 2: root@"), "{block}\n{plan}");
        // The plan names the installed tools, not the repository's.
        let swap = format!("{}/bin/svc-swap", prefix.display());
        assert!(plan.contains(&swap), "{block}\n{plan}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&prefix);
}

/// Every README example that runs `sweep`, by the installed sweep from a
/// PATH of the PREFIX and the system, in a directory outside the
/// repository: the llm-sim one for real (on a free port), the ones for GPU
/// hosts with `--dry-run`, as the user would paste them.
#[test]
fn the_installed_sweep_runs_every_readme_sweep_example_as_written() {
    let prefix = install();
    let path = format!("{}/bin:{SYSTEM_PATH}", prefix.display());
    let swap = format!("{}/bin/svc-swap", prefix.display());
    let (mut real, mut dry) = (0, 0);
    for block in sweep_support::readme_sweep_blocks() {
        let dir = testkit::temp_dir("installed-example");
        // The llm-sim example that writes its own spec runs for real; the
        // others (GPU hosts, slots whose containers the user made) as
        // dry runs.
        if block.contains("--server llm-sim") && block.contains(">sim.spec") {
            let port = testkit::free_port().to_string();
            let script = format!(
                "set -e\ntimeout 120 bash -e <<'EOS'\n{}\nEOS",
                block.replace("18080", &port)
            );
            let out = shell(&script, &path, &dir);
            // The example stops the simulator; a failed run may not have.
            if let Ok(pid) = std::fs::read_to_string(dir.join("sim.spec.pid")) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
            assert_eq!(out.status.code(), Some(0), "{block}\n{}", dump(&out));
            let recs = records(&dir.join("sim.jsonl"));
            for v in ["1", "2", "4"] {
                // One bench record per concurrency level (1 and 4).
                assert_eq!(
                    with_config(&recs, "bench", KEY, v).len(),
                    2,
                    "{v}: {}",
                    dump(&out)
                );
            }
            // The spec the example wrote, byte for byte (issue 33: the
            // restore joined its continued ExecStart line into one).
            let written = testkit::temp_dir("installed-example-spec");
            let head: String = block
                .replace("18080", &port)
                .lines()
                .take_while(|l| !l.starts_with("sweep "))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(
                shell(&head, &path, &written).status.code(),
                Some(0),
                "{head}"
            );
            let original = std::fs::read_to_string(written.join("sim.spec")).unwrap();
            let _ = std::fs::remove_dir_all(&written);
            let spec = std::fs::read_to_string(dir.join("sim.spec")).unwrap();
            assert_eq!(spec, original, "restored byte for byte");
            assert!(
                spec.contains("--speculative-num-steps 1") && !spec.contains("-steps 4"),
                "restored: {spec}"
            );
            real += 1;
        } else {
            // A spec the example names in the user's home (the Slurm one):
            // the temp dir is that home, holding an SGLang process spec.
            std::fs::write(
                dir.join("sglang.spec"),
                "Port=30000\nExecStart=/opt/sglang/bin/python -m sglang.launch_server \\\n  \
                 --model-path /models/moe --port 30000 --speculative-algorithm EAGLE \\\n  \
                 --speculative-eagle-topk 1 --speculative-num-steps 3\n",
            )
            .unwrap();
            let script = format!(
                "set -e\nexport HOME='{}'\nsweep() {{ command sweep \"$@\" --dry-run; }}\n{block}",
                dir.display()
            );
            let out = shell(&script, &path, &dir);
            assert_eq!(out.status.code(), Some(0), "{block}\n{}", dump(&out));
            let plan = String::from_utf8_lossy(&out.stdout);
            let slurm = block.contains("--slurm");
            assert!(
                plan.contains("# [1/") || (slurm && plan.contains("sbatch")),
                "{block}\n{plan}"
            );
            assert!(plan.contains(&swap), "the installed tools: {block}\n{plan}");
            dry += 1;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(real >= 1 && dry >= 3, "{real} real, {dry} dry");
    let _ = std::fs::remove_dir_all(&prefix);
}

/// A real pool sweep (`--hosts -`, GNU parallel, scripts/lib/fleet.sh) by
/// the installed sweep called by its path, with no tool on PATH.
#[test]
fn the_installed_sweep_off_path_finds_its_tools_and_its_library() {
    let prefix = install();
    let (spec, port) = fleet::local_spec("installed-pool");
    let original = spec.exec_start();
    let script = format!(
        "timeout 60 '{}/bin/sweep' --hosts - --spec '{}' --url http://127.0.0.1:{port} \
         --server llm-sim --param {KEY} --values 1,2 --results '{}' \
         --load-arg -n --load-arg 2 --load-arg --warmup --load-arg 0 \
         --load-arg --max-tokens --load-arg 8",
        prefix.display(),
        spec.s(),
        spec.results().display()
    );
    let out = shell(&script, SYSTEM_PATH, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&spec.results());
    for v in ["1", "2"] {
        assert_eq!(
            with_config(&recs, "bench", KEY, v).len(),
            1,
            "{v}: {}",
            dump(&out)
        );
    }
    let tool = recs[0]["provenance"]["tool"].as_str().unwrap_or("");
    assert_eq!(tool, "loadgen", "{}", dump(&out));
    assert_eq!(spec.exec_start(), original, "restored");
    let _ = std::fs::remove_dir_all(&prefix);
}
