//! Prometheus text exposition (format 0.0.4), read once for every tool:
//! loadgen's server scrapes (`vllm:`, `sglang:`, `llamacpp:` names), its
//! speculative-decoding counters and a DCGM exporter's GPU figures.
//!
//! The format, from the Prometheus documentation ("Exposition formats",
//! text-based format): one sample per line, `name{label="value",...} value
//! [timestamp]`; `#` lines are HELP/TYPE comments; label values escape
//! `\\`, `\"` and `\n`; values may be `NaN`, `+Inf`, `-Inf`. The DCGM
//! exporter writes a space after each comma between labels (its README's
//! sample output: `{gpu="0", UUID="GPU-..."}`), which the format allows.
//! A line that does not parse is skipped, not fatal: a scrape is evidence,
//! and one odd line must not cost the rest.

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    /// Label pairs in their order, values unescaped.
    pub labels: Vec<(&'a str, String)>,
    pub value: f64,
}

impl Sample<'_> {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Every sample of `text`, in order; comments, blank and malformed lines
/// are skipped.
pub fn samples(text: &str) -> impl Iterator<Item = Sample<'_>> {
    text.lines().filter_map(sample)
}

/// Parse one line; None for a comment, a blank or a malformed line.
pub fn sample(line: &str) -> Option<Sample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = label_set(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    let value = number(rest.split_whitespace().next()?)?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// A sample value: a float, `NaN`, `+Inf` or `-Inf`.
fn number(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// The labels after `{` up to the closing `}`, and the text after it.
fn label_set(mut s: &str) -> Option<(Vec<(&str, String)>, &str)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if let Some(after) = s.strip_prefix('}') {
            return Some((out, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim();
        let after_eq = s[eq + 1..].trim_start();
        let body = after_eq.strip_prefix('"')?;
        let (value, used) = quoted(body)?;
        out.push((key, value));
        s = &body[used..];
    }
}

/// A label value up to its closing quote, unescaped, and the bytes used
/// (the closing quote included).
fn quoted(s: &str) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, i + 1)),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_values_and_comments() {
        let text = "# HELP vllm:num_preemptions_total Cumulative number of preemption.\n\
                    # TYPE vllm:num_preemptions_total counter\n\
                    vllm:num_preemptions_total{engine=\"0\",model_name=\"/m\"} 41.0\n\
                    \n\
                    llamacpp:requests_processing 3\n\
                    x{a=\"q\\\"uote\\\\d\\nline\"} +Inf 1712345678000\n\
                    broken{a=\"unterminated} 1\n\
                    novalue{a=\"1\"}\n";
        let s: Vec<Sample> = samples(text).collect();
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0].name, "vllm:num_preemptions_total");
        assert_eq!(s[0].label("model_name"), Some("/m"));
        assert_eq!(s[0].value, 41.0);
        assert!(s[1].labels.is_empty());
        assert_eq!(s[1].value, 3.0);
        assert_eq!(s[2].label("a"), Some("q\"uote\\d\nline"));
        assert_eq!(s[2].value, f64::INFINITY);
    }

    #[test]
    fn dcgm_spaces_between_labels_and_braces_in_values() {
        // The DCGM exporter README's sample: a space after each comma.
        let l = "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\", UUID=\"GPU-604ac76c\", \
                 modelName=\"NVIDIA H100 {SXM}\"} 409.692000";
        let s = sample(l).unwrap();
        assert_eq!(s.label("UUID"), Some("GPU-604ac76c"));
        assert_eq!(s.label("modelName"), Some("NVIDIA H100 {SXM}"));
        assert_eq!(s.value, 409.692);
        let nan = sample("x NaN").unwrap();
        assert!(nan.value.is_nan());
    }
}
