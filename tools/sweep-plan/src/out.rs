//! How answers are written: JSON Lines (one object per answer, flushed per
//! line); with `--field NAME...` the named fields one per line, so a
//! script reads them with `mapfile -t` and parses no JSON (a value holds
//! no newline there: each is replaced by a space, so lines stay fields);
//! or with `--shell` as bash assignments, every value single-quoted by
//! [`crate::quote::single`], so sweep(1)'s `eval` of them runs no text of the answer.

use std::io::{BufRead, Write};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use sweepkit::exit::Exit;
use sweepkit::records::Record;

use crate::quote::single;

/// What a subcommand reads and writes: stdin, its answers (stdout), and
/// when sweep-plan started (the provenance of the records it makes).
pub struct Io<'a> {
    pub stdin: &'a mut dyn BufRead,
    pub out: Out<'a>,
    pub started: SystemTime,
}

/// Where answers go, as `--field` and `--shell` ask for them.
pub struct Out<'a> {
    fields: &'a [String],
    shell: bool,
    w: &'a mut dyn Write,
}

impl<'a> Out<'a> {
    pub fn new(fields: &'a [String], w: &'a mut dyn Write) -> Self {
        Out {
            fields,
            shell: false,
            w,
        }
    }

    /// Answers as bash assignments (`--shell`).
    pub fn shell(mut self, on: bool) -> Self {
        self.shell = on;
        self
    }

    /// One answer object.
    pub fn answer(&mut self, a: &impl Serialize) -> Result<(), Exit> {
        let v = serde_json::to_value(a).map_err(anyhow::Error::from)?;
        if self.shell {
            write!(self.w, "{}", assignments(&v, self.fields))?;
        } else if self.fields.is_empty() {
            writeln!(self.w, "{v}")?;
        } else {
            for f in self.fields {
                writeln!(self.w, "{}", field_text(v.get(f)))?;
            }
        }
        self.w.flush()?;
        Ok(())
    }

    /// A record to append to a results file (always JSON).
    pub fn record(&mut self, r: &Record) -> Result<(), Exit> {
        sweepkit::io::write_record(self.w, r)?;
        Ok(())
    }

    /// One JSON value as it is, on one line (a record to hand on).
    pub fn value(&mut self, v: &Value) -> Result<(), Exit> {
        writeln!(self.w, "{v}")?;
        Ok(())
    }

    /// Text as it is (a script, sweep's settings), flushed.
    pub fn text(&mut self, text: &str) -> Result<(), Exit> {
        self.w.write_all(text.as_bytes())?;
        self.w.flush()?;
        Ok(())
    }

    /// Where records are streamed, each flushed by its writer.
    pub fn writer(&mut self) -> &mut dyn Write {
        &mut *self.w
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }

    /// Words, one per line (arguments for a tool).
    pub fn words(&mut self, words: &[String]) -> Result<(), Exit> {
        for w in words {
            writeln!(self.w, "{}", w.replace('\n', " "))?;
        }
        Ok(())
    }
}

/// An answer's fields (`fields`, or all but `type`) as bash assignments,
/// one per line: `name='text'`, an array of scalars `name=('a' 'b')`,
/// absent or null `name=''`, an object its JSON text.
pub fn assignments(v: &Value, fields: &[String]) -> String {
    let names: Vec<String> = if fields.is_empty() {
        v.as_object()
            .map(|o| o.keys().filter(|k| *k != "type").cloned().collect())
            .unwrap_or_default()
    } else {
        fields.to_vec()
    };
    let mut out = String::new();
    for n in names {
        let rhs = match v.get(&n) {
            Some(Value::Array(a)) => {
                let q: Vec<String> = a.iter().map(|x| single(&scalar(x))).collect();
                format!("({})", q.join(" "))
            }
            other => single(&other.map(scalar).unwrap_or_default()),
        };
        out.push_str(&format!("{}={rhs}\n", n.replace('-', "_")));
    }
    out
}

/// A JSON value as the text a shell variable holds.
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A field's value as one line of text.
fn field_text(v: Option<&Value>) -> String {
    let s = match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| field_text(Some(x)))
            .collect::<Vec<_>>()
            .join(" "),
        Some(other) => other.to_string(),
    };
    s.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_becomes_quoted_assignments() {
        let v = serde_json::json!({"type": "step", "action": "run", "index": 3,
            "to_swap": ["--set", "k=$(rm -rf /)"], "none": null, "obj": {"a": 1}});
        assert_eq!(
            assignments(&v, &[]),
            "action='run'\nindex='3'\nto_swap=('--set' 'k=$(rm -rf /)')\nnone=''\nobj='{\"a\":1}'\n"
        );
        assert_eq!(
            assignments(&v, &["index".into(), "gone".into()]),
            "index='3'\ngone=''\n"
        );
    }
}
