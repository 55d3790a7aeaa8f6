//! GPU slots on this machine for the slot tests: llm-sim under process
//! specs `sim-K.spec` in one directory, each slot on its own free port
//! with a fake GPU list in `CUDA_VISIBLE_DEVICES` (llm-sim reports the list
//! it was given in /server_info, so a record shows which slot's server it
//! measured), steps 4 originally; the specs' servers are killed on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{upstream_of, SimExec, SweepArgs};

/// The key every slot sweep here sweeps, and its original value.
pub const KEY: &str = "speculative-num-steps";

/// The slots' specs, in one directory.
pub struct Slots {
    pub dir: PathBuf,
    pub ports: Vec<u16>,
    /// Each slot's fake GPUs (`0,1`, `2,3`, ...).
    pub gpus: Vec<String>,
    originals: Vec<String>,
}

impl Slots {
    /// `n` slots of `per` fake GPUs each, llm-sim loading for `load`;
    /// `more(k)`: slot k's extra flags.
    pub fn new(
        tag: &str,
        n: usize,
        per: usize,
        load: &str,
        more: impl Fn(usize) -> String,
    ) -> Slots {
        let dir = testkit::temp_dir(tag);
        let (mut ports, mut gpus, mut originals) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..n {
            let sim = SimExec::free().load(load).warmup("0s").unseeded();
            let sim = sim.flags(&more(k)).eagle(4);
            let g: Vec<String> = (k * per..(k + 1) * per).map(|g| g.to_string()).collect();
            let g = g.join(",");
            let text = format!(
                "ExecStart={}\nEnvironment=CUDA_VISIBLE_DEVICES={g}\nTimeoutStopSec=10\nPort={}\n",
                sim.exec(),
                sim.port
            );
            std::fs::write(dir.join(format!("sim-{k}.spec")), &text).unwrap();
            ports.push(sim.port);
            gpus.push(g);
            originals.push(text);
        }
        Slots {
            dir,
            ports,
            gpus,
            originals,
        }
    }

    /// `DIR/sim-{slot}.spec`: sweep's --spec for every slot.
    pub fn template(&self) -> String {
        self.dir.join("sim-{slot}.spec").display().to_string()
    }

    pub fn spec(&self, k: usize) -> PathBuf {
        self.dir.join(format!("sim-{k}.spec"))
    }

    pub fn results(&self) -> PathBuf {
        self.dir.join("r.jsonl")
    }

    /// Every slot's GPUs, as `--gpus` lists them.
    pub fn all_gpus(&self) -> String {
        self.gpus.join(",")
    }

    /// The sweep over every slot by `--gpus`, `values` of the key.
    pub fn sweep(&self, values: &str) -> SweepArgs {
        let per = self.gpus[0].split(',').count().to_string();
        SweepArgs::new()
            .args(&["--gpus", &self.all_gpus(), "--gpus-per-config", &per])
            .args(&["--spec", &self.template()])
            .args(&["--url", "http://127.0.0.1:{port}", "--server", "llm-sim"])
            .args(&["--ready-timeout", "60s"])
            .param(KEY, values)
            .results(&self.results())
    }

    /// Each spec is its original again, and its server runs that config.
    pub fn assert_restored(&self, why: &str) {
        self.assert_restored_first(self.ports.len(), why);
    }

    /// [`Slots::assert_restored`] for the first `n` slots (those a sweep
    /// used).
    pub fn assert_restored_first(&self, n: usize, why: &str) {
        for (k, text) in self.originals.iter().enumerate().take(n) {
            let now = std::fs::read_to_string(self.spec(k)).unwrap();
            assert_eq!(&now, text, "slot {k}'s spec restored: {why}");
            let info = server_info(self.ports[k]);
            assert_eq!(info["speculative_num_steps"], 4, "slot {k} live: {why}");
            assert_eq!(
                info["simulated_cuda_visible_devices"],
                self.gpus[k].as_str()
            );
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for k in 0..self.ports.len() {
            let pid = std::fs::read_to_string(format!("{}.pid", self.spec(k).display()));
            if let Some(pid) = pid.ok().and_then(|p| p.trim().parse::<u32>().ok()) {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// llm-sim's /server_info on `port`, once it answers (30 s at most).
pub fn server_info(port: u16) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some((200, b)) = testkit::http_get(port, "/server_info") {
            return serde_json::from_str(&b).unwrap();
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "port {port} silent");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Seconds since the epoch of an RFC 3339 stamp.
fn secs(stamp: &Value) -> f64 {
    let s = stamp.as_str().unwrap().trim_end_matches('Z');
    let t = humantime::parse_rfc3339_weak(s).unwrap();
    t.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A bench record's level: its start and its record's time.
pub fn bench_window(b: &Value) -> (f64, f64) {
    let p = &b["provenance"];
    (secs(&p["started_at"]), secs(&p["finished_at"]))
}

/// A bench record's load: its swap's start to its server's ready.
pub fn load_window(b: &Value) -> (f64, f64) {
    let swap = upstream_of(b, "swap").expect("a swap upstream");
    let ready = upstream_of(b, "ready").expect("a ready upstream");
    (
        secs(&swap["provenance"]["started_at"]),
        secs(&ready["provenance"]["finished_at"]),
    )
}

/// Whether two windows overlap.
pub fn overlap(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// The spec file a record's swap acted on.
pub fn swapped_spec(r: &Value) -> Option<&str> {
    upstream_of(r, "swap")?["target"]["unit"].as_str()
}

/// `dir/name` holds a JSON line per entry: parsed.
pub fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
