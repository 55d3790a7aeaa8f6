//! The process spec: a small unit-like file that lets svc-swap supervise a
//! server where there is no systemd (and in `make demo` with llm-sim).
//!
//! ```text
//! # llm-sim.spec
//! [Service]                      # optional
//! ExecStart=/opt/bin/llm-sim --port 8000 --speculative-num-steps 3
//! Environment=RUST_LOG=info "MODEL_DIR=/srv/models/a b"
//! WorkingDirectory=/srv          # default: the spec file's directory
//! LogFile=/var/log/llm-sim.log   # default: SPEC.log (appended to)
//! PidFile=/run/llm-sim.pid       # default: SPEC.pid
//! TimeoutStopSec=30              # seconds, or 1min 30s, 500ms; default 90
//! Port=8000                      # checked free after stop; optional
//! ```
//! ExecStart uses systemd's quoting; `%%` and `$$` read as `%` and `$`;
//! nothing else is expanded. Pure: parsing only.

use std::time::Duration;

use crate::execstart::{self, ExecError, ExecLine};
use crate::unitfile::{self, Entry, UnitFileError};

/// A parsed process spec.
#[derive(Debug, Clone)]
pub struct Spec {
    pub exec: ExecLine,
    /// The ExecStart entry (to rewrite in place).
    pub exec_entry: Entry,
    pub env: Vec<(String, String)>,
    pub working_dir: String,
    pub log_file: String,
    pub pid_file: String,
    pub timeout_stop: Duration,
    pub port: Option<u16>,
}

const KEYS: [&str; 7] = [
    "ExecStart",
    "Environment",
    "WorkingDirectory",
    "LogFile",
    "PidFile",
    "TimeoutStopSec",
    "Port",
];

/// Why a process spec does not read; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Syntax(#[from] UnitFileError),
    #[error("line {line}: unknown key {key} (known: {})", KEYS.join(", "))]
    UnknownKey { line: usize, key: String },
    #[error("no ExecStart= line")]
    NoExecStart,
    #[error("{0} ExecStart= lines; a spec has one")]
    SeveralExecStart(usize),
    #[error("line {line}: {err}")]
    Exec { line: usize, err: ExecError },
    #[error("line {line}: ExecStart prefixes ({prefix}) are for systemd units")]
    Prefix { line: usize, prefix: String },
    #[error("line {line}: Environment: {err}")]
    Environment { line: usize, err: ExecError },
    #[error("line {line}: Environment: '{word}' is not NAME=VALUE")]
    NotNameValue { line: usize, word: String },
    /// A value of `key` that does not read (`TimeoutStopSec`, `Port`).
    #[error("line {line}: bad {key}={value}")]
    BadValue {
        line: usize,
        key: &'static str,
        value: String,
    },
}

/// Parse the spec at `path` (used for defaults) from `text`.
pub fn parse(path: &str, text: &str) -> Result<Spec, SpecError> {
    let entries = unitfile::entries(text)?;
    for e in &entries {
        if !KEYS.contains(&e.key.as_str()) {
            return Err(SpecError::UnknownKey {
                line: e.lines.0 + 1,
                key: e.key.clone(),
            });
        }
    }
    let last = |k: &str| entries.iter().rev().find(|e| e.key == k);
    let exec_entry = match unitfile::exec_starts(&entries, None).as_slice() {
        [] => return Err(SpecError::NoExecStart),
        [one] => one.clone(),
        more => return Err(SpecError::SeveralExecStart(more.len())),
    };
    let line = exec_entry.lines.0 + 1;
    let exec = execstart::parse(&exec_entry.value).map_err(|err| SpecError::Exec { line, err })?;
    if !exec.prefix.is_empty() {
        return Err(SpecError::Prefix {
            line,
            prefix: exec.prefix,
        });
    }
    let mut env = Vec::new();
    for e in entries.iter().filter(|e| e.key == "Environment") {
        let line = e.lines.0 + 1;
        let words = execstart::parse(&format!("x {}", e.value))
            .map_err(|err| SpecError::Environment { line, err })?;
        for w in &words.words[1..] {
            let Some((k, v)) = w.split_once('=').filter(|(k, _)| valid_env_name(k)) else {
                return Err(SpecError::NotNameValue {
                    line,
                    word: w.clone(),
                });
            };
            env.push((k.to_string(), execstart::logical(v)));
        }
    }
    let dir = std::path::Path::new(path)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    let bad = |key: &'static str, e: &Entry| SpecError::BadValue {
        line: e.lines.0 + 1,
        key,
        value: e.value.clone(),
    };
    let timeout_stop = match last("TimeoutStopSec") {
        Some(e) => parse_timespan(&e.value).ok_or_else(|| bad("TimeoutStopSec", e))?,
        None => Duration::from_secs(90),
    };
    let port = match last("Port") {
        Some(e) => Some(e.value.parse::<u16>().map_err(|_| bad("Port", e))?),
        None => None,
    };
    Ok(Spec {
        exec,
        exec_entry,
        env,
        working_dir: last("WorkingDirectory").map_or(dir, |e| e.value.clone()),
        log_file: last("LogFile").map_or(format!("{path}.log"), |e| e.value.clone()),
        pid_file: last("PidFile").map_or(format!("{path}.pid"), |e| e.value.clone()),
        timeout_stop,
        port,
    })
}

fn valid_env_name(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A systemd time span: plain seconds (`90`, `0.5`), `infinity`, or units
/// as systemd prints them (`1min 30s`, `500ms`, `2h`).
pub fn parse_timespan(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s == "infinity" {
        return Some(Duration::from_secs(u64::MAX / 4));
    }
    if let Ok(secs) = s.parse::<f64>() {
        return (secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let n_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..n_end].parse().ok()?;
        rest = rest[n_end..].trim_start();
        let u_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = match &rest[..u_end] {
            "us" | "usec" => 1e-6,
            "ms" | "msec" => 1e-3,
            "" | "s" | "sec" | "second" | "seconds" => 1.0,
            "m" | "min" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86400.0,
            _ => return None,
        };
        total += n * unit;
        rest = &rest[u_end..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_spec() {
        let t = "# demo\n[Service]\nExecStart=/bin/sim --port 8000 \\\n  --k 3\nEnvironment=A=1 \"B=x y\" C=50%%\nWorkingDirectory=/srv\nLogFile=/tmp/l\nPidFile=/tmp/p\nTimeoutStopSec=1min 30s\nPort=8000\n";
        let s = parse("/etc/x.spec", t).unwrap();
        assert_eq!(s.exec.words, ["/bin/sim", "--port", "8000", "--k", "3"]);
        assert_eq!(
            s.env,
            [
                ("A".into(), "1".into()),
                ("B".into(), "x y".into()),
                ("C".into(), "50%".into())
            ]
        );
        assert_eq!(
            (
                s.working_dir.as_str(),
                s.log_file.as_str(),
                s.pid_file.as_str()
            ),
            ("/srv", "/tmp/l", "/tmp/p")
        );
        assert_eq!(s.timeout_stop, Duration::from_secs(90));
        assert_eq!(s.port, Some(8000));
    }

    #[test]
    fn defaults_come_from_the_spec_path() {
        let s = parse("/d/x.spec", "ExecStart=/bin/sim\n").unwrap();
        assert_eq!(s.working_dir, "/d");
        assert_eq!(s.log_file, "/d/x.spec.log");
        assert_eq!(s.pid_file, "/d/x.spec.pid");
        assert_eq!(s.port, None);
    }

    #[test]
    fn bad_specs_say_where() {
        let msg = |text: &str| parse("x", text).unwrap_err().to_string();
        assert_eq!(msg("Port=1\n"), "no ExecStart= line");
        let starts = |text: &str, part: &str| msg(text).starts_with(part);
        let has = |text: &str, part: &str| msg(text).contains(part);
        assert!(starts("ExecStart=/a\nExecStar=/b\n", "line 2: unknown key"));
        assert!(has("ExecStart=/a\nPort=99999\n", "bad Port"));
        assert!(has("ExecStart=/a\nEnvironment=1X=2\n", "NAME=VALUE"));
        assert!(has("ExecStart=/a\nExecStart=/b\n", "2 ExecStart"));
        assert!(starts("ExecStart=/a \"x\n", "line 1:"));
    }

    #[test]
    fn timespans() {
        assert_eq!(parse_timespan("1min 30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_timespan("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_timespan("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timespan("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_timespan("3 parsecs"), None);
    }
}
