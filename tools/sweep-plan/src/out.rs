//! How answers are written: JSON Lines (one object per answer, flushed per
//! line), or with `--field NAME...` the named fields one per line, so a
//! script reads them with `mapfile -t` and parses no JSON. A value holds
//! no newline there (each is replaced by a space), so lines stay fields.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;
use sweepkit::records::Record;
use sweepkit::report::Exit;

pub struct Out<'a, W: Write> {
    fields: &'a [String],
    w: &'a mut W,
}

impl<'a, W: Write> Out<'a, W> {
    pub fn new(fields: &'a [String], w: &'a mut W) -> Self {
        Out { fields, w }
    }

    /// One answer object.
    pub fn answer(&mut self, a: &impl Serialize) -> Result<(), Exit> {
        let v = serde_json::to_value(a).map_err(anyhow::Error::from)?;
        if self.fields.is_empty() {
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

    /// Words, one per line (arguments for a tool).
    pub fn words(&mut self, words: &[String]) -> Result<(), Exit> {
        for w in words {
            writeln!(self.w, "{}", w.replace('\n', " "))?;
        }
        Ok(())
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
