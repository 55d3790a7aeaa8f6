//! The upstream record on stdin (svc-swap's swap record): where the server
//! lives (unit, manager, pid, log, exec prefix, SSH host, port), so
//! `svc-swap ... | wait-ready` needs no extra flags; a failure record is
//! passed through.

use std::io::BufRead;

use serde_json::Value;
use sweepkit::exit::Exit;
use sweepkit::records::{Config, Record, ServiceManager, ServiceTarget};
use sweepkit::upstream_input::{self as upstream, Reader};

/// What the upstream record tells wait-ready.
#[derive(Debug, Default, Clone)]
pub struct Upstream {
    /// The whole record, kept in our record's `upstream`.
    pub raw: Option<Value>,
    pub config: Config,
    pub unit: Option<String>,
    pub pid: Option<u32>,
    pub log: Option<String>,
    /// Size of `log` before this instance started (`start.log_offset`):
    /// a process manager appends every instance to the same file.
    pub log_offset: Option<u64>,
    pub exec_prefix: Option<String>,
    pub ssh: Option<String>,
    pub port: Option<u16>,
    pub invocation_id: Option<String>,
    /// The swap record's whole target: how to reach the far side (SSH
    /// destination, key paths, known_hosts, accept-new, exec prefix).
    pub target: Option<ServiceTarget>,
    /// The container svc-swap re-created (`target.container`) and its
    /// engine.
    pub container: Option<(String, String)>,
    /// Files svc-swap copied to the far side for a flag, to check there.
    pub files: Vec<sweepkit::records::CopiedFile>,
}

/// What was on stdin.
pub enum Input {
    /// Nothing (terminal, --no-stdin or empty).
    None,
    Record(Box<Upstream>),
    /// A failure record: write it through and exit 4.
    Failure(Value),
}

/// Read the first record on `stdin` with the core reader (its kinds and
/// exit codes: `sweepkit::upstream_input`). Errors name the line.
pub fn read(stdin: impl BufRead) -> Result<Input, Exit> {
    let reader = Reader::new("<stdin>", upstream::SERVER).hint("use --no-stdin to ignore stdin");
    Ok(match reader.read(stdin)? {
        upstream::Upstream::None => Input::None,
        upstream::Upstream::Failure(raw) => Input::Failure(raw),
        upstream::Upstream::Record(rec, raw) => Input::Record(Box::new(from_record(&rec, raw))),
    })
}

/// What wait-ready takes from an accepted record.
fn from_record(rec: &Record, raw: Value) -> Upstream {
    let mut up = Upstream {
        config: rec.config().clone(),
        ..Default::default()
    };
    match rec {
        Record::Swap(s) => {
            let t = &s.target;
            if t.manager == ServiceManager::Systemd && !t.unit.is_empty() {
                up.unit = Some(t.unit.clone());
            }
            up.pid = s.start.main_pid;
            up.invocation_id = s.start.invocation_id.clone();
            up.log = t.log.clone();
            // Read from the raw record: svc-swap may add the field before
            // this version's ServiceTarget knows it.
            up.log_offset = raw.pointer("/start/log_offset").and_then(Value::as_u64);
            up.exec_prefix = t.exec_prefix.clone();
            up.ssh = t.ssh.clone();
            up.port = t.port;
            up.container = t
                .container
                .as_ref()
                .map(|c| (c.name.clone(), c.engine.clone()));
            up.target = Some(t.clone());
            up.files = s.files.clone();
        }
        // A ready record (a second wait in a chain) or a bench record (a
        // wait after a load run): keep it as upstream, and the swap
        // record's facts found by following its own `upstream`.
        _ => {
            if let Some(Ok(Input::Record(inner))) = raw
                .get("upstream")
                .map(|u| read(format!("{u}\n").as_bytes()))
            {
                up = Upstream {
                    config: up.config,
                    ..*inner
                };
            }
        }
    }
    up.raw = Some(raw);
    up
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWAP: &str = r#"{"type":"swap","schema":1,"config":{"speculative-num-steps":"4"},
"provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},
"target":{"manager":"systemd","unit":"sglang.service","exec_prefix":"pct exec 129 --","port":30000},
"changes":[],"exec_start":[],"stop":{"result":"clean","duration_s":1.0},
"start":{"started_at":"z","main_pid":42,"invocation_id":"abc"},"method":"drop-in"}"#;

    #[test]
    fn swap_record_gives_the_target() {
        let line = SWAP.replace('\n', "") + "\n";
        let Input::Record(u) = read(line.as_bytes()).unwrap() else {
            panic!("no record")
        };
        assert_eq!(u.unit.as_deref(), Some("sglang.service"));
        assert_eq!(u.pid, Some(42));
        assert_eq!(u.port, Some(30000));
        assert_eq!(u.exec_prefix.as_deref(), Some("pct exec 129 --"));
        let t = u.target.as_ref().expect("the whole target is kept");
        assert_eq!(t.exec_prefix.as_deref(), Some("pct exec 129 --"));
        assert_eq!(u.config["speculative-num-steps"], "4");
        assert!(u.raw.is_some());
    }

    /// A wait after loadgen: the bench record's upstream is a ready record
    /// whose upstream is the swap record; the swap's facts are found.
    #[test]
    fn bench_record_leads_back_to_the_swap() {
        let swap: Value = serde_json::from_str(&SWAP.replace('\n', "")).unwrap();
        let ready = serde_json::json!({"type": "ready", "schema": 1,
            "config": {"speculative-num-steps": "4"},
            "provenance": {"tool": "wait-ready", "version": "0", "started_at": "x",
                "finished_at": "y"},
            "outcome": "ready", "reason": "ok", "targets": [], "elapsed_s": 1.0,
            "attempts": 1, "upstream": swap});
        // The ready record alone already leads back to the swap.
        let Input::Record(r) = read(format!("{ready}\n").as_bytes()).unwrap() else {
            panic!("no record")
        };
        assert_eq!(r.unit.as_deref(), Some("sglang.service"));
        // A real bench record (the fixture campaign's first line).
        let campaign = include_str!("../../../tests/fixtures/campaign.jsonl");
        let mut bench: Value = serde_json::from_str(campaign.lines().next().unwrap()).unwrap();
        bench["upstream"] = ready;
        let Input::Record(u) = read(format!("{bench}\n").as_bytes()).unwrap() else {
            panic!("no record")
        };
        assert_eq!(u.unit.as_deref(), Some("sglang.service"));
        assert_eq!(u.pid, Some(42));
        assert_eq!(u.port, Some(30000));
        // The bench record's own config, and the bench record kept whole.
        assert_eq!(u.config["speculative-num-steps"], "0");
        assert_eq!(u.raw.as_ref().unwrap()["type"], "bench");
    }

    #[test]
    fn empty_and_bad_input() {
        assert!(matches!(read("\n".as_bytes()).unwrap(), Input::None));
        let e = read("\nnot json\n".as_bytes()).err().unwrap();
        assert_eq!(e.code, sweepkit::exit::BAD_INPUT);
        let e = format!("{:#}", e.error.unwrap());
        assert!(e.starts_with("<stdin>: line 2: not JSON"), "{e}");
        let bench = r#"{"type":"summary","schema":1,"provenance":{"tool":"s","version":"0","started_at":"x","finished_at":"y"},"metric":"m","objective":"max","best_config":{},"best_per_level":{}}"#;
        let e = read(format!("{bench}\n").as_bytes()).err().unwrap();
        assert_eq!(e.code, sweepkit::exit::BAD_INPUT);
        let e = e.error.unwrap().to_string();
        assert!(
            e.contains("expected a swap, ready or bench record, got a summary"),
            "{e}"
        );
    }
}
