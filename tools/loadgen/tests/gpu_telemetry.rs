//! `--gpu-metrics` without a GPU: the parsers against the tools' own
//! output formats (tests/fixtures/dcgm_exporter_metrics.txt: NVIDIA
//! dcgm-exporter's README sample and etc/default-counters.csv;
//! tests/fixtures/nvidia_smi_query.csv: `nvidia-smi
//! --query-gpu=index,power.draw,memory.used,utilization.gpu
//! --format=csv,noheader,nounits`, nvidia-smi(1) and `--help-query-gpu`,
//! `[N/A]` where a board reports nothing), the live paths against a DCGM
//! exporter stand-in and an nvidia-smi stand-in run through
//! `--gpu-metrics-cmd`, and the one line a machine without a GPU gets.
//! On a machine with nvidia-smi the last test reads the real one.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use loadgen::scrape::gpu_parse::{dcgm, SmiGrouper};

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn dcgm_exporter_text_gives_each_gpus_power_energy_memory_and_load() {
    let s = dcgm(&fixture("dcgm_exporter_metrics.txt"), Instant::now());
    assert_eq!(s.gpus.len(), 2);
    assert_eq!(s.gpus[0].power_w, Some(409.692));
    assert_eq!(s.gpus[1].energy_mj, Some(31035686671.0));
    assert_eq!(
        s.gpus[0].memory_used_mib,
        Some(76547.0),
        "FB_USED, not FB_FREE"
    );
    assert_eq!(s.gpus[1].util_pct, Some(95.0));
}

#[test]
fn nvidia_smi_csv_groups_into_samples_and_keeps_na_absent() {
    let mut g = SmiGrouper::default();
    let t = Instant::now();
    let mut samples: Vec<_> = fixture("nvidia_smi_query.csv")
        .lines()
        .filter_map(|l| g.line(l, t))
        .collect();
    samples.extend(g.flush());
    assert_eq!(samples.len(), 3);
    assert!(samples.iter().all(|s| s.gpus.len() == 2));
    assert_eq!(samples[1].gpus[0].power_w, Some(412.02));
    assert_eq!(samples[1].gpus[1].power_w, None, "[N/A]");
    assert_eq!(samples[2].gpus[1].memory_used_mib, Some(76551.0));
}

/// A DCGM exporter stand-in: the fixture, each GPU's energy counter 100 J
/// (100000 mJ) higher at each GET.
fn dcgm_server() -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    let gets = Arc::new(AtomicU64::new(0));
    let n = gets.clone();
    let text = fixture("dcgm_exporter_metrics.txt");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|k| k > 2) {
                line.clear();
            }
            let i = n.fetch_add(1, Ordering::SeqCst);
            let body: String = text
                .lines()
                .map(|l| match l.rsplit_once(' ') {
                    Some((head, v)) if head.starts_with("DCGM_FI_DEV_TOTAL_ENERGY") => {
                        let v: u64 = v.parse().unwrap();
                        format!("{head} {}\n", v + i * 100_000)
                    }
                    _ => format!("{l}\n"),
                })
                .collect();
            let mut s = s;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, gets)
}

#[test]
fn a_dcgm_exporter_gives_energy_from_its_counter() {
    let (url, _) = dcgm_server();
    let s = exact_sim("20ms", "5ms");
    let r = load_sim(
        &s,
        &format!("-c 2 --duration 1s --max-tokens 8 --scrape-interval 200ms --gpu-metrics {url}"),
    );
    r.expect_code(0);
    check_contract(&r);
    let b = &benches(&r)[0];
    let g = &b["gpu"];
    assert_eq!(g["source"], "dcgm", "{g}");
    assert_eq!(g["origin"], url);
    assert_eq!(g["gpus"], 2);
    assert_eq!(g["energy_method"], "counter");
    // Two GPUs, 100 J more at each sample after the first.
    let samples = g["samples"].as_u64().unwrap();
    assert!(samples >= 4, "{g}");
    let energy = g["energy_j"].as_f64().unwrap();
    assert_eq!(energy, 200.0 * (samples - 1) as f64, "{g}");
    assert_eq!(g["power_w"]["mean"], 800.0);
    assert_eq!(g["power_w"]["source"], "DCGM_FI_DEV_POWER_USAGE");
    assert_eq!(g["memory_used_mib"]["peak"], 153094.0);
    let tokens = b["counts"]["output_tokens"].as_f64().unwrap();
    let per_token = g["energy_per_output_token_j"].as_f64().unwrap();
    assert!((per_token - energy / tokens).abs() < 1e-5, "{g}");
    let tok_s = b["throughput"]["output_tok_per_s"].as_f64().unwrap();
    let per_w = g["output_tok_per_s_per_w"].as_f64().unwrap();
    assert!((per_w - tok_s / 800.0).abs() < 1e-3, "{g}");
}

/// An nvidia-smi stand-in for `--gpu-metrics-cmd`: it checks the query it
/// is given and prints the fixture's samples every 100 ms, as `-lms 100`.
fn fake_smi(dir: &std::path::Path) -> String {
    let csv = dir.join("smi.csv");
    std::fs::write(&csv, fixture("nvidia_smi_query.csv")).unwrap();
    let script = dir.join("fake-smi.sh");
    std::fs::write(
        &script,
        format!(
            "case \"$*\" in *'nvidia-smi --query-gpu=index,power.draw,memory.used,utilization.gpu \
             --format=csv,noheader,nounits -lms 100'*) ;; *) echo \"bad query: $*\" >&2; exit 2;; esac\n\
             while :; do\n  head -2 {csv}; sleep 0.1; sed -n 3,4p {csv}; sleep 0.1\ndone\n",
            csv = csv.display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

#[test]
fn nvidia_smi_under_a_command_gives_power_and_its_integral() {
    let dir = testkit::temp_dir("gpu-smi");
    let cmd = fake_smi(&dir);
    let s = exact_sim("20ms", "5ms");
    let mut args = words("-c 2 --duration 1s --max-tokens 8 --scrape-interval 100ms --gpu-metrics nvidia-smi --gpu-metrics-cmd");
    args.push(&cmd);
    let r = load(&s.base_url(), &args);
    r.expect_code(0);
    let b = &benches(&r)[0];
    let g = &b["gpu"];
    assert_eq!(g["source"], "nvidia_smi", "{g}\n{}", r.stderr());
    assert_eq!(g["gpus"], 2);
    assert_eq!(g["energy_method"], "power_integral");
    assert_eq!(g["power_w"]["source"], "power.draw");
    assert_eq!(g["memory_used_mib"]["peak"], 153094.0);
    // Power alternates 800 W and 412 W (one GPU's [N/A]): energy is their
    // mean over the level's span, within the samples' spacing.
    let elapsed = b["throughput"]["elapsed_s"].as_f64().unwrap();
    let energy = g["energy_j"].as_f64().unwrap();
    let mean = g["power_w"]["mean"].as_f64().unwrap();
    assert!((412.0..=800.0).contains(&mean), "{g}");
    assert!(
        energy > 412.0 * elapsed && energy < 800.0 * (elapsed + 0.5),
        "{g} over {elapsed} s"
    );
}

#[test]
fn without_a_gpu_the_block_is_absent_and_said_once() {
    let s = exact_sim("5ms", "1ms");
    // A command that finds no nvidia-smi, whatever this machine has.
    let mut args = words("-c 1,2 -n 4 --max-tokens 4 --gpu-metrics nvidia-smi --gpu-metrics-cmd");
    args.push("env PATH=/nonexistent");
    let r = load(&s.base_url(), &args);
    r.expect_code(0);
    let b = benches(&r);
    assert!(b.iter().all(|x| x.get("gpu").is_none()));
    let err = r.stderr();
    assert_eq!(
        err.matches("--gpu-metrics: no GPU telemetry").count(),
        1,
        "{err}"
    );
    // And locally: the real nvidia-smi where there is one, else the line.
    let r = load(
        &s.base_url(),
        &words("-c 1 -n 4 --max-tokens 4 --gpu-metrics nvidia-smi"),
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let has_smi = std::process::Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success());
    if has_smi {
        assert_eq!(b["gpu"]["source"], "nvidia_smi", "{b}");
        assert!(b["gpu"]["gpus"].as_u64().unwrap() >= 1);
    } else {
        assert!(b.get("gpu").is_none());
        assert_eq!(
            r.stderr().matches("no GPU telemetry").count(),
            1,
            "{}",
            r.stderr()
        );
    }
}
