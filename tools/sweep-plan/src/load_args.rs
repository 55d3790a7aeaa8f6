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

/// The levels from sweep's `--concurrency` (`closed`), whether it
/// searches capacity (`--find-capacity`), and loadgen's own `words`.
pub fn levels(closed: Option<&str>, capacity: bool, words: &[String]) -> Levels {
    if capacity
        || load_flag(words, Some('r'), "--rate").is_some()
        || load_flag(words, None, "--trace").is_some()
    {
        return Levels::Open;
    }
    match closed.or(load_flag(words, Some('c'), "--concurrency")) {
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

/// The value of loadgen's flag in the load args, in each spelling clap
/// takes (`-c 4`, `-c4`, `-c=4`, `--concurrency 4`, `--concurrency=4`);
/// the last one wins, as in clap.
fn load_flag<'a>(args: &'a [String], short: Option<char>, long: &str) -> Option<&'a str> {
    let short = short.map(|c| format!("-{c}"));
    let mut found = None;
    for (i, w) in args.iter().enumerate() {
        let glued = |flag: &str| w.strip_prefix(flag).filter(|v| !v.is_empty());
        let v = if w == long || short.as_deref() == Some(w.as_str()) {
            args.get(i + 1).map(String::as_str)
        } else if let Some(v) = glued(long).and_then(|v| v.strip_prefix('=')) {
            Some(v)
        } else if let Some(v) = short
            .as_deref()
            .and_then(glued)
            .filter(|_| !w.starts_with("--"))
        {
            Some(v.strip_prefix('=').unwrap_or(v))
        } else {
            continue;
        };
        found = v.or(found);
    }
    found
}

/// loadgen's flags that shape the sweep's levels (taking a value): the
/// replay is the trace's own single level, so they are dropped from it.
const LEVEL_FLAGS: &[&str] = &[
    "-c",
    "--concurrency",
    "-r",
    "--rate",
    "--burstiness",
    "--requests",
    "--max-requests",
    "-n",
    "--warmup",
    "--until-stable",
    "--min-requests",
    "-d",
    "--duration",
    "--repeat",
    "--trace",
    "--speed",
    "--trace-start",
    "--trace-end",
    "--cancel-rate",
    "--cancel-after",
    "--slo",
    "--find-capacity",
    "--max-concurrency",
    "--level-budget",
    "--prompts-file",
    "--prompts-format",
    "--input-tokens",
];

/// loadgen's words for the replay of `file`: `load` (the sweep's loadgen
/// words) without [`LEVEL_FLAGS`], then `--trace FILE [--slo TERMS]`.
pub fn replay_words(load: &[String], file: &str, slo: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = load.iter();
    while let Some(w) = it.next() {
        let name = w.split_once('=').map_or(w.as_str(), |(n, _)| n);
        if LEVEL_FLAGS.contains(&name) {
            if !w.contains('=') {
                it.next(); // its value
            }
            continue;
        }
        out.push(w.clone());
    }
    out.extend(["--trace".to_string(), file.to_string()]);
    if let Some(s) = slo {
        out.extend(["--slo".to_string(), s.to_string()]);
    }
    out
}

/// The block size the replay will use: `--block-size N` among loadgen's
/// words, else loadgen's default.
pub fn block_size(load: &[String]) -> Result<u64, String> {
    let mut it = load.iter();
    let mut size = sweepkit::trace::DEFAULT_BLOCK_SIZE;
    while let Some(w) = it.next() {
        let v = match w.strip_prefix("--block-size") {
            Some("") => it.next().map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => continue,
        };
        size = v
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("--load-arg --block-size: expected a whole number ({w})"))?;
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
}
