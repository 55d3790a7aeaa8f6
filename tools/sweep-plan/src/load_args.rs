//! loadgen's words as sweep hands them on (`--load-arg`, after sweep's own
//! `-c`): what they say about the load levels (a closed loop at which
//! concurrencies, an open loop or a trace, or loadgen's default), the
//! block size a trace replay uses, and the words of `--validate-on`'s
//! replay, which is the trace's own single level.

/// What the load levels are, read once from sweep's --concurrency,
/// --find-capacity and loadgen's own flags in --load-arg.
#[derive(Debug, PartialEq)]
pub enum Levels {
    /// Closed loop at these concurrencies (`1,4,16`).
    Closed(String),
    /// An open loop (`--rate`), a trace replay (`--trace`) or a capacity
    /// search: how many requests are in flight is the server's to decide.
    Open,
    /// None given: loadgen's default, concurrency 1.
    Default,
}

/// loadgen's flags that take a value and that sweep reads: the long name,
/// the short one, and whether it shapes the sweep's levels (the replay of
/// `--validate-on` drops those: it is the trace's own single level).
const VALUED: &[(&str, Option<char>, bool)] = &[
    ("--concurrency", Some('c'), true),
    ("--rate", Some('r'), true),
    ("--burstiness", None, true),
    ("--requests", Some('n'), true),
    ("--max-requests", None, true),
    ("--warmup", None, true),
    ("--until-stable", None, true),
    ("--min-requests", None, true),
    ("--duration", Some('d'), true),
    ("--repeat", None, true),
    ("--trace", None, true),
    ("--speed", None, true),
    ("--trace-start", None, true),
    ("--trace-end", None, true),
    ("--cancel-rate", None, true),
    ("--cancel-after", None, true),
    ("--slo", None, true),
    ("--find-capacity", None, true),
    ("--max-concurrency", None, true),
    ("--level-budget", None, true),
    ("--prompts-file", None, true),
    ("--prompts-format", None, true),
    ("--input-tokens", None, true),
    ("--block-size", None, false),
];

/// One of [`VALUED`] among the words: its long name, its value (`None`:
/// the words end first), whether it shapes the levels, and the words it
/// spans.
struct Flag<'a> {
    long: &'static str,
    value: Option<&'a str>,
    level: bool,
    words: std::ops::Range<usize>,
}

/// The one scan of loadgen's words: each [`VALUED`] flag in every
/// spelling clap takes (`-c 4`, `-c4`, `-c=4`, `--concurrency 4`,
/// `--concurrency=4`), in order.
fn scan(words: &[String]) -> Vec<Flag<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let (row, glued) = if let Some(long) = w.strip_prefix("--") {
            let (name, value) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            let row = VALUED.iter().find(|(l, _, _)| l[2..] == *name);
            (row, value)
        } else if let Some(rest) = w.strip_prefix('-') {
            let c = rest.chars().next();
            let row = VALUED.iter().find(|(_, s, _)| s.is_some() && *s == c);
            let after = &rest[c.map_or(0, char::len_utf8)..];
            let value = (!after.is_empty()).then(|| after.strip_prefix('=').unwrap_or(after));
            (row, value)
        } else {
            (None, None)
        };
        let Some(&(long, _, level)) = row else {
            i += 1;
            continue;
        };
        let (value, n) = match glued {
            Some(v) => (Some(v), 1),
            None => (words.get(i + 1).map(String::as_str), 2),
        };
        let end = (i + n).min(words.len());
        out.push(Flag {
            long,
            value,
            level,
            words: i..end,
        });
        i = end;
    }
    out
}

/// The last value of loadgen's flag `long` among `flags`, as clap takes
/// the last one.
fn last<'a>(flags: &[Flag<'a>], long: &str) -> Option<&'a str> {
    flags
        .iter()
        .filter(|f| f.long == long)
        .filter_map(|f| f.value)
        .next_back()
}

/// The levels from sweep's `--concurrency` (`closed`), whether it
/// searches capacity (`--find-capacity`), and loadgen's own `words`.
pub fn levels(closed: Option<&str>, capacity: bool, words: &[String]) -> Levels {
    let flags = scan(words);
    if capacity || last(&flags, "--rate").is_some() || last(&flags, "--trace").is_some() {
        return Levels::Open;
    }
    match closed.or(last(&flags, "--concurrency")) {
        Some(list) => Levels::Closed(list.to_string()),
        None => Levels::Default,
    }
}

impl Levels {
    /// The top closed-loop level the user gave, when known.
    pub fn top(&self) -> Option<u32> {
        let Levels::Closed(list) = self else {
            return None;
        };
        list.split(',')
            .map(|v| v.trim().parse::<u32>().ok())
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max()
    }
}

/// loadgen's words for the replay of `file`: `load` (the sweep's loadgen
/// words) without the flags that shape the levels, then `--trace FILE
/// [--slo TERMS]`.
pub fn replay_words(load: &[String], file: &str, slo: Option<&str>) -> Vec<String> {
    let drop: Vec<std::ops::Range<usize>> = scan(load)
        .into_iter()
        .filter(|f| f.level)
        .map(|f| f.words)
        .collect();
    let mut out: Vec<String> = (0..load.len())
        .filter(|i| !drop.iter().any(|r| r.contains(i)))
        .map(|i| load[i].clone())
        .collect();
    out.extend(["--trace".to_string(), file.to_string()]);
    if let Some(s) = slo {
        out.extend(["--slo".to_string(), s.to_string()]);
    }
    out
}

/// A `--block-size` loadgen would refuse (the word as given).
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("--load-arg --block-size: expected a whole number ({0})")]
pub struct BadBlockSize(String);

/// The block size the replay will use: `--block-size N` among loadgen's
/// words, else loadgen's default.
pub fn block_size(load: &[String]) -> Result<u64, BadBlockSize> {
    let mut size = sweepkit::trace::DEFAULT_BLOCK_SIZE;
    for f in scan(load).iter().filter(|f| f.long == "--block-size") {
        let w = &load[f.words.start];
        size = f
            .value
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| BadBlockSize(w.clone()))?;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_drops_the_sweeps_level_words_and_keeps_the_rest() {
        let load: Vec<String> = [
            "--url",
            "http://h:1",
            "-c",
            "1,4",
            "--model",
            "m",
            "--trace=sweep.jsonl",
            "--speed",
            "2",
            "-n",
            "6",
            "--block-size",
            "32",
            "--api-key",
            "k",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            replay_words(&load, "v.jsonl", Some("e2e_ms<=9000")),
            [
                "--url",
                "http://h:1",
                "--model",
                "m",
                "--block-size",
                "32",
                "--api-key",
                "k",
                "--trace",
                "v.jsonl",
                "--slo",
                "e2e_ms<=9000"
            ]
        );
        assert_eq!(block_size(&load), Ok(32));
        assert_eq!(block_size(&["--block-size=16".to_string()]), Ok(16));
        assert!(block_size(&["--block-size".to_string(), "x".into()]).is_err());
    }

    /// Regression: the replay's words kept a level flag glued to its value
    /// (`--load-arg -c4`), which the levels read as closed-loop 4: the
    /// replay of the trace ran at concurrency 4, not at the trace's times.
    #[test]
    fn glued_short_level_flags_leave_the_replay_too() {
        let load: Vec<String> = ["-c4", "-n6", "-r=5", "-d30s", "--model", "m", "-q"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            replay_words(&load, "v.jsonl", None),
            ["--model", "m", "-q", "--trace", "v.jsonl"]
        );
        // The levels read the same words the same way.
        assert_eq!(levels(None, false, &load), Levels::Open);
        assert_eq!(levels(None, false, &load[..1]).top(), Some(4));
    }
}
