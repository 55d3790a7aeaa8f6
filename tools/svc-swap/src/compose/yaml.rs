//! A Compose service's `command:` located in the file's text by a real YAML
//! parser (saphyr-parser, the maintained successor of yaml-rust2, whose
//! events carry spans), and rewritten by replacing only that text: the rest
//! of the file (comments, anchors, key order, quoting) stays byte for byte.
//! Pure: no I/O.
//!
//! What cannot be edited safely is refused with a reason: a command that
//! comes from an alias, a merge key (`<<:`) or `extends:`, one that is
//! anchored (another service may share it) or tagged (`!reset`), a block
//! scalar, a service that is missing, or one with no `command:` (the
//! image's CMD runs). A word with a variable in it (`${MODEL}`) is kept as
//! written: Compose fills it in, the flag rules see it as written, and an
//! edit that leaves it alone leaves its text alone.
//!
//! Words: the list form's items are the argv; the string form is split as
//! a POSIX shell would, without expansions (Docker Compose: compose-go
//! `types/command.go`, `ShellCommand.UnmarshalYAML`: a scalar goes through
//! `shellwords.Parse`, a sequence's item values are taken as they are;
//! podman-compose 1.6: `shlex.split`, podman_compose.py
//! `container_to_args`). `$$` is Compose's literal `$` (see `literal`).

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

/// Why a service's command cannot be found or edited safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    #[error("not valid YAML: {0}")]
    NotYaml(String),
    #[error("no top-level mapping")]
    NoTopMapping,
    #[error("no services: section")]
    NoServices,
    #[error("services: at line {0} is not a mapping")]
    ServicesNotMapping(usize),
    #[error("no service {0:?} under services:")]
    NoService(String),
    #[error("service {service} at line {line} is not a plain mapping (an alias?); svc-swap edits only a command written in the service itself")]
    ServiceNotMapping { service: String, line: usize },
    /// The command comes from `what` (a merge key, `extends:`) at `line`.
    #[error("service {service} has no command: of its own; one from {what} at line {line} is shared, and svc-swap does not edit it")]
    SharedCommand {
        service: String,
        what: &'static str,
        line: usize,
    },
    #[error(
        "service {0} has no command: (its image's CMD runs); write the command into the file first"
    )]
    NoCommand(String),
    /// The command string does not split as a shell would.
    #[error("service {service}'s command: at line {line}: {why}")]
    Split {
        service: String,
        line: usize,
        why: String,
    },
    #[error("service {service}'s command: at line {line} {shape}")]
    Shape {
        service: String,
        line: usize,
        shape: Shape,
    },
}

/// What about a command's value stops an edit (said after "command: at
/// line N").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Shape {
    #[error("is an alias (*name); edit the anchor's owner")]
    Alias,
    #[error("is anchored or tagged (another service may share it)")]
    Anchored,
    #[error("is a block scalar (| or >); write it as a list or one line")]
    BlockScalar,
    #[error("is a mapping, not a string or a list")]
    Mapping,
    #[error("is empty")]
    Empty,
    #[error("has an item at line {0} that is not a plain string")]
    NotPlainItem(usize),
    #[error("has an anchored, tagged or block item at line {0}")]
    DecoratedItem(usize),
    #[error("has a flow list whose end svc-swap cannot find")]
    FlowEnd,
    #[error("has comments inside its [ ] list, which an edit would lose")]
    FlowComments,
    #[error("has an item not written as `- value` on its own line ({0:?})")]
    NotOwnLine(String),
    #[error("has an item that spans lines")]
    MultiLineItem,
}

/// Where the command is and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The argv words as the container gets them (`$$` read as `$`).
    pub words: Vec<String>,
    /// 1-based line of the command's value, for messages.
    pub line: usize,
    form: Form,
}

#[derive(Debug, Clone, PartialEq)]
enum Form {
    /// `command: a b c` (plain, single- or double-quoted): its byte span.
    Str {
        start: usize,
        end: usize,
        style: ScalarStyle,
    },
    /// `command: [a, b]`: the span from `[` to `]` inclusive, item styles.
    Flow {
        start: usize,
        end: usize,
        items: Vec<Item>,
    },
    /// `command:` then `- a` lines.
    Block { indent: String, items: Vec<Item> },
}

#[derive(Debug, Clone, PartialEq)]
struct Item {
    /// Byte span of the scalar (quotes included).
    start: usize,
    end: usize,
    style: ScalarStyle,
    /// Block form: the item's lines, from the start of its `-` line to the
    /// start of the next item's (comments between belong to it).
    slot: (usize, usize),
}

type Ev<'a> = (Event<'a>, Span);

struct Doc<'a> {
    text: &'a str,
    ev: Vec<Ev<'a>>,
    /// Byte offset of each char index (saphyr's markers count chars).
    bytes: Vec<usize>,
}

impl<'a> Doc<'a> {
    fn parse(text: &'a str) -> Result<Doc<'a>, LocateError> {
        let mut ev = Vec::new();
        let mut p = Parser::new_from_str(text);
        while let Some(r) = p.next_event() {
            ev.push(r.map_err(|e| LocateError::NotYaml(e.to_string()))?);
        }
        let mut bytes: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        bytes.push(text.len());
        Ok(Doc { text, ev, bytes })
    }
    fn at(&self, char_index: usize) -> usize {
        self.bytes[char_index.min(self.bytes.len() - 1)]
    }
    fn start(&self, i: usize) -> usize {
        self.at(self.ev[i].1.start.index())
    }
    fn end(&self, i: usize) -> usize {
        self.at(self.ev[i].1.end.index())
    }
    fn line(&self, i: usize) -> usize {
        self.ev[i].1.start.line()
    }
    /// The index after the node that starts at `i`.
    fn skip(&self, i: usize) -> usize {
        match self.ev[i].0 {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let mut j = i + 1;
                while !matches!(self.ev[j].0, Event::SequenceEnd | Event::MappingEnd) {
                    j = self.skip(j);
                }
                j + 1
            }
            _ => i + 1,
        }
    }
    /// `(key, value)` event indexes of the mapping that starts at `i`.
    fn entries(&self, i: usize) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        let mut j = i + 1;
        while !matches!(self.ev[j].0, Event::MappingEnd) {
            let k = j;
            let val = self.skip(k);
            j = self.skip(val);
            v.push((k, val));
        }
        v
    }
    fn key_is(&self, k: usize, name: &str) -> bool {
        matches!(&self.ev[k].0, Event::Scalar(s, ..) if s == name)
    }
    fn get(&self, map: usize, name: &str) -> Option<usize> {
        self.entries(map)
            .into_iter()
            .find(|(k, _)| self.key_is(*k, name))
            .map(|(_, v)| v)
    }
}

/// Find `services.SERVICE.command` in `text`.
pub fn locate(text: &str, service: &str) -> Result<Located, LocateError> {
    let d = Doc::parse(text)?;
    let root =
        d.ev.iter()
            .position(|(e, _)| matches!(e, Event::MappingStart(..)))
            .ok_or(LocateError::NoTopMapping)?;
    let services = d.get(root, "services").ok_or(LocateError::NoServices)?;
    if !matches!(d.ev[services].0, Event::MappingStart(..)) {
        return Err(LocateError::ServicesNotMapping(d.line(services)));
    }
    let svc = d
        .get(services, service)
        .ok_or_else(|| LocateError::NoService(service.into()))?;
    if !matches!(d.ev[svc].0, Event::MappingStart(..)) {
        return Err(LocateError::ServiceNotMapping {
            service: service.into(),
            line: d.line(svc),
        });
    }
    let Some(cmd) = d.get(svc, "command") else {
        for (via, what) in [("<<", "a merge key (<<:)"), ("extends", "extends:")] {
            if let Some(v) = d.get(svc, via) {
                return Err(LocateError::SharedCommand {
                    service: service.into(),
                    what,
                    line: d.line(v),
                });
            }
        }
        return Err(LocateError::NoCommand(service.into()));
    };
    let at = d.line(cmd);
    let refuse = |shape: Shape| {
        Err(LocateError::Shape {
            service: service.into(),
            line: at,
            shape,
        })
    };
    let (words, form) = match &d.ev[cmd].0 {
        Event::Alias(_) => return refuse(Shape::Alias),
        Event::Scalar(_, _, a, t) | Event::SequenceStart(a, t) if *a != 0 || t.is_some() => {
            return refuse(Shape::Anchored)
        }
        Event::Scalar(s, style, ..) => {
            if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                return refuse(Shape::BlockScalar);
            }
            let words: Vec<String> = shell_words::split(s)
                .map_err(|e| LocateError::Split {
                    service: service.into(),
                    line: at,
                    why: e.to_string(),
                })?
                .iter()
                .map(|w| literal(w))
                .collect();
            let form = Form::Str {
                start: d.start(cmd),
                end: d.end(cmd),
                style: *style,
            };
            (words, form)
        }
        Event::SequenceStart(..) => match seq(&d, cmd) {
            Ok(found) => found,
            Err(shape) => return refuse(shape),
        },
        _ => return refuse(Shape::Mapping),
    };
    if words.is_empty() {
        return refuse(Shape::Empty);
    }
    Ok(Located {
        words,
        line: at,
        form,
    })
}

/// A plain scalar written in the service itself (`stop_grace_period`),
/// `None` when absent, not a scalar, or the file does not parse.
pub fn service_scalar(text: &str, service: &str, key: &str) -> Option<String> {
    let d = Doc::parse(text).ok()?;
    let root =
        d.ev.iter()
            .position(|(e, _)| matches!(e, Event::MappingStart(..)))?;
    let services = d.get(root, "services")?;
    if !matches!(d.ev[services].0, Event::MappingStart(..)) {
        return None;
    }
    let svc = d.get(services, service)?;
    if !matches!(d.ev[svc].0, Event::MappingStart(..)) {
        return None;
    }
    match &d.ev[d.get(svc, key)?].0 {
        Event::Scalar(s, ..) => Some(s.to_string()),
        _ => None,
    }
}

/// The list form: its words and where each item is.
fn seq(d: &Doc, at: usize) -> Result<(Vec<String>, Form), Shape> {
    let end = d.skip(at) - 1;
    let mut words = Vec::new();
    let mut items = Vec::new();
    for i in at + 1..end {
        let Event::Scalar(s, style, a, t) = &d.ev[i].0 else {
            return Err(Shape::NotPlainItem(d.line(i)));
        };
        if *a != 0 || t.is_some() || matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
            return Err(Shape::DecoratedItem(d.line(i)));
        }
        words.push(literal(s));
        items.push(Item {
            start: d.start(i),
            end: d.end(i),
            style: *style,
            slot: (0, 0),
        });
    }
    let open = d.start(at);
    if d.text[open..].starts_with('[') {
        let close = d.start(end);
        if !d.text[close..].starts_with(']') {
            return Err(Shape::FlowEnd);
        }
        if d.text[open..close].contains('#')
            && !items.iter().any(|i| d.text[i.start..i.end].contains('#'))
        {
            return Err(Shape::FlowComments);
        }
        return Ok((
            words,
            Form::Flow {
                start: open,
                end: close + 1,
                items,
            },
        ));
    }
    // Block: each item on its own `INDENT- ` line.
    let line_start = |b: usize| d.text[..b].rfind('\n').map_or(0, |n| n + 1);
    let mut indent = None;
    for it in &mut items {
        let ls = line_start(it.start);
        let lead = &d.text[ls..it.start];
        let pad = lead.trim_end_matches([' ', '\t']);
        let Some(ind) = pad
            .strip_suffix('-')
            .filter(|p| p.chars().all(|c| c == ' '))
        else {
            return Err(Shape::NotOwnLine(lead.to_string()));
        };
        if d.text[it.start..it.end].contains('\n') {
            return Err(Shape::MultiLineItem);
        }
        indent.get_or_insert_with(|| ind.to_string());
        it.slot.0 = ls;
    }
    let n = items.len();
    for k in 0..n {
        let stop = if k + 1 < n {
            items[k + 1].slot.0
        } else {
            let e = items[k].end;
            d.text[e..].find('\n').map_or(d.text.len(), |x| e + x + 1)
        };
        items[k].slot.1 = stop;
    }
    Ok((
        words,
        Form::Block {
            indent: indent.unwrap_or_default(),
            items,
        },
    ))
}

/// True when Compose would fill something in here: a `$` followed by a
/// variable name (`[_a-zA-Z][_a-zA-Z0-9]*`) or `{`; `$$` is a literal `$`
/// and any other `$` stays as written (docs.docker.com/reference/
/// compose-file/interpolation).
pub fn interpolates(s: &str) -> bool {
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '$' {
            match it.peek() {
                Some('$') => {
                    it.next();
                }
                Some(n) if *n == '{' || *n == '_' || n.is_ascii_alphabetic() => return true,
                _ => {}
            }
        }
    }
    false
}

/// A word as the container gets it: `$$` read as `$`; a word Compose
/// interpolates is kept as written (`${MODEL}`), its value is Compose's.
fn literal(s: &str) -> String {
    if interpolates(s) {
        s.to_string()
    } else {
        s.replace("$$", "$")
    }
}

/// A word as the file must hold it: `$` written as Compose's `$$`, except
/// in a word the file already holds with a variable in it (kept as is).
fn escape(w: &str, old: &[String]) -> String {
    if interpolates(w) && old.iter().any(|o| o == w) {
        w.to_string()
    } else {
        w.replace('$', "$$")
    }
}

/// A plain YAML scalar that reads back as this same string (YAML 1.2
/// 7.3.3; flow context forbids `,`).
fn plain_ok(w: &str, flow: bool) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_./=+^~:".contains(c) || (!flow && c == ',');
    !w.is_empty()
        && w.chars().all(ok)
        && !w.starts_with([':', '~'])
        && w != "-"
        && !w.ends_with(':')
        && !resolves_to_non_string(w)
}

/// YAML 1.1 or 1.2 could read these as a number, bool or null (1_000,
/// 1:20 and 0x1F included), not a string.
fn resolves_to_non_string(w: &str) -> bool {
    let l = w.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "~" | "null"
            | "true"
            | "false"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "y"
            | "n"
            | ".inf"
            | "-.inf"
            | ".nan"
    ) || w.parse::<f64>().is_ok()
        || w.chars().all(|c| c.is_ascii_digit() || "_:.+-".contains(c))
        || l.starts_with("0x")
        || l.starts_with("0o")
}

/// Text (already `$$`-escaped) as a YAML scalar, in `like`'s style where
/// that reads back.
fn render(w: &str, like: ScalarStyle, flow: bool) -> String {
    let w = w.to_string();
    match like {
        ScalarStyle::Plain if plain_ok(&w, flow) => w,
        ScalarStyle::SingleQuoted if !w.contains('\n') => format!("'{}'", w.replace('\'', "''")),
        _ => serde_json::to_string(&w).expect("a string serializes"),
    }
}

/// `text` with the command changed to `words`, everything else unchanged.
pub fn rewrite(text: &str, loc: &Located, words: &[String]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    match &loc.form {
        Form::Str { start, end, style } => {
            let texts: Vec<String> = words.iter().map(|w| escape(w, &loc.words)).collect();
            let joined = shell_words::join(&texts);
            out.push_str(&text[..*start]);
            out.push_str(&render(&joined, *style, false));
            out.push_str(&text[*end..]);
        }
        Form::Flow { start, end, items } => {
            let like = |k: usize| items.get(k).map_or(ScalarStyle::DoubleQuoted, |i| i.style);
            let keep = |k: usize| text[items[k].start..items[k].end].to_string();
            let parts = merge(&loc.words, words, keep, |w, k| {
                render(&escape(w, &loc.words), like(k), true)
            });
            out.push_str(&text[..*start]);
            out.push('[');
            out.push_str(&parts.join(", "));
            out.push(']');
            out.push_str(&text[*end..]);
        }
        Form::Block { indent, items } => {
            let like = |k: usize| items.get(k).map_or(ScalarStyle::Plain, |i| i.style);
            let first = items.first().map_or(0, |i| i.slot.0);
            let last = items.last().map_or(0, |i| i.slot.1);
            let ends_nl = text[..last].ends_with('\n');
            let slot = |k: usize| {
                let s = &text[items[k].slot.0..items[k].slot.1];
                if s.ends_with('\n') {
                    s.to_string()
                } else {
                    format!("{s}\n")
                }
            };
            let parts = merge(&loc.words, words, slot, |w, k| {
                format!(
                    "{indent}- {}\n",
                    render(&escape(w, &loc.words), like(k), false)
                )
            });
            out.push_str(&text[..first]);
            let mut body = parts.concat();
            if !ends_nl {
                body.pop();
            }
            out.push_str(&body);
            out.push_str(&text[last..]);
        }
    }
    out
}

/// The new list of items: an unchanged word keeps its original text
/// (`keep(k)` of old item k), a changed one is rendered anew in the style
/// of the old item it replaces or follows (`fresh(word, k)`).
fn merge(
    old: &[String],
    new: &[String],
    keep: impl Fn(usize) -> String,
    fresh: impl Fn(&str, usize) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                out.extend((old_index..old_index + len).map(&keep));
            }
            similar::DiffOp::Delete { .. } => {}
            similar::DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                let k = old_index.saturating_sub(1);
                out.extend(
                    new[new_index..new_index + new_len]
                        .iter()
                        .map(|w| fresh(w, k)),
                );
            }
            similar::DiffOp::Replace {
                old_index,
                new_index,
                new_len,
                ..
            } => {
                out.extend(
                    new[new_index..new_index + new_len]
                        .iter()
                        .map(|w| fresh(w, old_index)),
                );
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
