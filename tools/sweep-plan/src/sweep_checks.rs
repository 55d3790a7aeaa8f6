//! sweep's newcomer checks on its own options, before anything runs
//! (issue 33): a `--url` without a scheme, a results file that already
//! holds another sweep, and the plan line that says what is measured
//! (concurrency 1 only unless levels are given). Also `--param-new`,
//! merged with `--param` in command-line order so the grid is one list.

use clap::ArgMatches;
use sweepkit::exit;
use sweepkit::report::Exit;

/// What the checks read of sweep's options (`SweepArgs::given` fills
/// it), so this file needs nothing of sweep_options.rs.
pub struct Given<'a> {
    pub params: &'a [String],
    pub params_new: &'a [String],
    pub results: &'a str,
    pub resume: bool,
    pub adaptive: bool,
    pub append: bool,
    pub dry_run: bool,
    pub concurrency: &'a Option<String>,
    pub find_capacity: &'a Option<String>,
    pub load_arg: &'a [String],
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow::anyhow!("{msg}"))
}

/// The positions of every `--param` and `--param-new` on the command line,
/// in order, with their names: the grid is one list of both.
pub fn params_in_order(a: &Given<'_>, m: &ArgMatches) -> Vec<(usize, String)> {
    let at =
        |id: &str| -> Vec<usize> { m.indices_of(id).map(Iterator::collect).unwrap_or_default() };
    let mut all: Vec<(usize, String)> = at("params")
        .into_iter()
        .zip(a.params.iter().cloned())
        .chain(
            at("params_new")
                .into_iter()
                .zip(a.params_new.iter().cloned()),
        )
        .collect();
    all.sort_by_key(|(i, _)| *i);
    all
}

/// The swept keys `--param-new` declares absent from the launch line (a
/// coupled `A,B` declares both).
pub fn new_keys(a: &Given<'_>) -> Vec<String> {
    a.params_new
        .iter()
        .flat_map(|p| p.split(','))
        .map(|k| crate::grid::key_of(k.trim()).to_string())
        .collect()
}

/// `--url` must say its scheme: wait-ready and loadgen read
/// `127.0.0.1:8000` as something else and fail in ways that blame the
/// transport. With --hosts it is a template, checked alike.
pub fn check_url(url: &str) -> Result<(), Exit> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(());
    }
    let hint = match url.split_once("://") {
        Some((scheme, _)) => format!("the scheme '{scheme}' is not http or https"),
        None => format!("it has no scheme: write --url http://{url}"),
    };
    Err(usage(format!("--url '{url}': {hint}")))
}

/// A results file that already holds a sweep (its origin record) is
/// refused unless the run continues it (`--resume`, `--adaptive`) or says
/// it adds to it (`--append`): two runs' records of one config would merge
/// into medians of both, silently.
pub fn check_results_file(a: &Given<'_>) -> Result<(), Exit> {
    if a.resume || a.adaptive || a.append || a.dry_run {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(a.results) else {
        return Ok(()); // not there yet (or unreadable: its own error later)
    };
    let Some(o) = crate::origin::find(&text) else {
        return Ok(());
    };
    Err(usage(format!(
        "{} already holds a sweep started at {}; --resume to continue it, or a new --results FILE (--append adds this run's records to it)",
        a.results, o.provenance.started_at
    )))
}

/// What the load levels are, read once from sweep's --concurrency,
/// --find-capacity and loadgen's own flags in --load-arg.
#[derive(Debug, PartialEq)]
enum Levels {
    /// Closed loop at these concurrencies (`1,4,16`).
    Closed(String),
    /// An open loop (`--rate`), a trace replay (`--trace`) or a capacity
    /// search: how many requests are in flight is the server's to decide.
    Open,
    /// None given: loadgen's default, concurrency 1.
    Default,
}

fn levels(a: &Given<'_>) -> Levels {
    let args = a.load_arg;
    if a.find_capacity.is_some()
        || load_flag(args, Some('r'), "--rate").is_some()
        || load_flag(args, None, "--trace").is_some()
    {
        return Levels::Open;
    }
    let closed = a.concurrency.as_deref();
    match closed.or(load_flag(args, Some('c'), "--concurrency")) {
        Some(list) => Levels::Closed(list.to_string()),
        None => Levels::Default,
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

/// The top closed-loop level the user gave, when known.
fn top_level(a: &Given<'_>) -> Option<u32> {
    let Levels::Closed(list) = levels(a) else {
        return None;
    };
    list.split(',')
        .map(|v| v.trim().parse::<u32>().ok())
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

/// svc-swap's words from sweep: its pre-flight notes go into the records
/// only (sweep-plan verdict says each once per sweep, not per config),
/// and a note about a request cap no level reaches is left out. With a
/// capacity search, an open loop or a trace the top load is not known.
pub fn swap_words(a: &Given<'_>) -> Vec<String> {
    let mut w = vec!["--quiet-preflight".to_string()];
    let top = match levels(a) {
        Levels::Default => Some(1),
        Levels::Closed(_) => top_level(a),
        Levels::Open => None,
    };
    if let Some(top) = top {
        w.extend(["--max-load".to_string(), top.to_string()]);
    }
    w
}

/// The line sweep says as it starts: how many configs (or values, with
/// --adaptive), where the results go, and at which loads: a sweep without
/// levels measures concurrency 1 only, which is worth saying once.
pub fn plan_line(a: &Given<'_>, n_configs: usize) -> String {
    let what = match a.adaptive {
        true => format!("adaptive over {n_configs} value(s)"),
        false => format!("{n_configs} config(s)"),
    };
    let mut line = format!("{what}; results: {}", a.results);
    if levels(a) == Levels::Default {
        line.push_str("; ");
        line.push_str(levels_note());
    }
    line
}

/// The note on a sweep given no load levels.
pub fn levels_note() -> &'static str {
    "concurrency 1 only (loadgen's default); give --concurrency 1,4,16 to measure under load"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_a_scheme_says_what_to_write() {
        assert!(check_url("http://127.0.0.1:8000").is_ok());
        assert!(check_url("HTTPS://h/x").is_ok());
        let e = check_url("127.0.0.1:8000").unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        let msg = format!("{:#}", e.error.unwrap());
        assert!(msg.contains("write --url http://127.0.0.1:8000"), "{msg}");
        let e = check_url("tcp://h:1").unwrap_err();
        assert!(format!("{:#}", e.error.unwrap()).contains("'tcp'"));
    }

    #[test]
    fn the_load_args_levels_in_every_spelling() {
        let of = |load: &str, conc: Option<&str>| {
            let load: Vec<String> = load.split_whitespace().map(String::from).collect();
            let conc = conc.map(String::from);
            let g = Given {
                params: &[],
                params_new: &[],
                results: "r.jsonl",
                resume: false,
                adaptive: false,
                append: false,
                dry_run: false,
                concurrency: &conc,
                find_capacity: &None,
                load_arg: &load,
            };
            (levels(&g), top_level(&g), swap_words(&g))
        };
        let closed = |l: &str| Levels::Closed(l.into());
        assert_eq!(of("-c 1,64", None).0, closed("1,64"));
        assert_eq!(of("-c64", None).1, Some(64));
        assert_eq!(of("-c=2,8", None).1, Some(8));
        assert_eq!(of("--concurrency=4 -n 9", None).1, Some(4));
        assert_eq!(of("-n 9 --concurrency 3", None).1, Some(3));
        assert_eq!(of("-c 2", Some("1,16")).1, Some(16), "sweep's own wins");
        for open in ["-r 5", "-r5", "--rate=2", "--rate 1,2", "--trace t.jsonl"] {
            let (l, top, words) = of(open, None);
            assert_eq!(l, Levels::Open, "{open}");
            assert_eq!(top, None);
            assert!(!words.contains(&"--max-load".to_string()), "{open}");
        }
        let (l, _, words) = of("-n 5", None);
        assert_eq!(l, Levels::Default);
        assert_eq!(words, ["--quiet-preflight", "--max-load", "1"]);
    }
}
