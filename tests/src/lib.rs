//! Support for the pipeline tests: renders `man/sweepkit-records.5` from the
//! doc comments in `tools/sweepkit/src/records/` (so the page cannot drift
//! from the types), and lists the dotted field paths the page documents, which
//! the contract test checks real tool output against.

use std::collections::BTreeMap;

/// The source the page is generated from: the record types
/// (`tools/sweepkit/src/records.rs`, or each file of `records/`, in name
/// order) and the line formats (`lines.rs`).
pub fn records_source() -> String {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/sweepkit/src");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(src.join("records"))
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.sort();
    files.insert(0, src.join("records.rs"));
    files.push(src.join("lines.rs"));
    files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "rs"))
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One struct field as written in the record types.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: String,
    pub doc: String,
    /// `#[serde(flatten)]`: its fields appear in the parent object.
    pub flatten: bool,
}

/// A struct or enum of the record types.
#[derive(Debug, Clone)]
pub enum Item {
    Struct {
        doc: String,
        fields: Vec<Field>,
    },
    Enum {
        doc: String,
        variants: Vec<(String, String)>,
        /// A catch-all variant (`#[serde(untagged)] Other(String)`) keeps
        /// a value this version does not know.
        open: bool,
    },
}

/// Parse the `pub struct` and `pub enum` items of the record types with their docs.
pub fn parse_items(src: &str) -> BTreeMap<String, Item> {
    let mut items = BTreeMap::new();
    let mut doc: Vec<String> = Vec::new();
    let mut lines = src.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push(d.trim().to_string());
            continue;
        }
        if t.starts_with("#[") {
            continue;
        }
        let head = t.strip_prefix("pub struct ").map(|r| (true, r));
        let head = head.or_else(|| t.strip_prefix("pub enum ").map(|r| (false, r)));
        let Some((is_struct, rest)) = head else {
            doc.clear();
            continue;
        };
        let name = rest
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("")
            .to_string();
        let item_doc = doc.join(" ");
        doc.clear();
        if t.ends_with(';') {
            // A tuple or unit struct (`BatchSize(pub u64);`): no fields, no block.
            continue;
        }
        let mut fields = Vec::new();
        let mut variants = Vec::new();
        let mut fdoc: Vec<String> = Vec::new();
        let mut flatten = false;
        let (mut rename, mut untagged, mut open) = (None, false, false);
        for inner in lines.by_ref() {
            let t = inner.trim();
            if t == "}" {
                break;
            }
            if let Some(d) = t.strip_prefix("///") {
                fdoc.push(d.trim().to_string());
            } else if t.starts_with("#[") {
                flatten |= t.starts_with("#[serde(") && t.contains("flatten");
                untagged |= t == "#[serde(untagged)]";
                if let Some(r) = t.strip_prefix("#[serde(rename = \"") {
                    rename = r.split('"').next().map(str::to_string);
                }
            } else if t.starts_with("//") || t.is_empty() {
                continue;
            } else if is_struct {
                if let Some((n, ty)) = t.strip_prefix("pub ").and_then(|r| r.split_once(':')) {
                    let ty = ty.trim().trim_end_matches(',').to_string();
                    fields.push(Field {
                        name: n.trim().to_string(),
                        ty,
                        doc: fdoc.join(" "),
                        flatten,
                    });
                }
                fdoc.clear();
                flatten = false;
            } else {
                let v = t.trim_end_matches(',');
                let v = v.split('(').next().unwrap_or(v).trim();
                if std::mem::take(&mut untagged) {
                    open = true;
                } else {
                    let name = rename.take().unwrap_or_else(|| snake(v));
                    let name = if name.is_empty() { "\"\"".into() } else { name };
                    variants.push((name, fdoc.join(" ")));
                }
                rename = None;
                fdoc.clear();
            }
        }
        let item = if is_struct {
            Item::Struct {
                doc: item_doc,
                fields,
            }
        } else {
            Item::Enum {
                doc: item_doc,
                variants,
                open,
            }
        };
        items.insert(name, item);
    }
    items
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The struct named inside a field type, ignoring Option<>, Vec<>, Box<>.
fn inner_type(ty: &str) -> &str {
    let mut t = ty.trim();
    for wrap in ["Option<", "Vec<", "Box<"] {
        if let Some(r) = t.strip_prefix(wrap) {
            t = r.strip_suffix('>').unwrap_or(r);
        }
    }
    t
}

/// The record types and the struct each is: the core crate's one list.
pub use sweepkit::records::RECORD_TYPES as RECORDS;

/// Every documented dotted path of a record type: (path, type, doc).
pub fn paths(items: &BTreeMap<String, Item>, root: &str) -> Vec<(String, String, String)> {
    let mut out = vec![(
        "type".to_string(),
        "string".to_string(),
        "Record type tag.".into(),
    )];
    walk(items, root, "", &mut out, 0);
    out
}

fn walk(
    items: &BTreeMap<String, Item>,
    name: &str,
    prefix: &str,
    out: &mut Vec<(String, String, String)>,
    depth: usize,
) {
    let Some(Item::Struct { fields, .. }) = items.get(name) else {
        return;
    };
    for f in fields {
        let inner = inner_type(&f.ty);
        if f.flatten {
            // serde writes the inner struct's fields into this object; each
            // says when they are there.
            let mut inner_fields = Vec::new();
            walk(items, inner, prefix, &mut inner_fields, depth + 1);
            for (p, ty, d) in inner_fields {
                out.push((p, ty, format!("{d} {}", f.doc).trim().to_string()));
            }
            continue;
        }
        let path = format!("{prefix}{}", f.name);
        let mut doc = f.doc.clone();
        if doc.is_empty() && prefix.is_empty() {
            doc = shared_doc(&f.name).unwrap_or("").to_string();
        }
        if let Some(Item::Enum { variants, open, .. }) = items.get(inner) {
            let vals: Vec<&str> = variants.iter().map(|(v, _)| v.as_str()).collect();
            let newer = if *open {
                " A reader keeps a value it does not know (a newer writer's) as it is."
            } else {
                ""
            };
            doc = format!("{doc} One of: {}.{newer}", vals.join(", "))
                .trim()
                .to_string();
        }
        out.push((path.clone(), pretty_type(&f.ty), doc));
        if depth < 4 && matches!(items.get(inner), Some(Item::Struct { .. })) {
            walk(items, inner, &format!("{path}."), out, depth + 1);
        }
    }
}

/// A reader's name for a Rust field type.
fn pretty_type(ty: &str) -> String {
    let t = ty.trim();
    if let Some(r) = t.strip_prefix("Option<").and_then(|r| r.strip_suffix('>')) {
        return format!("{}, optional", pretty_type(r));
    }
    if let Some(r) = t.strip_prefix("Vec<").and_then(|r| r.strip_suffix('>')) {
        return format!("array of {}", pretty_type(r));
    }
    match t {
        "u8" | "u16" | "u32" | "u64" | "i32" | "i64" | "usize" => "integer".into(),
        "f64" | "f32" => "number".into(),
        "String" => "string".into(),
        "bool" => "boolean".into(),
        "Value" => "any JSON".into(),
        "Config" => "object of string to string".into(),
        _ if t.starts_with("BTreeMap<String, u64>") => "object of string to integer".into(),
        _ if t.starts_with("BTreeMap<String, Config>") => "object of string to config".into(),
        _ if t.starts_with("BTreeMap") || t.starts_with("serde_json::Map") => "object".into(),
        other => format!("object: {other}"),
    }
}

/// Docs for the fields every record shares, written once here.
fn shared_doc(name: &str) -> Option<&'static str> {
    Some(match name {
        "schema" => "Record schema number (see DESCRIPTION).",
        "config" => "Launch parameter (flag name without dashes) -> value: what the results are labelled and grouped by.",
        "provenance" => "Who wrote the record, with what version, when.",
        "upstream" => "The whole record this tool read from stdin, kept as it was.",
        _ => return None,
    })
}

fn roff_escape(s: &str) -> String {
    let s = s.replace('\\', "\\\\").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// Render the whole man page: the hand-written head, then one section per
/// record type listing every field path with its type and doc comment.
pub fn render_records_page(records_rs: &str, head: &str, tail: &str) -> String {
    let items = parse_items(records_rs);
    let mut page = String::from(head);
    for (tag, strukt) in RECORDS {
        let doc = match items.get(strukt) {
            Some(Item::Struct { doc, .. }) => doc.clone(),
            _ => String::new(),
        };
        page.push_str(&format!(".SS \"{tag} record\"\n{}\n", roff_escape(&doc)));
        for (path, ty, fdoc) in paths(&items, strukt) {
            let doc = if path == "type" {
                format!("Always \"{tag}\".")
            } else {
                fdoc
            };
            page.push_str(&format!(
                ".TP\n.B {}\n({}) {}\n",
                roff_escape(&path),
                roff_escape(&ty),
                roff_escape(&doc)
            ));
        }
    }
    page.push_str(&line_formats(&items));
    page.push_str(tail);
    page
}

/// The LINE FORMATS section: lines that are not records (no `type` tag).
fn line_formats(items: &BTreeMap<String, Item>) -> String {
    let mut page = String::from(
        ".SH \"LINE FORMATS\"\n\
         Two outputs are not records: they carry no \\fBtype\\fR tag, \\fBconfig\\fR\n\
         or \\fBprovenance\\fR, and no tool reads them back.\n\
         Their fields are listed the same way (a field that is absent is listed\n\
         as optional or says when it is present).\n",
    );
    for (name, strukt) in sweepkit::lines::LINE_FORMATS {
        let doc = match items.get(strukt) {
            Some(Item::Struct { doc, .. }) => doc.clone(),
            _ => String::new(),
        };
        page.push_str(&format!(
            ".SS \"{}\"\n{}\n",
            roff_escape(name),
            roff_escape(&doc)
        ));
        let mut fields = Vec::new();
        walk(items, strukt, "", &mut fields, 0);
        for (path, ty, fdoc) in fields {
            page.push_str(&format!(
                ".TP\n.B {}\n({}) {}\n",
                roff_escape(&path),
                roff_escape(&ty),
                roff_escape(&fdoc)
            ));
        }
    }
    page
}

/// The paths in a line of a LINE FORMATS struct (`RequestLine`) that the
/// page does not document.
pub fn undocumented_line(records_rs: &str, strukt: &str, line: &serde_json::Value) -> Vec<String> {
    let items = parse_items(records_rs);
    let mut known = Vec::new();
    walk(&items, strukt, "", &mut known, 0);
    let known: Vec<String> = known.into_iter().map(|(p, _, _)| p).collect();
    let mut missing = Vec::new();
    check(line, "", &known, &mut missing);
    missing
}

/// Fields whose values are free-form maps: their keys are data, not fields
/// (a schedule's two are the servers' own JSON, documented as such).
const FREE_MAPS: [&str; 9] = [
    "config",
    "errors",
    "best_per_level",
    "args",
    "upstream",
    "details",
    "best_config",
    "speculative_config",
    "adaptive_config",
];

/// The paths in a real record (a JSON object) that the page does not document.
pub fn undocumented(records_rs: &str, record: &serde_json::Value) -> Vec<String> {
    let items = parse_items(records_rs);
    let tag = record["type"].as_str().unwrap_or("");
    let Some((_, strukt)) = RECORDS.iter().find(|(t, _)| *t == tag) else {
        return vec![format!("unknown type {tag:?}")];
    };
    let known: Vec<String> = paths(&items, strukt)
        .into_iter()
        .map(|(p, _, _)| p)
        .collect();
    let mut missing = Vec::new();
    check(record, "", &known, &mut missing);
    missing
}

fn check(v: &serde_json::Value, prefix: &str, known: &[String], missing: &mut Vec<String>) {
    let Some(obj) = v.as_object() else { return };
    for (k, child) in obj {
        let path = format!("{prefix}{k}");
        if !known.contains(&path) {
            missing.push(path);
            continue;
        }
        let leaf = path.rsplit('.').next().unwrap_or(&path);
        if !FREE_MAPS.contains(&leaf) {
            check(child, &format!("{path}."), known, missing);
        }
    }
}
