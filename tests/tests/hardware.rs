//! Records know where they ran (issue 15 item 2), over the built tools and
//! llm-sim: svc-swap's swap record names the target (here through an exec
//! prefix whose PATH finds a fake `nvidia-smi`), wait-ready reads the
//! host's hardware through that same transport, loadgen's bench records
//! keep it, every new field is documented, and summarize pools two runs
//! of identical hardware as repeats but refuses to rank a mixed pair.

mod sweep_support;

use std::process::Command;

use serde_json::Value;
use sweep_support::records::{bench_two_levels, conforms, one, two_levels, Server};
use testkit::{cmd, run, temp_dir};

/// svc-swap | wait-ready | loadgen for `steps`, with `prefix` given to
/// svc-swap only (wait-ready takes it from the swap record). The bench
/// records.
fn pipeline(s: &Server, prefix: Option<&str>, setting: &str) -> Vec<Value> {
    let mut args = vec!["--spec", &s.spec, "--set", setting];
    if let Some(p) = prefix {
        args.extend(["--exec-prefix", p]);
    }
    let swap = run(cmd("svc-swap", &args), "");
    swap.expect_code(0);
    let swap_rec = one(&swap, "swap");
    let url = format!("http://127.0.0.1:{}", s.port);
    let ready = run(
        cmd(
            "wait-ready",
            &["--server", "llm-sim", &url, "--timeout", "30s"],
        ),
        &swap_rec.to_string(),
    );
    ready.expect_code(0);
    let ready_rec = one(&ready, "ready");
    conforms(&ready_rec, "wait-ready");
    let benches = bench_two_levels(&two_levels(&url, "8"), &ready_rec);
    for b in &benches {
        conforms(b, "loadgen");
        assert_eq!(
            b["server"]["host"], ready_rec["server"]["host"],
            "bench keeps the host"
        );
    }
    benches
}

/// A directory holding a fake `nvidia-smi` that lists two L4s.
fn fake_smi(dir: &std::path::Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\n[ \"$*\" = '--query-gpu=name,memory.total --format=csv,noheader' ] \
         || exit 2\nprintf 'NVIDIA L4, 23034 MiB\\nNVIDIA L4, 23034 MiB\\n'\n",
    )
    .unwrap();
    Command::new("chmod")
        .args(["+x", smi.to_str().unwrap()])
        .status()
        .unwrap();
    format!("env PATH={}:/usr/local/bin:/usr/bin:/bin", bin.display())
}

fn lines(recs: &[Value]) -> String {
    recs.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn bench_records_name_the_host_and_hardware_locally_and_through_a_prefix() {
    let dir = temp_dir("hardware");
    let server = Server::new(&dir, "");
    let prefix = fake_smi(&dir);

    let local = pipeline(&server, None, "max-running-requests=8");
    let h = &local[0]["server"]["host"];
    assert_eq!(h["name"], "localhost", "{h}");
    assert!(h.get("exec_prefix").is_none(), "{h}");
    assert!(h["cpu_count"].as_u64().unwrap() >= 1, "{h}");
    assert!(local[0]["server"]["version"].is_string());

    let via = pipeline(&server, Some(&prefix), "max-running-requests=16");
    let h = &via[0]["server"]["host"];
    assert_eq!(
        h["exec_prefix"],
        prefix.as_str(),
        "from the swap record: {h}"
    );
    assert_eq!(h["gpus"].as_array().unwrap().len(), 2, "{h}");
    let fp = h["fingerprint"].as_str().unwrap();
    assert!(fp.starts_with("2x NVIDIA L4 (23034 MiB); "), "{fp}");

    // Two hosts of different hardware: one pick is refused (55), per host
    // it is two summaries, pooled one.
    let both = format!("{}{}", lines(&local), lines(&via));
    let r = run(cmd("summarize", &["--format", "json"]), &both);
    r.expect_code(55);
    assert!(r.stdout().is_empty());
    assert!(r.stderr().contains("different hardware"), "{}", r.stderr());
    let r = run(cmd("summarize", &["--format", "json", "--per-host"]), &both);
    r.expect_code(0);
    let recs = r.json_lines();
    assert_eq!(recs.len(), 2, "{}", r.stdout());
    for rec in &recs {
        conforms(rec, "summarize --per-host");
    }
    let r = run(
        cmd("summarize", &["--format", "json", "--pool-hosts"]),
        &both,
    );
    r.expect_code(0);
    assert_eq!(r.json_lines().len(), 1);

    // The same hardware measured twice (one host, two runs of a config)
    // stays one host: repeats, no note.
    let again = pipeline(&server, None, "max-running-requests=8");
    let same = format!("{}{}", lines(&local), lines(&again));
    let r = run(cmd("summarize", &["--format", "json"]), &same);
    r.expect_code(0);
    let cells = r.json_lines()[0]["details"]["cells"].clone();
    assert!(
        cells.as_array().unwrap().iter().all(|c| c["runs"] == 2),
        "{cells}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
