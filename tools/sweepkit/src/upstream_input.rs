//! The one reader of the upstream record on stdin (loadgen, wait-ready,
//! svc-swap --apply-from): which kinds a tool accepts, how a failure record
//! is passed through, and which exit code each problem gets, all said once.

use std::io::{BufRead, Write};

use anyhow::Context as _;
use serde_json::Value;

use crate::exit;
use crate::exit::{Exit, WithCode};
use crate::io::{write_json_line, RecordReader};
use crate::records::{Config, FailureKind, Record, Stage};

/// `--pipeline-config`, flattened into each stage that reads an upstream
/// record (wait-ready, loadgen): a driver such as sweep(1) names the config
/// it runs the pipeline for, so a stage whose upstream died without a
/// record measures nothing and writes a failure record that keeps that
/// config ([`missing`]), instead of running as if standalone and writing
/// records with `config: {}` (issue 21).
#[cfg(feature = "args")]
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PipelineArgs {
    /// Run as a pipeline stage for this config (repeatable; sweep passes
    /// it): with no upstream record on stdin, measure nothing, write a
    /// failure record with this config and exit 4
    #[arg(long = "pipeline-config", value_name = "KEY=VALUE", value_parser = parse_config_word)]
    pub pipeline_config: Vec<(String, String)>,
}

#[cfg(feature = "args")]
impl PipelineArgs {
    /// The config a driver named, or None when the stage runs standalone.
    pub fn config(&self) -> Option<Config> {
        (!self.pipeline_config.is_empty()).then(|| self.pipeline_config.iter().cloned().collect())
    }
}

/// clap's parser for one `KEY=VALUE` of `--pipeline-config`: the key as in
/// records (leading dashes dropped), the value verbatim.
pub fn parse_config_word(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim_start_matches('-').is_empty() => {
            Ok((k.trim_start_matches('-').to_string(), v.to_string()))
        }
        _ => Err(format!("'{s}': expected KEY=VALUE")),
    }
}

/// The stage before `stage` wrote no record, though a driver ran this one
/// for `config`: write a failure record of the upstream stage with that
/// config (so the results say which config lost its numbers, and a sweep
/// runs it again: class `transport`), warn, and return exit 4.
pub fn missing(
    tool: &str,
    started: std::time::SystemTime,
    upstream_stage: Stage,
    config: Config,
    out: &mut (impl Write + ?Sized),
) -> Exit {
    let what = match upstream_stage {
        Stage::Swap => "svc-swap",
        Stage::Ready => "wait-ready",
        Stage::Bench => "loadgen",
    };
    let reason = format!(
        "no record from the {what} stage on input: it ended without one (killed or crashed); \
         nothing was measured"
    );
    let mut f = crate::records::failure(
        tool,
        started,
        config,
        upstream_stage,
        FailureKind::UpstreamMissing,
        reason.clone(),
        None,
    );
    f.exit_code = Some(exit::UPSTREAM_FAILED as i32);
    if let Err(e) = write_json_line(out, &Record::Failure(f)).context("writing stdout") {
        return e.into();
    }
    crate::diag::warning(tool, reason);
    Exit::silent(exit::UPSTREAM_FAILED)
}

/// Records that describe a running server, read by wait-ready and loadgen:
/// svc-swap's swap record, wait-ready's ready record, loadgen's bench
/// record (a chained `loadgen | wait-ready` or `loadgen | loadgen`).
pub const SERVER: &[&str] = &["swap", "ready", "bench"];

/// Records that carry a config to apply, read by `svc-swap --apply-from`:
/// the server records plus summarize's pick, its per-load schedule
/// (`--schedule`) and sweep.sh's origin record.
pub const CONFIG: &[&str] = &["swap", "ready", "bench", "summary", "schedule", "origin"];

/// What was on the input.
#[derive(Debug)]
pub enum Upstream {
    /// Nothing: empty input or blank lines only.
    None,
    /// A failure record: pass it through ([`pass_through`]) and exit 4.
    Failure(Value),
    /// An accepted record, parsed, with its raw JSON (kept whole in the
    /// reader's own record, so unknown fields survive).
    Record(Box<Record>, Value),
}

/// Reads the first record of an input and checks its kind.
pub struct Reader<'a> {
    source: &'a str,
    accept: &'a [&'a str],
    hint: &'a str,
}

impl<'a> Reader<'a> {
    /// Read from `source` (a file name, or `<stdin>`), accepting `accept`
    /// ([`SERVER`] or [`CONFIG`]); a failure record is always accepted.
    pub fn new(source: &'a str, accept: &'a [&'a str]) -> Self {
        Reader {
            source,
            accept,
            hint: "",
        }
    }

    /// Text added to the wrong-kind message, naming the flag that ignores
    /// the input (`use --no-stdin to ignore stdin`).
    pub fn hint(mut self, hint: &'a str) -> Self {
        self.hint = hint;
        self
    }

    /// Read at most one record. Every problem with the input (unreadable,
    /// not JSON, not a record, a kind not accepted) is exit 3 (BAD_INPUT):
    /// an unreadable stdin is almost always invalid UTF-8, i.e. bad input.
    pub fn read(&self, r: impl BufRead) -> Result<Upstream, Exit> {
        let mut reader = RecordReader::new(r, self.source);
        let (rec, raw) = match reader.next_record() {
            None => return Ok(Upstream::None),
            Some(x) => x.code(exit::BAD_INPUT)?,
        };
        if let Record::Failure(_) = rec {
            return Ok(Upstream::Failure(raw));
        }
        if !self.accept.contains(&rec.kind()) {
            let hint = if self.hint.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.hint)
            };
            return Err(Exit::new(
                exit::BAD_INPUT,
                anyhow::anyhow!(
                    "{}: line {}: expected a {} record, got a {} record{hint}",
                    self.source,
                    reader.line(),
                    or_list(self.accept),
                    rec.kind()
                ),
            ));
        }
        Ok(Upstream::Record(Box::new(rec), raw))
    }

    /// Like [`Reader::read`], but empty input is an error (exit 3): the
    /// user named the input (`--apply-from FILE`), so a record must be there.
    pub fn read_required(&self, r: impl BufRead) -> Result<Upstream, Exit> {
        match self.read(r)? {
            Upstream::None => Err(Exit::new(
                exit::BAD_INPUT,
                anyhow::anyhow!(
                    "{}: no record on input (expected a {} record)",
                    self.source,
                    or_list(self.accept)
                ),
            )),
            up => Ok(up),
        }
    }
}

/// `a, b or c`.
fn or_list(kinds: &[&str]) -> String {
    match kinds {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Pass an upstream failure record through: write it to `out` unchanged
/// (the pipeline's results must say why this config has no numbers), warn
/// under `tool`'s name naming the failed stage and kind, and return exit 4
/// (UPSTREAM_FAILED) for the caller to end with. The reason is not said
/// again: the stage that failed said it (issue 46: a pre-flight refusal
/// was printed three times per config).
pub fn pass_through(tool: &str, raw: &Value, out: &mut (impl Write + ?Sized)) -> Exit {
    if let Err(e) = write_json_line(out, raw).context("writing stdout") {
        return e.into();
    }
    crate::diag::warning(tool, passed_through(raw));
    Exit::silent(exit::UPSTREAM_FAILED)
}

/// `upstream failed (swap: preflight_rejected), passed through`.
fn passed_through(raw: &Value) -> String {
    let word = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or("unknown");
    format!(
        "upstream failed ({}: {}), passed through",
        word("stage"),
        word("kind")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROV: &str =
        r#""provenance":{"tool":"t","version":"0","started_at":"x","finished_at":"y"}"#;

    fn summary() -> String {
        format!(
            r#"{{"type":"summary","schema":1,{PROV},"metric":"m","objective":"max","best_config":{{"a":"1"}},"best_per_level":{{}}}}"#
        ) + "\n"
    }

    fn failure() -> String {
        format!(
            r#"{{"type":"failure","schema":1,"config":{{"a":"1"}},{PROV},"stage":"ready","kind":"oom","reason":"out of memory","extra":7}}"#
        ) + "\n"
    }

    #[test]
    fn empty_input_is_none_unless_required() {
        let r = Reader::new("<stdin>", SERVER);
        assert!(matches!(r.read("\n\n".as_bytes()).unwrap(), Upstream::None));
        let e = r.read_required("".as_bytes()).unwrap_err();
        assert_eq!(e.code, exit::BAD_INPUT);
        let msg = e.error.unwrap().to_string();
        assert_eq!(
            msg,
            "<stdin>: no record on input (expected a swap, ready or bench record)"
        );
    }

    #[test]
    fn wrong_kind_and_bad_json_are_bad_input_with_the_line() {
        let r = Reader::new("<stdin>", SERVER).hint("use --no-stdin to ignore stdin");
        let e = r.read(format!("\n{}", summary()).as_bytes()).unwrap_err();
        assert_eq!(e.code, exit::BAD_INPUT);
        assert_eq!(
            e.error.unwrap().to_string(),
            "<stdin>: line 2: expected a swap, ready or bench record, \
             got a summary record (use --no-stdin to ignore stdin)"
        );
        let e = r.read("not json\n".as_bytes()).unwrap_err();
        assert_eq!(e.code, exit::BAD_INPUT);
        assert!(format!("{:#}", e.error.unwrap()).starts_with("<stdin>: line 1: not JSON"));
        // Invalid UTF-8 is an I/O error from read_line: still bad input.
        let e = r.read(&b"\xff\xfe\n"[..]).unwrap_err();
        assert_eq!(e.code, exit::BAD_INPUT);
    }

    #[test]
    fn config_sources_take_a_summary() {
        let up = Reader::new("pick.jsonl", CONFIG)
            .read(summary().as_bytes())
            .unwrap();
        let Upstream::Record(rec, raw) = up else {
            panic!("not a record: {up:?}")
        };
        assert_eq!(rec.config()["a"], "1");
        assert_eq!(raw["metric"], "m");
    }

    /// Issue 21: a killed svc-swap left wait-ready and loadgen nothing to
    /// read; the stage now writes the driver's config, not `config: {}`.
    #[test]
    fn a_missing_upstream_record_keeps_the_drivers_config() {
        let config: Config = [("speculative-num-steps".to_string(), "3".to_string())].into();
        let mut out = Vec::new();
        let e = missing(
            "wait-ready",
            std::time::SystemTime::now(),
            Stage::Swap,
            config,
            &mut out,
        );
        assert_eq!(e.code, exit::UPSTREAM_FAILED);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["type"], "failure");
        assert_eq!(back["config"]["speculative-num-steps"], "3");
        assert_eq!(back["stage"], "swap");
        assert_eq!(back["kind"], "upstream_missing");
        assert_eq!(back["class"], "transport");
        assert!(
            back["reason"].as_str().unwrap().contains("svc-swap"),
            "{back}"
        );
        assert_eq!(
            out.iter().filter(|&&b| b == b'\n').count(),
            1,
            "one whole line"
        );
    }

    #[test]
    fn config_words_drop_leading_dashes() {
        assert_eq!(
            parse_config_word("--speculative-num-steps=3").unwrap(),
            ("speculative-num-steps".into(), "3".into())
        );
        assert_eq!(
            parse_config_word("m=a=b").unwrap(),
            ("m".into(), "a=b".into())
        );
        assert!(parse_config_word("nokey").is_err());
        assert!(parse_config_word("--=1").is_err());
    }

    #[test]
    fn failure_passes_through_unchanged_with_exit_4() {
        let Upstream::Failure(raw) = Reader::new("<stdin>", SERVER)
            .read(failure().as_bytes())
            .unwrap()
        else {
            panic!("not a failure")
        };
        let mut out = Vec::new();
        let e = pass_through("t", &raw, &mut out);
        assert_eq!(e.code, exit::UPSTREAM_FAILED);
        assert!(e.error.is_none(), "silent: the warning was printed");
        let line = String::from_utf8(out).unwrap();
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, raw, "unknown fields kept");
        assert_eq!(back["extra"], 7);
        // The warning names the stage and kind; the reason was said once,
        // by the stage that failed.
        assert_eq!(
            passed_through(&raw),
            "upstream failed (ready: oom), passed through"
        );
    }
}
