//! Opening inputs and outputs (`-` is stdin/stdout) and reading and writing
//! records as JSON Lines: one object per line, flushed per line, so a reader
//! downstream never sees half a record and nothing measured is lost.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

use serde::Serialize;

use crate::records::Record;

/// A problem with input, located by source name and line number.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{source_name}: line {line}: {message}")]
    Malformed {
        source_name: String,
        line: usize,
        message: String,
    },
    #[error("{source_name}: no record on input (expected {expected})")]
    Empty {
        source_name: String,
        expected: String,
    },
    #[error("{source_name}: {err}")]
    Io { source_name: String, err: io::Error },
}

/// Open `path` for reading; `-` is stdin.
pub fn open_input(path: &str) -> io::Result<Box<dyn BufRead>> {
    if path == "-" {
        Ok(Box::new(BufReader::new(io::stdin())))
    } else {
        Ok(Box::new(BufReader::new(File::open(Path::new(path))?)))
    }
}

/// Open `path` for appending (created if missing); `-` is stdout.
pub fn open_output(path: &str) -> io::Result<Box<dyn Write>> {
    if path == "-" {
        Ok(Box::new(io::stdout()))
    } else {
        Ok(Box::new(
            File::options().create(true).append(true).open(path)?,
        ))
    }
}

/// Why a line is not a record; serde's messages name the field it found
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotObject,
    #[error("record has no \"type\" field")]
    NoType,
    #[error("unknown record type \"{0}\"")]
    UnknownType(String),
    #[error("bad record: {0}")]
    Bad(String),
}

/// Parse one line as a record.
pub fn parse_record(line: &str) -> Result<Record, RecordError> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| RecordError::NotJson(e.to_string()))?;
    let Some(obj) = value.as_object() else {
        return Err(RecordError::NotObject);
    };
    match obj.get("type").and_then(|t| t.as_str()) {
        None => return Err(RecordError::NoType),
        Some(t) if crate::records::is_record_type(t) => {}
        Some(other) => return Err(RecordError::UnknownType(other.into())),
    }
    serde_json::from_value(value).map_err(|e| RecordError::Bad(e.to_string()))
}

/// Reads records from a JSON Lines stream, skipping blank lines and
/// reporting errors with the source name and 1-based line number.
pub struct RecordReader<R> {
    inner: R,
    source_name: String,
    line: usize,
    buf: String,
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(inner: R, source_name: impl Into<String>) -> Self {
        RecordReader {
            inner,
            source_name: source_name.into(),
            line: 0,
            buf: String::new(),
        }
    }

    /// The line number of the last record returned.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next record with its raw JSON value, or `None` at end of input.
    pub fn next_record(&mut self) -> Option<Result<(Record, serde_json::Value), InputError>> {
        loop {
            self.buf.clear();
            match self.inner.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(err) => {
                    return Some(Err(InputError::Io {
                        source_name: self.source_name.clone(),
                        err,
                    }))
                }
            }
            self.line += 1;
            let text = self.buf.trim();
            if text.is_empty() {
                continue;
            }
            let parsed = parse_record(text)
                .map_err(|e| e.to_string())
                .and_then(|rec| {
                    let raw = serde_json::from_str(text).map_err(|e| e.to_string())?;
                    Ok((rec, raw))
                });
            return Some(parsed.map_err(|message| InputError::Malformed {
                source_name: self.source_name.clone(),
                line: self.line,
                message,
            }));
        }
    }

    /// Read exactly one upstream record (the first non-blank line).
    pub fn read_one(&mut self, expected: &str) -> Result<(Record, serde_json::Value), InputError> {
        match self.next_record() {
            Some(r) => r,
            None => Err(InputError::Empty {
                source_name: self.source_name.clone(),
                expected: expected.to_string(),
            }),
        }
    }
}

/// Read all of `r` and return it (for tools that need the whole input).
pub fn read_all(mut r: impl Read) -> io::Result<String> {
    let mut s = String::new();
    r.read_to_string(&mut s)?;
    Ok(s)
}

/// Write `value` as one JSON line and flush, so the line is whole downstream.
/// Secrets are redacted here (`crate::redact`): every record of every tool
/// passes through this one function, so no call site can forget.
pub fn write_json_line<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> io::Result<()> {
    // Serialize fully first: a serialization error must not leave half a line.
    let mut v = serde_json::to_value(value).map_err(io::Error::other)?;
    crate::redact::value(&mut v);
    let mut line = serde_json::to_vec(&v).map_err(io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}

/// Write a record (tagged with its type) as one JSON line.
pub fn write_record<W: Write + ?Sized>(w: &mut W, record: &Record) -> io::Result<()> {
    write_json_line(w, record)
}

/// Append `values` to the file at `path` (created if missing), one JSON
/// line each as [`write_json_line`] writes them, in one write: on an
/// `O_APPEND` file the lines stay whole beside other writers' (a pool's
/// jobs appending to one results file). The text written.
pub fn append_json_lines<T: Serialize>(path: &Path, values: &[T]) -> io::Result<String> {
    let mut text = Vec::new();
    for v in values {
        write_json_line(&mut text, v)?;
    }
    append_text(path, &text)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Append `text` (whole lines) to the file at `path` (created if missing)
/// in one write, as [`append_json_lines`] does.
pub fn append_text(path: &Path, text: &[u8]) -> io::Result<()> {
    File::options()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_line_is_located() {
        let input = "\n{\"type\":\"bench\"\n";
        let mut r = RecordReader::new(input.as_bytes(), "<stdin>");
        let err = r.next_record().unwrap().unwrap_err().to_string();
        assert!(err.starts_with("<stdin>: line 2: not JSON"), "{err}");
    }

    #[test]
    fn unknown_type_and_missing_type_are_named() {
        let mut r = RecordReader::new("{\"type\":\"pizza\"}\n{\"a\":1}\n".as_bytes(), "f.jsonl");
        let e1 = r.next_record().unwrap().unwrap_err().to_string();
        assert_eq!(e1, "f.jsonl: line 1: unknown record type \"pizza\"");
        let e2 = r.next_record().unwrap().unwrap_err().to_string();
        assert_eq!(e2, "f.jsonl: line 2: record has no \"type\" field");
        assert!(r.next_record().is_none());
    }

    #[test]
    fn wrong_field_type_is_named() {
        let line = r#"{"type":"failure","schema":"one","config":{},"provenance":{}}"#;
        let err = parse_record(line).unwrap_err().to_string();
        assert!(err.contains("bad record"), "{err}");
    }

    #[test]
    fn written_lines_carry_no_secret() {
        let mut out = Vec::new();
        let v = serde_json::json!({"type": "ready", "server": {"args": {"api_key": "sk-io-1",
            "internal_states": [{"admin_api_key": "adm-io-1"}], "max_total_tokens": 7}},
            "exec_start": ["srv", "--api-key", "sk-io-2"]});
        write_json_line(&mut out, &v).unwrap();
        let line = String::from_utf8(out).unwrap();
        for s in ["sk-io-1", "adm-io-1", "sk-io-2"] {
            assert!(!line.contains(s), "{line}");
        }
        assert!(line.contains("\"max_total_tokens\":7"), "{line}");
    }

    #[test]
    fn empty_input_is_reported() {
        let mut r = RecordReader::new("\n\n".as_bytes(), "<stdin>");
        let err = r.read_one("a swap record").unwrap_err().to_string();
        assert_eq!(err, "<stdin>: no record on input (expected a swap record)");
    }

    #[test]
    fn appended_lines_are_whole_and_carry_no_secret() {
        let dir = std::env::temp_dir().join(format!("sweepkit-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("r.jsonl");
        let one =
            serde_json::json!({"type": "bench", "exec_start": ["srv", "--api-key", "sk-io-3"]});
        let text = append_json_lines(&f, &[&one, &one]).unwrap();
        assert_eq!(text.lines().count(), 2);
        append_text(&f, b"{\"type\":\"origin\"}\n").unwrap();
        let all = std::fs::read_to_string(&f).unwrap();
        assert_eq!(all, format!("{text}{{\"type\":\"origin\"}}\n"));
        assert!(!all.contains("sk-io-3"), "{all}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
