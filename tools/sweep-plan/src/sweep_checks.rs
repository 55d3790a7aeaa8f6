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

/// Whether the user gave load levels in some form (sweep's --concurrency,
/// loadgen's own -c/--concurrency/-r/--rate, or a capacity search).
fn levels_given(a: &Given<'_>) -> bool {
    a.concurrency.is_some()
        || a.find_capacity.is_some()
        || a.load_arg.iter().any(|w| {
            ["-c", "--concurrency", "-r", "--rate"].contains(&w.as_str())
                || w.starts_with("--concurrency=")
                || w.starts_with("--rate=")
                || (w.starts_with("-c") && w.len() > 2)
        })
}

/// The top load level the user gave (sweep's --concurrency, else
/// loadgen's own -c/--concurrency), when known.
fn top_level(a: &Given<'_>) -> Option<u32> {
    let given = a.load_arg.iter().enumerate().find_map(|(i, w)| {
        let v = match w.as_str() {
            "-c" | "--concurrency" => a.load_arg.get(i + 1).map(String::as_str),
            _ => w
                .strip_prefix("--concurrency=")
                .or(w.strip_prefix("-c").filter(|v| !v.is_empty())),
        };
        v.map(str::to_string)
    });
    let list = a
        .concurrency
        .clone()
        .or(given)
        .unwrap_or_else(|| "1".into());
    list.split(',')
        .map(|v| v.trim().parse::<u32>().ok())
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

/// svc-swap's words from sweep: its pre-flight notes go into the records
/// only (sweep-plan verdict says each once per sweep, not per config),
/// and a note about a request cap no level reaches is left out. With a
/// capacity search or an open loop the top load is not known.
pub fn swap_words(a: &Given<'_>) -> Vec<String> {
    let mut w = vec!["--quiet-preflight".to_string()];
    let open = a
        .load_arg
        .iter()
        .any(|x| x == "-r" || x.starts_with("--rate"));
    if let Some(top) = top_level(a).filter(|_| a.find_capacity.is_none() && !open) {
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
    if !levels_given(a) {
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
}
