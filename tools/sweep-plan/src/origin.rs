//! The original config, for every restore: the origin record a results
//! file's first start writes (from a dry-run swap's old values), the
//! `--set`/`--unset` words that put it back, and the record of a host the
//! fleet stopped using (whose upstream is that host's origin record).

use std::time::SystemTime;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{
    Config, FailureKind, FailureRecord, OriginRecord, Record, Stage, SwapRecord, SCHEMA_VERSION,
};

use crate::read::read_text;

/// The first origin record of `text`, if any.
pub fn find(text: &str) -> Option<OriginRecord> {
    text.lines()
        .find_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(o)) => Some(o),
            _ => None,
        })
}

/// Why a record is not the one asked for.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a record: {0}")]
    NotARecord(serde_json::Error),
    #[error("expected a {want} record, got a {got} record")]
    Kind {
        want: &'static str,
        got: &'static str,
    },
    #[error("the swap record lists no changes: nothing to restore")]
    NoChanges,
}

/// The dry-run swap record `v` (JSON), read once for the pre-flight and
/// the origin.
pub fn swap_of(v: &Value) -> Result<SwapRecord, Error> {
    match serde_json::from_value(v.clone()).map_err(Error::NotARecord)? {
        Record::Swap(s) => Ok(s),
        r => Err(Error::Kind {
            want: "swap",
            got: r.kind(),
        }),
    }
}

/// FILE's origin record, if it holds one (a file not there holds none),
/// which must have an original value for every swept key (`keys`): a
/// results file is for one set of --param (exit::ORIGIN_MISSING).
pub fn fits(file: &str, keys: &[String]) -> Result<Option<OriginRecord>, Exit> {
    let Some(o) = find(&read_text(file, true)?) else {
        return Ok(None);
    };
    restore_words(&o, file, keys)?;
    Ok(Some(o))
}

/// Where a sweep keeps its original.
pub struct Keep<'a> {
    /// The results file, where the origin record is appended.
    pub results: &'a str,
    /// A pool host's own origin file, written too; it decides whether
    /// the host's original is kept already.
    pub copy: Option<&'a str>,
    /// With no copy: say after this prefix that restores put back the
    /// original already on file.
    pub say: Option<&'a str>,
}

/// Keep the original of the dry run `swap` (`raw`, its JSON) once: unless
/// the file that holds it (the copy, else the results file) has one
/// already, which must then fit the swept `keys` ([`fits`]), the origin
/// record is appended to the results file (its folder made) and written
/// to the copy.
pub fn keep(
    swap: &SwapRecord,
    raw: &Value,
    k: &Keep<'_>,
    keys: &[String],
    started: SystemTime,
) -> Result<(), Exit> {
    let held = k.copy.unwrap_or(k.results);
    if fits(held, keys)?.is_some() {
        if let (Some(prefix), None) = (k.say, k.copy) {
            sweepkit::diag::line(format!(
                "{prefix}restores will put back the original recorded in {held}"
            ));
        }
        return Ok(());
    }
    let rec = new_origin(swap, raw, started)
        .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("svc-swap --dry-run: {e}")))?;
    let rec = Record::Origin(rec);
    for f in std::iter::once(k.results).chain(k.copy) {
        make_folder(f)?;
    }
    crate::results::append_records(k.results, &[&rec])?;
    if let Some(c) = k.copy {
        std::fs::File::create(c)
            .and_then(|mut f| sweepkit::io::write_record(&mut f, &rec))
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{c}: {e}")))?;
    }
    Ok(())
}

/// The folder `file` goes in, made if missing.
fn make_folder(file: &str) -> Result<(), Exit> {
    match std::path::Path::new(file).parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::create_dir_all(d)
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{}: {e}", d.display()))),
        _ => Ok(()),
    }
}

/// FILE's origin record (none: exit::ORIGIN_MISSING).
pub fn read(file: &str) -> Result<OriginRecord, Exit> {
    find(&read_text(file, false)?)
        .ok_or_else(|| Exit::new(exit::ORIGIN_MISSING, anyhow!("{file}: no origin record")))
}

/// svc-swap's words that put back the original of `rec` (FILE's origin
/// record); every swept key (`keys`) must be in it, else the results file
/// is another sweep's.
pub fn restore_words(rec: &OriginRecord, file: &str, keys: &[String]) -> Result<Vec<String>, Exit> {
    match keys.iter().find(|k| !has_key(rec, k)) {
        None => Ok(restore_args(rec)),
        Some(k) => Err(Exit::new(
            exit::ORIGIN_MISSING,
            anyhow!("{file}: its origin record has no original value for {k} (a results file is for one set of --param); use a new --results FILE"),
        )),
    }
}

/// The origin record for the dry-run swap record `s` (`raw`, its JSON,
/// becomes the upstream): each changed flag's old value is the original
/// (`null`: the flag was absent).
pub fn new_origin(s: &SwapRecord, raw: &Value, started: SystemTime) -> Result<OriginRecord, Error> {
    if s.changes.is_empty() {
        return Err(Error::NoChanges);
    }
    let mut o = OriginRecord {
        schema: SCHEMA_VERSION,
        provenance: sweepkit::Provenance::new("sweep-plan", started),
        target: s.target.clone(),
        upstream: Some(raw.clone()),
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

/// Whether origin `o` holds swept key `k`.
fn has_key(o: &OriginRecord, k: &str) -> bool {
    o.set
        .keys()
        .chain(&o.unset)
        .any(|f| f.trim_start_matches('-') == k)
}

/// svc-swap's words that put `o` back: `--set FLAG=VALUE` and
/// `--unset FLAG`, one word each.
fn restore_args(o: &OriginRecord) -> Vec<String> {
    let mut out = Vec::new();
    for (flag, v) in &o.set {
        out.extend(["--set".to_string(), format!("{flag}={v}")]);
    }
    for flag in &o.unset {
        out.extend(["--unset".to_string(), flag.clone()]);
    }
    out
}

/// The record of a host `sweep --hosts` stopped using: a failure with no
/// config (not any config's result) of class transport, whose upstream is
/// the host's origin record (`text`, may be empty), which names its target.
pub fn host_dropped(text: &str, reason: &str, started: SystemTime) -> Result<FailureRecord, Error> {
    let upstream = match text.lines().find(|l| !l.trim().is_empty()) {
        None => None,
        Some(l) => match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(_)) => serde_json::from_str::<Value>(l).ok(),
            Ok(r) => {
                return Err(Error::Kind {
                    want: "origin",
                    got: r.kind(),
                })
            }
            Err(e) => return Err(Error::NotARecord(e)),
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
        let o = new_origin(&swap_of(&swap).unwrap(), &swap, SystemTime::now()).unwrap();
        assert_eq!(o.config["a"], "2 3");
        let line = serde_json::to_string(&Record::Origin(o)).unwrap();
        assert!(line.starts_with(r#"{"type":"origin""#), "{line}");
        let text = format!("{line}\n{{\"type\":\"bench\"}}\n");
        let back = find(&text).unwrap();
        let keys = ["a".to_string(), "b".to_string()];
        assert_eq!(
            restore_words(&back, "r", &keys).unwrap(),
            ["--set", "--a=2 3", "--unset", "--b"]
        );
        let e = restore_words(&back, "r", &["c".into()]).unwrap_err();
        assert!(e
            .error
            .unwrap()
            .to_string()
            .contains("no original value for c"));
        assert!(find("{\"type\":\"bench\"}\n").is_none());
        assert!(swap_of(&serde_json::json!({"type": "bench"})).is_err());
    }
}
