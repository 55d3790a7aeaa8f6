//! The original config, for every restore: the origin record a results
//! file's first start writes (from a dry-run swap's old values), the
//! `--set`/`--unset` words that put it back, and the record of a host the
//! fleet stopped using (whose upstream is that host's origin record).

use std::time::SystemTime;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::records::{
    Config, FailureKind, FailureRecord, OriginRecord, Record, Stage, SCHEMA_VERSION,
};
use sweepkit::report::Exit;

use crate::read::read_text;

/// The first origin record of `text`, if any.
pub fn find(text: &str) -> Option<OriginRecord> {
    text.lines()
        .find_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(o)) => Some(o),
            _ => None,
        })
}

/// FILE's origin record (none: exit::ORIGIN_MISSING).
pub fn read(file: &str) -> Result<OriginRecord, Exit> {
    find(&read_text(file, false)?)
        .ok_or_else(|| Exit::new(exit::ORIGIN_MISSING, anyhow!("{file}: no origin record")))
}

/// svc-swap's words that put back the original of `rec` (FILE's origin
/// record); every swept key (`keys`) must be in it.
pub fn restore_words(rec: &OriginRecord, file: &str, keys: &[String]) -> Result<Vec<String>, Exit> {
    restore_args(rec, keys).map_err(|k| {
        Exit::new(
            exit::ORIGIN_MISSING,
            anyhow!("{file}: its origin record has no original value for {k} (a results file is for one set of --param); use a new --results FILE"),
        )
    })
}

/// The origin record for a dry-run swap record: each changed flag's old
/// value is the original (`null`: the flag was absent).
pub fn new_origin(swap: &Value, started: SystemTime) -> Result<OriginRecord, String> {
    let rec: Record =
        serde_json::from_value(swap.clone()).map_err(|e| format!("not a record: {e}"))?;
    let Record::Swap(s) = rec else {
        return Err(format!(
            "expected a swap record, got a {} record",
            rec.kind()
        ));
    };
    if s.changes.is_empty() {
        return Err("the swap record lists no changes: nothing to restore".into());
    }
    let mut o = OriginRecord {
        schema: SCHEMA_VERSION,
        provenance: sweepkit::Provenance::new("sweep-plan", started),
        target: s.target.clone(),
        upstream: Some(swap.clone()),
        config: Config::new(),
        ..OriginRecord::default()
    };
    for c in &s.changes {
        match &c.old {
            Some(v) => {
                o.set.insert(c.flag.clone(), v.clone());
                o.config
                    .insert(c.flag.trim_start_matches('-').into(), v.clone());
            }
            None => o.unset.push(c.flag.clone()),
        }
    }
    Ok(o)
}

/// svc-swap's words that put `o` back: `--set FLAG=VALUE` and
/// `--unset FLAG`, one word each. Every swept key must be in it, else
/// the results file is another sweep's (`Err` names the first missing).
pub fn restore_args(o: &OriginRecord, keys: &[String]) -> Result<Vec<String>, String> {
    let has = |k: &str| {
        o.set
            .keys()
            .chain(&o.unset)
            .any(|f| f.trim_start_matches('-') == k)
    };
    if let Some(k) = keys.iter().find(|k| !has(k)) {
        return Err(k.clone());
    }
    let mut out = Vec::new();
    for (flag, v) in &o.set {
        out.extend(["--set".to_string(), format!("{flag}={v}")]);
    }
    for flag in &o.unset {
        out.extend(["--unset".to_string(), flag.clone()]);
    }
    Ok(out)
}

/// The record of a host `sweep --hosts` stopped using: a failure with no
/// config (not any config's result) of class transport, whose upstream is
/// the host's origin record (`text`, may be empty), which names its target.
pub fn host_dropped(
    text: &str,
    reason: &str,
    started: SystemTime,
) -> Result<FailureRecord, String> {
    let upstream = match text.lines().find(|l| !l.trim().is_empty()) {
        None => None,
        Some(l) => match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(_)) => serde_json::from_str::<Value>(l).ok(),
            Ok(r) => {
                return Err(format!(
                    "expected an origin record, got a {} record",
                    r.kind()
                ))
            }
            Err(e) => return Err(format!("not a record: {e}")),
        },
    };
    Ok(sweepkit::records::failure(
        "sweep-plan",
        started,
        Config::new(),
        Stage::Swap,
        FailureKind::HostDropped,
        reason,
        upstream,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_host_is_no_config_s_result() {
        let origin = r#"{"type":"origin","schema":1,"config":{"k":"1"},"provenance":{"tool":"sweep-plan","version":"0","started_at":"x","finished_at":"x"},"target":{"manager":"systemd","unit":"sim","exec_prefix":"nsenter -t 7 -a"}}"#;
        let f = host_dropped(origin, "host h dropped", SystemTime::now()).unwrap();
        let v = serde_json::to_value(Record::Failure(f)).unwrap();
        assert_eq!(v["kind"], "host_dropped");
        assert_eq!(v["class"], "transport");
        assert_eq!(v["config"], serde_json::json!({}));
        assert_eq!(v["upstream"]["target"]["exec_prefix"], "nsenter -t 7 -a");
        let lines = crate::results::read(&format!("{v}\n"));
        let st = crate::results::state_of(&lines, |c| c.contains_key("k"));
        assert_eq!(st, crate::results::State::Pending);
        assert!(host_dropped("", "r", SystemTime::now())
            .unwrap()
            .upstream
            .is_none());
        assert!(host_dropped(r#"{"type":"bench"}"#, "r", SystemTime::now()).is_err());
    }

    #[test]
    fn origin_from_a_dry_run_and_back() {
        let swap: Value = serde_json::from_str(
            r#"{"type":"swap","schema":1,"config":{"a":"4","b":"x"},
            "provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},
            "target":{"manager":"process","unit":"/s"},
            "changes":[{"flag":"--a","old":"2 3","new":"4"},{"flag":"--b","old":null,"new":"x"}],
            "exec_start":[],"stop":{"result":"","duration_s":0.0},
            "start":{"started_at":""},"method":"dry-run"}"#,
        )
        .unwrap();
        let o = new_origin(&swap, SystemTime::now()).unwrap();
        assert_eq!(o.config["a"], "2 3");
        let line = serde_json::to_string(&Record::Origin(o)).unwrap();
        assert!(line.starts_with(r#"{"type":"origin""#), "{line}");
        let text = format!("{line}\n{{\"type\":\"bench\"}}\n");
        let back = find(&text).unwrap();
        let keys = ["a".to_string(), "b".to_string()];
        assert_eq!(
            restore_args(&back, &keys).unwrap(),
            ["--set", "--a=2 3", "--unset", "--b"]
        );
        assert_eq!(restore_args(&back, &["c".into()]).unwrap_err(), "c");
        assert!(find("{\"type\":\"bench\"}\n").is_none());
        assert!(new_origin(&serde_json::json!({"type": "bench"}), SystemTime::now()).is_err());
    }
}
