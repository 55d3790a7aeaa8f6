//! What clap cannot say about sweep's options, before anything runs: each
//! `--values` after its `--param` (`--param-new` merged in command-line
//! order, so the grid is one list), whole numbers, combinations a target
//! or `--slurm` cannot honour, a `--url` without a scheme (issue 33), a
//! `--validate-on` trace loadgen would refuse, a results file that holds
//! another sweep, and a grid that does not expand. Each refusal is one
//! usage line (exit 2).

use clap::ArgMatches;
use sweepkit::exit::Exit;

use super::definition::{usage, Given, SweepArgs};
use crate::grid::{self, Grid};

/// What sweep's argv is read for, which decides the checks beyond those
/// every reading makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum For {
    /// `options`, sweep.sh's settings; `start`: a sweep starts (not a
    /// pool's job), so a results file that holds another sweep is
    /// refused. With --dry-run the trace is left to `dry-run`, which
    /// sweep.sh runs next.
    Options { start: bool },
    /// `dry-run` and `slurm`: a plan.
    Plan,
    /// `origin`: the target's look before the first stop, in a sweep whose
    /// options were checked as it started (the trace is not read again).
    Origin,
}

/// sweep's options, checked (clap's `matches` beside them): the grid they
/// make and the `--url` split at its scheme.
pub struct Checked {
    pub args: SweepArgs,
    pub matches: ArgMatches,
    pub grid: Grid,
    pub url: SchemeUrl,
}

/// A `--url` that says its scheme (http or https, as written) and the
/// rest; with --hosts a template.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeUrl {
    pub scheme: String,
    pub rest: String,
}

/// Check the options `given` for `why`.
pub fn check(given: Given, why: For) -> Result<Checked, Exit> {
    let Given {
        args: mut a,
        matches,
    } = given;
    let m = &matches;
    // --param and --param-new make one grid, in command-line order.
    let (at, names): (Vec<usize>, Vec<String>) = params_in_order(&a, m).into_iter().unzip();
    a.params = names;
    values(&a, m, &at)?;
    numbers(&a)?;
    combinations(&a)?;
    let url = scheme_url(&a.url)?;
    // With --dry-run, sweep.sh runs `dry-run` right after `options`: the
    // trace is read there, once.
    let planned_next = matches!(why, For::Options { .. }) && a.dry_run;
    if let (Some(f), false) = (&a.validate_on, planned_next || why == For::Origin) {
        trace(f, &a.load_arg)?;
    }
    if why == (For::Options { start: true }) {
        results_file(&a)?;
    }
    let grid = grid::expand(&a.params, &a.values).map_err(|e| usage(e.to_string()))?;
    Ok(Checked {
        args: a,
        matches,
        grid,
        url,
    })
}

/// The positions of every `--param` and `--param-new` on the command line,
/// in order, with their names: the grid is one list of both.
fn params_in_order(a: &SweepArgs, m: &ArgMatches) -> Vec<(usize, String)> {
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

/// Each --values after its --param (`p`: the params' places), with no
/// empty item; no --param without its --values.
fn values(a: &SweepArgs, m: &ArgMatches, p: &[usize]) -> Result<(), Exit> {
    let v: Vec<usize> = m
        .indices_of("values")
        .map(Iterator::collect)
        .unwrap_or_default();
    for (i, (vi, list)) in v.iter().zip(&a.values).enumerate() {
        if p.get(i).is_none_or(|pi| pi > vi) || p.get(i + 1).is_some_and(|next| next < vi) {
            return Err(usage(format!(
                "--values {list}: give --param NAME before each --values"
            )));
        }
        if list.split(',').any(|v| v.trim().is_empty()) {
            return Err(usage(format!(
                "--values '{list}': expected V1,V2,... with no empty value"
            )));
        }
    }
    if p.len() > v.len() {
        return Err(usage(format!(
            "--param {}: no --values after it",
            a.params[v.len()]
        )));
    }
    Ok(())
}

/// --retries and --drop-after are whole numbers (taken as text, so the
/// script gets them as given).
fn numbers(a: &SweepArgs) -> Result<(), Exit> {
    if !a.retries.bytes().all(|b| b.is_ascii_digit()) || a.retries.is_empty() {
        return Err(usage(format!(
            "--retries '{}': expected a whole number",
            a.retries
        )));
    }
    if !a.drop_after.bytes().all(|b| b.is_ascii_digit())
        || a.drop_after.parse::<u64>().unwrap_or(0) == 0
    {
        return Err(usage(format!(
            "--drop-after '{}': expected a whole number >= 1",
            a.drop_after
        )));
    }
    Ok(())
}

/// Options that clap takes together but the sweep cannot honour together.
fn combinations(a: &SweepArgs) -> Result<(), Exit> {
    if a.hosts.is_some() && (a.ssh.is_some() || a.exec_prefix.is_some()) {
        return Err(usage(
            "--hosts names every host: give --ssh and --exec-prefix per host in it, not as options"
                .into(),
        ));
    }
    let ssh_opts = !a.ssh_key.is_empty() || a.known_hosts.is_some() || a.accept_new_host_key;
    if ssh_opts && a.ssh.is_none() && a.hosts.is_none() {
        return Err(usage(
            "--ssh-key, --known-hosts and --accept-new-host-key need --ssh".into(),
        ));
    }
    // One summary per host would give each host the best of the few
    // configs it happened to run (and svc-swap reads only one record).
    if a.hosts.is_some() && a.keep_winner && a.summarize_arg.iter().any(|w| w == "--per-host") {
        return Err(usage(
            "--keep-winner with --summarize-arg --per-host: each host ran only some configs, so its own best is no winner; drop one of them (--pool-hosts applies one pick to every host)".into(),
        ));
    }
    if let Some(why) = slurm_refusal(a.slurm, a.keep_winner, a.spec.is_some()) {
        return Err(usage(why.into()));
    }
    if a.adaptive && (a.params.len() != 1 || a.params[0].contains(',')) {
        return Err(usage(
            "--adaptive walks one parameter: give one --param NAME (no grid, no A,B)".into(),
        ));
    }
    Ok(())
}

/// Why `--slurm` refuses an option it cannot honour (one line), if it
/// does. `--adaptive` and `--schedule` it runs: each next config is
/// submitted once the search (or the schedule) is decided.
fn slurm_refusal(slurm: bool, keep_winner: bool, spec: bool) -> Option<&'static str> {
    if slurm && !spec {
        // The job runs the server itself, as a step of its allocation.
        return Some("--slurm runs the server from a process spec (--spec FILE) as a step of each job; a --unit, --container or --compose target lives on a machine sweep reaches without Slurm. Write the server's command line as a spec (man svc-swap, PROCESS SPEC)");
    }
    if slurm && keep_winner {
        // Each job's server ends with its job: there is none to keep.
        return Some("--keep-winner with --slurm: no server outlives its job, so there is none to keep or restore; the table's recommendation names the winning flags to put in the spec");
    }
    None
}

/// `--url` must say its scheme: wait-ready and loadgen read
/// `127.0.0.1:8000` as something else and fail in ways that blame the
/// transport. With --hosts it is a template, checked alike.
fn scheme_url(url: &str) -> Result<SchemeUrl, Exit> {
    let hint = match url.split_once("://") {
        Some((scheme, rest)) if ["http", "https"].contains(&&*scheme.to_ascii_lowercase()) => {
            return Ok(SchemeUrl {
                scheme: scheme.into(),
                rest: rest.into(),
            })
        }
        Some((scheme, _)) => format!("the scheme '{scheme}' is not http or https"),
        None => format!("it has no scheme: write --url http://{url}"),
    };
    Err(usage(format!("--url '{url}': {hint}")))
}

/// Refuse a `--validate-on` file loadgen would refuse: one line naming the
/// file's line, before the sweep stops the server.
fn trace(file: &str, load: &[String]) -> Result<(), Exit> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| usage(format!("--validate-on {file}: cannot read it ({e})")))?;
    let block = crate::load_args::block_size(load).map_err(|e| usage(e.to_string()))?;
    sweepkit::trace::parse(&text, block).map_err(|e| {
        usage(format!(
            "--validate-on {file}: {e}; give a trace loadgen --trace can replay"
        ))
    })?;
    Ok(())
}

/// A results file that already holds a sweep (its origin record) is
/// refused unless the run continues it (`--resume`, `--adaptive`) or says
/// it adds to it (`--append`): two runs' records of one config would merge
/// into medians of both, silently. `--dry-run` refuses it as the run would.
fn results_file(a: &SweepArgs) -> Result<(), Exit> {
    if std::path::Path::new(&a.results).is_dir() {
        return Err(usage(format!(
            "--results {}: a folder; give the results file (RESULTS.jsonl) to write",
            a.results
        )));
    }
    if a.resume || a.adaptive || a.append {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(&a.results) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use sweepkit::exit;

    /// [`trace`]'s refusal as its line.
    fn trace_line(file: &str, load: &[String]) -> Result<(), String> {
        trace(file, load).map_err(|e| format!("{:#}", e.error.unwrap()))
    }

    #[test]
    fn a_url_without_a_scheme_says_what_to_write() {
        assert!(scheme_url("http://127.0.0.1:8000").is_ok());
        assert!(scheme_url("HTTPS://h/x").is_ok());
        let e = scheme_url("127.0.0.1:8000").unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        let msg = format!("{:#}", e.error.unwrap());
        assert!(msg.contains("write --url http://127.0.0.1:8000"), "{msg}");
        let e = scheme_url("tcp://h:1").unwrap_err();
        assert!(format!("{:#}", e.error.unwrap()).contains("'tcp'"));
    }

    #[test]
    fn slurm_refuses_only_keep_winner_in_one_line() {
        assert_eq!(slurm_refusal(false, true, true), None);
        assert_eq!(slurm_refusal(true, false, true), None);
        let kw = slurm_refusal(true, true, true).unwrap();
        assert!(kw.starts_with("--keep-winner with --slurm: "), "{kw}");
        assert!(!kw.contains('\n'));
        let unit = slurm_refusal(true, false, false).unwrap();
        assert!(
            unit.starts_with("--slurm runs the server from a process spec"),
            "{unit}"
        );
        assert_eq!(slurm_refusal(false, false, false), None);
    }

    #[test]
    fn a_bad_trace_is_refused_naming_its_line() {
        let dir = testkit::temp_dir("sweep-plan-validate-check");
        let f = dir.join("t.jsonl");
        std::fs::write(
            &f,
            "{\"timestamp\": 5, \"prompt\": \"a\"}\n{\"timestamp\": 1, \"prompt\": \"b\"}\n",
        )
        .unwrap();
        let p = f.to_str().unwrap();
        let e = trace_line(p, &[]).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "--validate-on {p}: line 2: timestamp 1 ms goes back"
            )),
            "{e}"
        );
        std::fs::write(
            &f,
            "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1]}\n",
        )
        .unwrap();
        assert!(trace_line(p, &[]).unwrap_err().contains("line 1:"));
        // The same file fits blocks of 1024 (--load-arg --block-size).
        assert_eq!(
            trace_line(p, &["--block-size".into(), "1024".into()]),
            Ok(())
        );
        assert!(trace_line("/nonexistent/t.jsonl", &[])
            .unwrap_err()
            .contains("cannot read it"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
