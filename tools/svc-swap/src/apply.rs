//! The edits one run makes: `--apply-from` (a record's config, or a
//! `summarize --schedule` record's flags, read with the core upstream
//! reader) then `--set`, `--set-file` and `--unset`.

use std::io::{BufRead, Write};

use anyhow::Context as _;
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::Record;
use sweepkit::upstream_input::{self as upstream, Reader, Upstream};

use crate::cli::{Args, TOOL};
use crate::far_files::FileFlag;
use crate::flags::Op;

/// What one run changes.
pub struct Edits {
    pub ops: Vec<Op>,
    /// The record `--apply-from` read, kept as upstream.
    pub upstream: Option<serde_json::Value>,
    /// Files to copy to the far side first (their flags are in `ops`).
    pub files: Vec<FileFlag>,
}

/// The edits and the upstream record they came from. An upstream failure
/// record is written through to `stdout` and ends the run (exit 4).
/// `file_dir` is the far directory `--set-file` copies go to.
pub fn edits(
    args: &Args,
    file_dir: &str,
    stdin: impl BufRead,
    stdout: &mut impl Write,
) -> Result<Edits, Exit> {
    let mut files = Vec::new();
    let (mut ops, raw) = match &args.apply_from {
        Some(src) => match apply_from(src, stdin)? {
            Upstream::Record(rec, raw) => match *rec {
                Record::Schedule(s) => {
                    let (ops, f) = crate::schedule::ops(source_name(src), &s, file_dir)?;
                    files.extend(f);
                    (ops, Some(raw))
                }
                rec => (ops_from(src, &rec)?, Some(raw)),
            },
            Upstream::Failure(raw) => return Err(upstream::pass_through(TOOL, &raw, stdout)),
            Upstream::None => unreachable!("read_required"),
        },
        None => (Vec::new(), None),
    };
    let usage = |flag: &str, e: String| Exit::new(exit::USAGE, anyhow::anyhow!("{flag} {e}"));
    for s in &args.set {
        ops.push(Op::parse_set(s).map_err(|e| usage("--set", e))?);
    }
    for s in &args.set_file {
        let f = FileFlag::parse(s)?;
        ops.push(f.op(file_dir));
        files.push(f);
    }
    for s in &args.unset {
        ops.push(Op::parse_unset(s).map_err(|e| usage("--unset", e))?);
    }
    Ok(Edits {
        ops,
        upstream: raw,
        files,
    })
}

/// Read the `--apply-from` record (`-` is stdin) with the core reader.
fn apply_from(src: &str, stdin: impl BufRead) -> Result<Upstream, Exit> {
    let reader = Reader::new(source_name(src), upstream::CONFIG);
    if src == "-" {
        return reader.read_required(stdin);
    }
    let file = std::fs::File::open(src)
        .with_context(|| src.to_string())
        .code(exit::BAD_INPUT)?;
    reader.read_required(std::io::BufReader::new(file))
}

fn source_name(src: &str) -> &str {
    if src == "-" {
        "<stdin>"
    } else {
        src
    }
}

/// The record's config as --set edits; a summary's `best_unset` and an
/// origin's `unset` as --unset edits.
fn ops_from(src: &str, rec: &Record) -> Result<Vec<Op>, Exit> {
    let name = source_name(src);
    let bad =
        |what: &str, e: String| Exit::new(exit::BAD_INPUT, anyhow::anyhow!("{name}: {what} {e}"));
    let mut ops = Vec::new();
    for (k, v) in rec.config() {
        ops.push(Op::parse_set(&format!("{k}={v}")).map_err(|e| bad("config key", e))?);
    }
    // A summary's pick may leave keys unset (speculation off drops
    // --speculative-algorithm): remove them, or the old value lingers.
    if let Record::Summary(s) = rec {
        for k in &s.best_unset {
            ops.push(Op::parse_unset(k).map_err(|e| bad("best_unset", e))?);
        }
    }
    // A sweep's origin record: flags absent originally are removed.
    if let Record::Origin(o) = rec {
        for k in &o.unset {
            ops.push(Op::parse_unset(k).map_err(|e| bad("unset", e))?);
        }
    }
    if ops.is_empty() {
        return Err(Exit::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("{name}: the record's config is empty"),
        ));
    }
    Ok(ops)
}
