//! llm-sim as the tests' server: one builder for its command line (the
//! SGLang speculative flag set, load and warm-up times, a KV capacity) for
//! a process spec, a systemd unit or a container's argv, and the ways a
//! test starts it before a sweep.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::nspawn::Container;

use super::{dump, SpecFile};

/// SGLang's speculative flags without the depth: EAGLE, topk 1 (steps need
/// both, or pre-flight refuses them).
pub const EAGLE: &str = "--speculative-algorithm EAGLE --speculative-eagle-topk 1";

/// [`EAGLE`] with `--speculative-num-steps STEPS`.
pub fn eagle(steps: u32) -> String {
    format!("{EAGLE} --speculative-num-steps {steps}")
}

/// [`eagle`] as words, for an argv.
pub fn eagle_words(steps: u32) -> Vec<String> {
    eagle(steps).split(' ').map(String::from).collect()
}

/// `llm-sim --host H --port P --load-time L --warmup-time W
/// [--health-probe-time T] [--seed S]`, then the rest in the order given.
#[derive(Clone, Debug)]
pub struct SimExec {
    bin: String,
    host: String,
    pub port: u16,
    load: String,
    warmup: String,
    probe: Option<String>,
    seed: Option<u32>,
    rest: Vec<String>,
}

impl SimExec {
    /// The workspace's llm-sim on 127.0.0.1:`port`: loads for 200 ms, warms
    /// up for 100 ms, seed 1.
    pub fn local(port: u16) -> SimExec {
        SimExec {
            bin: testkit::bin("llm-sim").display().to_string(),
            host: "127.0.0.1".into(),
            port,
            load: "200ms".into(),
            warmup: "100ms".into(),
            probe: None,
            seed: Some(1),
            rest: Vec::new(),
        }
    }

    /// [`SimExec::local`] on a free port.
    pub fn free() -> SimExec {
        SimExec::local(testkit::free_port())
    }

    /// The same binary where containers bind it (`/opt/sweepkit/bin`).
    pub fn in_container(port: u16) -> SimExec {
        SimExec {
            bin: "/opt/sweepkit/bin/llm-sim".into(),
            ..SimExec::local(port)
        }
    }

    pub fn host(mut self, addr: &str) -> SimExec {
        self.host = addr.into();
        self
    }

    pub fn load(mut self, time: &str) -> SimExec {
        self.load = time.into();
        self
    }

    pub fn warmup(mut self, time: &str) -> SimExec {
        self.warmup = time.into();
        self
    }

    pub fn probe(mut self, time: &str) -> SimExec {
        self.probe = Some(time.into());
        self
    }

    pub fn seed(mut self, seed: u32) -> SimExec {
        self.seed = Some(seed);
        self
    }

    /// No `--seed`: llm-sim's own default.
    pub fn unseeded(mut self) -> SimExec {
        self.seed = None;
        self
    }

    /// `--kv-capacity-tokens N`.
    pub fn kv(self, tokens: u64) -> SimExec {
        self.flags(&format!("--kv-capacity-tokens {tokens}"))
    }

    /// [`eagle`]`(steps)`.
    pub fn eagle(self, steps: u32) -> SimExec {
        self.flags(&eagle(steps))
    }

    /// More flags, as one space-separated string.
    pub fn flags(mut self, flags: &str) -> SimExec {
        self.rest.extend(flags.split_whitespace().map(String::from));
        self
    }

    pub fn argv(&self) -> Vec<String> {
        let port = self.port.to_string();
        let mut v: Vec<String> = [&self.bin, "--host", &self.host, "--port", &port]
            .map(String::from)
            .to_vec();
        v.extend(["--load-time".into(), self.load.clone()]);
        v.extend(["--warmup-time".into(), self.warmup.clone()]);
        if let Some(p) = &self.probe {
            v.extend(["--health-probe-time".into(), p.clone()]);
        }
        if let Some(s) = self.seed {
            v.extend(["--seed".into(), s.to_string()]);
        }
        v.extend(self.rest.iter().cloned());
        v
    }

    /// The command line, as a spec's or unit's ExecStart.
    pub fn exec(&self) -> String {
        self.argv().join(" ")
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// A process spec `tag` for it, and its URL.
    pub fn spec(&self, tag: &str) -> (SpecFile, String) {
        (SpecFile::new(tag, &self.exec(), self.port), self.url())
    }

    /// [`SimExec::spec`], started once through svc-swap (no edits) and
    /// healthy, so a server runs before the sweep.
    pub fn running(&self, tag: &str) -> (SpecFile, String) {
        let (spec, url) = self.spec(tag);
        let out = Command::new(testkit::bin("svc-swap"))
            .args(["--spec", spec.s()])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "first start: {}", dump(&out));
        wait_healthy(self.port, Duration::from_secs(20));
        (spec, url)
    }

    /// Install it in `c` as `sim.service` (`service` more [Service] lines,
    /// each ending in a newline) and start it; the unit's ExecStart as
    /// `systemctl show` prints it.
    pub fn install(&self, c: &Container, service: &str) -> String {
        let unit = format!(
            "[Unit]\nDescription=llm-sim\n[Service]\nExecStart={}\n{service}",
            self.exec()
        );
        c.write_file("/etc/systemd/system/sim.service", &unit);
        c.sh("systemctl daemon-reload && systemctl start sim.service");
        c.sh("systemctl show -P ExecStart sim.service")
    }
}

/// Until `/health` on 127.0.0.1:`port` answers 200 (fails after `limit`).
pub fn wait_healthy(port: u16, limit: Duration) {
    let t0 = Instant::now();
    while testkit::http_get(port, "/health").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < limit, "never healthy");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port of `http://HOST:PORT`.
pub fn url_port(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// systemd-nspawn is a prerequisite: missing, the test fails (with why).
pub fn require_nspawn() {
    let why = testkit::nspawn::unavailable();
    assert!(why.is_none(), "{why:?}");
}

/// Boot a container with the workspace's binaries at `/opt/sweepkit/bin`.
pub fn boot() -> Container {
    let bin = testkit::bin("llm-sim");
    Container::boot(&[(bin.parent().unwrap(), "/opt/sweepkit/bin")]).expect("boot")
}
