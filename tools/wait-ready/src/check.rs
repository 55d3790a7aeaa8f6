//! What a probe's response must satisfy: accepted statuses, JSON values at
//! paths (compared, not only present, unlike wait4x), and a body regex.

use regex::Regex;
use serde_json::Value;
use sweepkit::exit::Exit;

use crate::cli::usage;

/// Accepted HTTP statuses, as inclusive ranges.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusSet(Vec<(u16, u16)>);

impl StatusSet {
    /// Parse `200,204`, `2xx`, `200-399` (commas or spaces between items).
    pub fn parse(s: &str) -> Result<Self, Exit> {
        let mut ranges = Vec::new();
        for item in s.split([',', ' ']).filter(|i| !i.is_empty()) {
            let bad = || {
                usage(format!(
                    "--expect-status: bad status '{item}' (use 200, 2xx or 200-299)"
                ))
            };
            let r = if let Some(class) = item.strip_suffix("xx").or(item.strip_suffix("XX")) {
                let c: u16 = class.parse().map_err(|_| bad())?;
                (c * 100, c * 100 + 99)
            } else if let Some((a, b)) = item.split_once('-') {
                (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)
            } else {
                let c: u16 = item.parse().map_err(|_| bad())?;
                (c, c)
            };
            if !(100..=599).contains(&r.0) || !(100..=599).contains(&r.1) || r.0 > r.1 {
                return Err(bad());
            }
            ranges.push(r);
        }
        if ranges.is_empty() {
            return Err(usage("--expect-status: empty list"));
        }
        Ok(StatusSet(ranges))
    }

    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&code))
    }

    /// 2xx.
    pub fn success() -> Self {
        StatusSet(vec![(200, 299)])
    }

    /// Any status but 503 (Service Unavailable: still loading or warming
    /// up); a server without the path (404) passes.
    pub fn not_unavailable() -> Self {
        StatusSet(vec![(100, 502), (504, 599)])
    }
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A path like `.status`, `a.b[0].c` or `.data[0]."served-model"`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    pub text: String,
    pub steps: Vec<Step>,
}

/// Why a JSON path does not read: the path and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON path '{text}': {what}")]
pub struct PathError {
    pub text: String,
    pub what: String,
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let err = |what: &str| PathError {
            text: text.to_string(),
            what: what.to_string(),
        };
        let chars: Vec<char> = text.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        // A leading dot is optional (`.a.b` and `a.b` are the same path).
        if chars.first() == Some(&'.') {
            i = 1;
        }
        if i >= chars.len() {
            return Err(err("empty path"));
        }
        let mut need_key = chars.first() != Some(&'[');
        while i < chars.len() {
            match chars[i] {
                '[' => {
                    let end = chars[i..]
                        .iter()
                        .position(|&c| c == ']')
                        .ok_or_else(|| err("unclosed '['"))?;
                    let inner: String = chars[i + 1..i + end].iter().collect();
                    let idx = inner
                        .parse()
                        .map_err(|_| err(&format!("index '{inner}' is not a number")))?;
                    steps.push(Step::Index(idx));
                    i += end + 1;
                    need_key = false;
                }
                '.' if !need_key => {
                    i += 1;
                    need_key = true;
                    if i >= chars.len() {
                        return Err(err("ends with '.'"));
                    }
                }
                '"' if need_key => {
                    let end = chars[i + 1..]
                        .iter()
                        .position(|&c| c == '"')
                        .ok_or_else(|| err("unclosed '\"'"))?;
                    steps.push(Step::Key(chars[i + 1..i + 1 + end].iter().collect()));
                    i += end + 2;
                    need_key = false;
                }
                c if need_key && is_key_char(c) => {
                    let start = i;
                    while i < chars.len() && is_key_char(chars[i]) {
                        i += 1;
                    }
                    steps.push(Step::Key(chars[start..i].iter().collect()));
                    need_key = false;
                }
                c => return Err(err(&format!("unexpected '{c}' at {}", i + 1))),
            }
        }
        if need_key {
            return Err(err("missing key"));
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value at this path, if present.
    pub fn get<'v>(&self, mut v: &'v Value) -> Option<&'v Value> {
        for step in &self.steps {
            v = match step {
                Step::Key(k) => v.as_object()?.get(k)?,
                Step::Index(i) => v.as_array()?.get(*i)?,
            };
        }
        Some(v)
    }
}

fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '@' | '$')
}

/// `--expect-json PATH[=VALUE]`.
#[derive(Debug, Clone)]
pub struct JsonExpect {
    pub path: JsonPath,
    /// None: the path must exist.
    pub value: Option<String>,
}

impl JsonExpect {
    pub fn parse(s: &str) -> Result<Self, Exit> {
        // The path cannot contain '=' outside quotes; split at the first one.
        let (p, v) = match split_outside_quotes(s, '=') {
            Some((p, v)) => (p, Some(v.to_string())),
            None => (s, None),
        };
        Ok(JsonExpect {
            path: JsonPath::parse(p).map_err(|e| usage(format!("--expect-json: {e}")))?,
            value: v,
        })
    }

    /// None when satisfied, else why not.
    pub fn check(&self, body: &Value) -> Option<String> {
        let Some(found) = self.path.get(body) else {
            return Some(format!("{} missing", self.path.text));
        };
        let want = self.value.as_ref()?;
        if json_matches(found, want) {
            None
        } else {
            Some(format!("{} is {found}, want {want}", self.path.text))
        }
    }
}

/// `found` equals `want` read as JSON (`5`, `true`, `"ok"`) or as a string
/// (`ok`), or numerically (`5` vs `5.0`), or as the text of a scalar.
pub fn json_matches(found: &Value, want: &str) -> bool {
    if let Ok(w) = serde_json::from_str::<Value>(want) {
        if &w == found {
            return true;
        }
        if let (Some(a), Some(b)) = (w.as_f64(), found.as_f64()) {
            return a == b;
        }
    }
    match found {
        Value::String(s) => s == want,
        Value::Number(n) => want.parse::<f64>().ok() == n.as_f64(),
        Value::Bool(b) => want.eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        Value::Null => want == "null" || want.is_empty(),
        _ => false,
    }
}

fn split_outside_quotes(s: &str, sep: char) -> Option<(&str, &str)> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c == sep && !quoted => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Everything a response must satisfy.
#[derive(Debug, Clone)]
pub struct Expect {
    pub status: StatusSet,
    pub json: Vec<JsonExpect>,
    pub body: Option<Regex>,
}

impl Expect {
    /// Only the status (preset-added targets).
    pub fn status_only(status: StatusSet) -> Self {
        Expect {
            status,
            json: Vec::new(),
            body: None,
        }
    }

    pub fn needs_body(&self) -> bool {
        !self.json.is_empty() || self.body.is_some()
    }

    /// None when the response passes, else the first reason it does not.
    pub fn check(&self, status: u16, body: &str) -> Option<String> {
        if !self.status.contains(status) {
            return Some(format!("HTTP {status}"));
        }
        if let Some(re) = &self.body {
            if !re.is_match(body) {
                return Some(format!("body does not match /{}/", re.as_str()));
            }
        }
        if !self.json.is_empty() {
            let v: Value = match serde_json::from_str(body) {
                Ok(v) => v,
                Err(e) => return Some(format!("body is not JSON: {e}")),
            };
            for j in &self.json {
                if let Some(why) = j.check(&v) {
                    return Some(why);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_sets() {
        let s = StatusSet::parse("200,204 3xx 400-401").unwrap();
        for c in [200, 204, 301, 399, 400, 401] {
            assert!(s.contains(c), "{c}");
        }
        for c in [201, 402, 503] {
            assert!(!s.contains(c), "{c}");
        }
        assert!(StatusSet::parse("abc").is_err());
        assert!(StatusSet::parse("9xx").is_err());
        assert!(StatusSet::parse("300-200").is_err());
        assert!(StatusSet::parse("").is_err());
    }

    #[test]
    fn paths_parse_and_resolve() {
        let v = json!({"a": {"b": [{"c": 3}]}, "status": "ok", "x-y": {"k.z": 1}});
        let get = |p: &str| JsonPath::parse(p).unwrap().get(&v).cloned();
        assert_eq!(get(".status"), Some(json!("ok")));
        assert_eq!(get("a.b[0].c"), Some(json!(3)));
        assert_eq!(get(".a.b[0]"), Some(json!({"c": 3})));
        assert_eq!(get(r#".x-y."k.z""#), Some(json!(1)));
        assert_eq!(get(".a.b[1]"), None);
        assert_eq!(get(".nope"), None);
    }

    #[test]
    fn malformed_paths_are_named() {
        for bad in ["", ".", "a..b", "a[", "a[x]", "a.", "a b", "[0", "a]"] {
            let e = JsonPath::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn values_compare_as_json_or_string() {
        assert!(json_matches(&json!("ok"), "ok"));
        assert!(json_matches(&json!("ok"), "\"ok\""));
        assert!(json_matches(&json!(5), "5"));
        assert!(json_matches(&json!(5.0), "5"));
        assert!(json_matches(&json!(true), "true"));
        assert!(json_matches(&json!([1, 2]), "[1,2]"));
        assert!(!json_matches(&json!("5x"), "5"));
        assert!(!json_matches(&json!(4), "5"));
    }

    #[test]
    fn expect_json_splits_at_first_equals() {
        let e = JsonExpect::parse(".a=b=c").unwrap();
        assert_eq!(e.value.as_deref(), Some("b=c"));
        assert!(e.check(&json!({"a": "b=c"})).is_none());
        let exists = JsonExpect::parse(".data[0]").unwrap();
        assert!(exists.check(&json!({"data": []})).is_some());
        assert!(JsonExpect::parse("a[=1").is_err());
    }

    #[test]
    fn expect_checks_in_order() {
        let e = Expect {
            status: StatusSet::success(),
            json: vec![JsonExpect::parse(".status=ready").unwrap()],
            body: Some(Regex::new("ready").unwrap()),
        };
        assert_eq!(e.check(503, "").as_deref(), Some("HTTP 503"));
        assert!(e.check(200, r#"{"status":"ready"}"#).is_none());
        assert!(e
            .check(200, r#"{"status":"loading"}"#)
            .unwrap()
            .contains("body"));
        assert!(e
            .check(200, r#"{"status":"not ready"}"#)
            .unwrap()
            .contains("want ready"));
    }
}
