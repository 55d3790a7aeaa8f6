//! sweep's argv parsed with [`SweepArgs`] (sweep_options.rs), checked,
//! and handed to sweep.sh as shell assignments ([`Settings`]): the grid,
//! each tool's words, the pass-through options ([`PASS_THROUGH`]), the
//! exit codes by name; and `sweep --dry-run`'s plan.

use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches};
use sweepkit::exit;
use sweepkit::report::Exit;

use crate::stage_words::{self, Base, Stages, Target};
use crate::sweep_options::{SweepArgs, To, EXITS, PASS_THROUGH};

use crate::out::quote;

/// sweep's settings as the lines of a bash script: `name='value'` and
/// `name=('a' 'b')`.
#[derive(Default)]
pub struct Settings(Vec<String>);

impl Settings {
    fn scalar(&mut self, name: &str, v: &str) {
        self.0.push(format!("{name}={}", quote(v)));
    }
    fn flag(&mut self, name: &str, on: bool) {
        self.0.push(format!("{name}={}", u8::from(on)));
    }
    fn array(&mut self, name: &str, words: &[String]) {
        let q: Vec<String> = words.iter().map(|w| quote(w)).collect();
        self.0.push(format!("{name}=({})", q.join(" ")));
    }

    /// The grid: `grid`, the words every sweep-plan question about it
    /// takes; `labels`, each config's "a=1 b=2"; `n_configs`. A grid that
    /// does not expand is sweep's usage error.
    fn grid(&mut self, a: &SweepArgs) -> Result<(), Exit> {
        let g = crate::grid::expand(&a.params, &a.values).map_err(usage)?;
        let words: Vec<String> = a
            .params
            .iter()
            .zip(&a.values)
            .flat_map(|(p, v)| [format!("--param={p}"), format!("--values={v}")])
            .collect();
        self.array("grid", &words);
        let labels: Vec<String> = g.points.iter().map(|p| p.label()).collect();
        self.array("labels", &labels);
        self.scalar("n_configs", &labels.len().to_string());
        let line = crate::sweep_checks::plan_line(&a.given(), labels.len());
        self.scalar("plan_line", &line);
        Ok(())
    }

    /// Every variable sweep.sh reads, from parsed options.
    fn emit(a: &SweepArgs, m: &ArgMatches) -> Settings {
        let mut s = Settings::default();
        let opt = |o: &Option<String>| o.clone().unwrap_or_default();
        s.array("params", &a.params);
        s.array("values", &a.values);
        for (n, v) in [
            ("results", &a.results),
            ("retries", &a.retries),
            ("drop_after", &a.drop_after),
            ("url", &a.url),
            ("ready_timeout", &a.ready_timeout),
        ] {
            s.scalar(n, v);
        }
        for (n, v) in [
            ("unit", &a.unit),
            ("spec", &a.spec),
            ("ssh", &a.ssh),
            ("exec_prefix", &a.exec_prefix),
            ("hosts", &a.hosts),
            ("server", &a.server),
            ("concurrency", &a.concurrency),
            ("schedule", &a.schedule),
            ("report", &a.report),
            ("compare_to", &a.compare_to),
        ] {
            s.scalar(n, &opt(v));
        }
        for (n, v) in [
            ("resume", a.resume),
            ("keep_winner", a.keep_winner),
            ("no_restore", a.no_restore),
            ("dry_run", a.dry_run),
            ("adaptive", a.adaptive),
            ("expect_config", a.expect_config),
            ("quiet", a.quiet),
            ("slurm", a.slurm),
        ] {
            s.flag(n, v);
        }
        s.words(a, m);
        s
    }

    /// The arrays: the adaptive knobs, the SSH options that go with each
    /// --ssh, each tool's extra words (pass-through options first), and
    /// the stages' shared words for the target (`target`, `ready`, `load`).
    fn words(&mut self, a: &SweepArgs, m: &ArgMatches) {
        let s = self;
        let knobs = adaptive_knobs(a);
        s.array("adaptive_args", &knobs);
        // `sweep-plan step`'s words for the loop (the script adds where
        // the scores are, for --adaptive, and where to write).
        let mut step = knobs;
        step.extend(["--retries".to_string(), a.retries.clone()]);
        for (on, w) in [(a.resume, "--resume"), (a.expect_config, "--expect-config")] {
            if on {
                step.push(w.into());
            }
        }
        if let Some(sv) = &a.schedule {
            step.extend(["--schedule".to_string(), sv.clone()]);
        }
        s.array("step_args", &step);
        s.say_to(a, "");
        let cap: Vec<String> = a
            .schedule_max_depth
            .iter()
            .flat_map(|k| ["--max-depth".to_string(), k.to_string()])
            .collect();
        s.array("schedule_args", &cap);
        let w = ToolWords::of(a, m);
        s.array("ssh_opts", &w.ssh_opts);
        s.array("swap_args", &w.swap);
        s.array("ready_args", &w.ready);
        s.array("load_args", &w.load);
        s.array("sum_args", &w.sum);
        // svc-swap's words for each config's swap only (not the dry run's
        // or the restore's): pre-flight notes are said once, by verdict.
        s.array("swap_own", &crate::sweep_checks::swap_words(&a.given()));
        let t = Target {
            ssh: a.ssh.clone(),
            exec_prefix: a.exec_prefix.clone(),
            url: a.url.clone(),
        };
        let st = w.stages(a, &t);
        s.stages(&st);
        s.origin_args(a, &t.url);
        s.array("end_args", &end_args(a, &st, &w.sum));
    }

    /// `origin_args`: the words that have `sweep-plan origin` check the
    /// dry run against the target at `url` (see dry_run_checks.rs).
    fn origin_args(&mut self, a: &SweepArgs, url: &str) {
        let mut w = vec!["--url".to_string(), url.to_string()];
        for k in crate::sweep_checks::new_keys(&a.given()) {
            w.extend(["--new".to_string(), k]);
        }
        // Only swept keys are checked: a `--swap-arg --set K` adds K on purpose.
        for p in &a.params {
            for k in p.split(',') {
                w.extend([
                    "--swept".to_string(),
                    crate::grid::key_of(k.trim()).to_string(),
                ]);
            }
        }
        // wait-ready probes the URL as given only without a preset.
        if a.server.is_none() && a.ready_arg.is_empty() {
            w.extend(["--probe".to_string(), url.to_string()]);
        }
        self.array("origin_args", &w);
    }

    /// `say_to`: the words that have sweep-plan say its notes on stderr
    /// as sweep does (none with --quiet).
    fn say_to(&mut self, a: &SweepArgs, prefix: &str) {
        let words = match a.quiet {
            true => Vec::new(),
            false => vec!["--say".to_string(), format!("sweep: {prefix}")],
        };
        self.array("say_to", &words);
    }

    fn stages(&mut self, st: &Stages) {
        self.array("target", &st.target);
        self.array("ready", &st.ready);
        self.array("load", &st.load);
    }
}

/// The adaptive search's knobs as `sweep-plan step` takes them.
pub fn adaptive_knobs(a: &SweepArgs) -> Vec<String> {
    let mut knobs = Vec::new();
    for (f, v) in [
        ("--patience", &a.patience),
        ("--noise-margin", &a.noise_margin),
        ("--repeat-budget", &a.repeat_budget),
    ] {
        if let Some(v) = v {
            knobs.extend([f.to_string(), v.clone()]);
        }
    }
    knobs
}

/// `end_args`: `sweep-plan end`'s words from the options (--validate-on's
/// replay, summarize's arguments for the summary it runs); sweep.sh adds
/// --keep-winner, which a pool may refuse.
fn end_args(a: &SweepArgs, st: &Stages, sum: &[String]) -> Vec<String> {
    let mut w: Vec<String> = sum.iter().map(|x| format!("--sum-arg={x}")).collect();
    if let Some(f) = &a.validate_on {
        w.push(format!("--validate-on={f}"));
        w.extend(a.slo.iter().map(|s| format!("--slo={s}")));
        let load = crate::validate::load_words(&st.load, f, a.slo.as_deref());
        w.extend(load.iter().map(|x| format!("--validate-load={x}")));
    }
    w
}

/// The words sweep hands each tool beside a config's own.
struct ToolWords {
    ssh_opts: Vec<String>,
    swap: Vec<String>,
    ready: Vec<String>,
    load: Vec<String>,
    sum: Vec<String>,
}

impl ToolWords {
    fn of(a: &SweepArgs, m: &ArgMatches) -> ToolWords {
        let mut ssh_opts = Vec::new();
        for k in &a.ssh_key {
            ssh_opts.extend(["--ssh-key".to_string(), k.clone()]);
        }
        if let Some(k) = &a.known_hosts {
            ssh_opts.extend(["--known-hosts".to_string(), k.clone()]);
        }
        if a.accept_new_host_key {
            ssh_opts.push("--accept-new-host-key".into());
        }
        let of = |to: To, own: &[String]| {
            let mut words = passed_to(m, to);
            // One SLO, two tools' spellings of it.
            if let Some(slo) = &a.find_capacity {
                match to {
                    To::Load => words.extend(["--find-capacity".into(), slo.clone()]),
                    To::Summarize => words.extend(["--slo".into(), slo.clone()]),
                    _ => {}
                }
            }
            words.extend(own.iter().cloned());
            words
        };
        ToolWords {
            ssh_opts,
            swap: of(To::Swap, &a.swap_arg),
            ready: of(To::Ready, &a.ready_arg),
            load: of(To::Load, &a.load_arg),
            sum: of(To::Summarize, &a.summarize_arg),
        }
    }

    fn stages(&self, a: &SweepArgs, t: &Target) -> Stages {
        let b = Base {
            unit: a.unit.as_deref(),
            spec: a.spec.as_deref(),
            ssh_opts: &self.ssh_opts,
            swap_args: &self.swap,
            ready_timeout: &a.ready_timeout,
            server: a.server.as_deref(),
            ready_args: &self.ready,
            concurrency: a.concurrency.as_deref(),
            load_args: &self.load,
        };
        stage_words::stages(&b, t)
    }
}

/// The [`PASS_THROUGH`] options given on the command line that go to `to`,
/// as words (`--flag`, or `--flag VALUE` per occurrence).
fn passed_to(m: &ArgMatches, to: To) -> Vec<String> {
    let cmd = SweepArgs::command();
    let mut words = Vec::new();
    for (long, _) in PASS_THROUGH.iter().filter(|(_, t)| t.contains(&to)) {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .unwrap_or_else(|| panic!("PASS_THROUGH: no option --{long}"));
        let id = arg.get_id().as_str();
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            if m.get_flag(id) {
                words.push(format!("--{long}"));
            }
        } else if let Some(vs) = m.get_raw(id) {
            for v in vs {
                words.extend([format!("--{long}"), v.to_string_lossy().into_owned()]);
            }
        }
    }
    words
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow::anyhow!("{msg}"))
}

/// What clap can't say: each --values after its --param, values with no
/// empty item, whole numbers.
fn check(a: &SweepArgs, m: &ArgMatches, p: &[usize]) -> Result<(), Exit> {
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
    if let Some(why) = crate::slurm_options::refusal(a.slurm, a.keep_winner, a.spec.is_some()) {
        return Err(usage(why.into()));
    }
    if a.adaptive && (a.params.len() != 1 || a.params[0].contains(',')) {
        return Err(usage(
            "--adaptive walks one parameter: give one --param NAME (no grid, no A,B)".into(),
        ));
    }
    Ok(())
}

/// clap's error as one line: its first paragraph, without `error: `.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let para: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).collect();
    let line = para.join(" ");
    let line = line.trim_start_matches("error: ");
    format!(
        "{} (see --help)",
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// Which of sweep's settings `options` hands back.
#[derive(Debug, Clone, Copy)]
pub enum Want<'a> {
    /// Every setting, and the exit codes.
    All,
    /// [`Want::All`] for a sweep that starts (not a pool's job): also
    /// refuse a results file that holds another sweep.
    Start,
    /// The pool's hosts (`h_id`, `h_name`: ids and names in --hosts order).
    Pool,
    /// One pool host's own: the stages' `target`, `ready` and `load`, its
    /// `origin_file` and the `say_prefix` that names it.
    Host(&'a str),
}

/// sweep's argv parsed (a usage error for --help, which has nothing to
/// plan), with the stages' words for a target and summarize's words:
/// `sweep --slurm` builds its jobs' words and its scores from these.
pub fn parsed_stages(
    argv: &[String],
    t: &Target,
) -> Result<(SweepArgs, Stages, Vec<String>), Exit> {
    let (a, m) = matched(argv)?.map_err(|_| usage("--help: nothing to plan".into()))?;
    let w = ToolWords::of(&a, &m);
    let st = w.stages(&a, t);
    Ok((a, st, w.sum))
}

/// The one example `sweep -h` shows (the README's, on llm-sim).
const SWEEP_EXAMPLE: &str = "sweep --spec sim.spec --url http://127.0.0.1:18080 --server llm-sim \\
    --param speculative-num-steps --values 1,2,4 --concurrency 1,4 \\
    --results sim.jsonl";

/// sweep's argv parsed, or the text of --help/--version (`-h`: a summary).
fn matched(argv: &[String]) -> Result<Result<(SweepArgs, ArgMatches), String>, Exit> {
    let words: Vec<std::ffi::OsString> = std::iter::once("sweep".to_string())
        .chain(argv.iter().cloned())
        .map(Into::into)
        .collect();
    let m = match SweepArgs::command().try_get_matches_from(&words) {
        Ok(m) => m,
        Err(e) if sweepkit::short_help::is_short_help(&e, &words) => {
            let text = sweepkit::short_help::summary(&SweepArgs::command(), SWEEP_EXAMPLE);
            return Ok(Err(text));
        }
        Err(e) if !e.use_stderr() => return Ok(Err(e.render().to_string())),
        Err(e) => return Err(usage(one_line(&e))),
    };
    let mut a = SweepArgs::from_arg_matches(&m).map_err(|e| usage(one_line(&e)))?;
    // --param and --param-new make one grid, in command-line order.
    let (at, names): (Vec<usize>, Vec<String>) =
        crate::sweep_checks::params_in_order(&a.given(), &m)
            .into_iter()
            .unzip();
    a.params = names;
    check(&a, &m, &at)?;
    crate::sweep_checks::check_url(&a.url)?;
    if let Some(f) = &a.validate_on {
        crate::validate::check(f, &a.load_arg).map_err(usage)?;
    }
    Ok(Ok((a, m)))
}

fn pool_of(a: &SweepArgs) -> Result<Vec<crate::hosts::Host>, Exit> {
    match &a.hosts {
        Some(h) => crate::hosts::pool(h, &a.url),
        None => Err(usage("a pool's settings need --hosts".into())),
    }
}

/// Parse sweep's `argv` (without the program name): the settings script,
/// or a one-line usage error (exit 2). --help and --version come back as
/// `help='...'`, for the script to print.
pub fn parse(argv: &[String]) -> Result<String, Exit> {
    parse_for(argv, Want::All)
}

/// [`parse`], handing back the settings `want` names.
pub fn parse_for(argv: &[String], want: Want<'_>) -> Result<String, Exit> {
    let (a, m) = match matched(argv)? {
        Ok(am) => am,
        Err(help) => return Ok(format!("help={}\n", quote(&help))),
    };
    let mut s = Settings::default();
    match want {
        Want::All | Want::Start => {
            if matches!(want, Want::Start) {
                crate::sweep_checks::check_results_file(&a.given())?;
            }
            s = Settings::emit(&a, &m);
            s.grid(&a)?;
            s.array("argv", argv);
            s.0.push("help=''".into());
            let exits: Vec<String> = EXITS.iter().map(|(n, c)| format!("EXIT_{n}={c}")).collect();
            s.0.push(format!("readonly {}", exits.join(" ")));
        }
        Want::Pool => {
            let pool = pool_of(&a)?;
            s.array(
                "h_id",
                &pool.iter().map(|h| h.id.clone()).collect::<Vec<_>>(),
            );
            s.array(
                "h_name",
                &pool.iter().map(|h| h.name.clone()).collect::<Vec<_>>(),
            );
        }
        Want::Host(id) => {
            let pool = pool_of(&a)?;
            let h = pool
                .iter()
                .find(|h| h.id == id)
                .ok_or_else(|| usage(format!("--host '{id}' is not in --hosts")))?;
            let t = Target::of_host(h);
            s.stages(&ToolWords::of(&a, &m).stages(&a, &t));
            s.origin_args(&a, &t.url);
            s.scalar(
                "origin_file",
                &format!("{}.fleet/origin-{id}.jsonl", a.results),
            );
            s.scalar("say_prefix", &format!("[{}] ", h.name));
            s.say_to(&a, &format!("[{}] ", h.name));
        }
    }
    Ok(s.0.join("\n") + "\n")
}

/// `--dry-run`'s plan for sweep's `argv` (stage_words::dry_run), the tools
/// at the paths given.
pub fn dry_run(argv: &[String], tools: &stage_words::Tools<'_>) -> Result<String, Exit> {
    let (a, m) = matched(argv)?.map_err(|_| usage("--help: nothing to plan".into()))?;
    let g = crate::grid::expand(&a.params, &a.values).map_err(usage)?;
    let pool = match a.hosts {
        Some(_) => pool_of(&a)?,
        None => Vec::new(),
    };
    let t = match pool.first() {
        Some(h) => Target::of_host(h),
        None => Target {
            ssh: a.ssh.clone(),
            exec_prefix: a.exec_prefix.clone(),
            url: a.url.clone(),
        },
    };
    let st = ToolWords::of(&a, &m).stages(&a, &t);
    Ok(stage_words::dry_run(
        &g,
        &st,
        tools,
        &pool,
        a.expect_config,
        &a.results,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_carry_the_grid_and_the_argv() {
        let argv: Vec<String> =
            "--param a,b --values 1:2,3:4 --param c --values it's --unit u --url http://x --results r"
                .split(' ')
                .map(String::from)
                .collect();
        let out = parse(&argv).unwrap();
        for line in [
            r"grid=('--param=a,b' '--values=1:2,3:4' '--param=c' '--values=it'\''s')",
            r"labels=('a=1 b=2 c=it'\''s' 'a=3 b=4 c=it'\''s')",
            "n_configs='2'",
            r"argv=('--param' 'a,b' '--values' '1:2,3:4' '--param' 'c' '--values' 'it'\''s'",
        ] {
            assert!(out.contains(line), "{line}: {out}");
        }
        let mut bad = argv.clone();
        bad[3] = "1,2".into(); // a,b takes A:B values
        assert_eq!(parse(&bad).unwrap_err().code, exit::USAGE);
    }

    #[test]
    fn every_pass_through_option_exists() {
        let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // The target options are each other's alternatives: two runs.
        let targets = ["container", "compose", "service"];
        for target in [&["--unit", "u"][..], &["--compose", "V", "--service", "V"]] {
            let mut argv = v(&["--param", "a", "--values", "1"]);
            argv.extend(v(target));
            argv.extend(v(&["--url", "http://x", "--results", "r"]));
            let value = |long: &str| if long == "engine" { "podman" } else { "V" };
            let given: Vec<&str> = PASS_THROUGH
                .iter()
                .map(|(l, _)| *l)
                .filter(|l| !targets.contains(l) || (target[0] != "--unit" && *l != "container"))
                .collect();
            for long in &given {
                if !targets.contains(long) {
                    argv.extend([format!("--{long}"), value(long).into()]);
                }
            }
            let out = parse(&argv).unwrap();
            for long in &given {
                let w = format!("'--{long}' '{}'", value(long));
                assert!(out.contains(&w), "{long}: {out}");
            }
        }
        let argv = v(&["--param", "a", "--values", "1", "--container", "c"]);
        let mut argv2 = argv.clone();
        argv2.extend(v(&["--url", "http://x", "--results", "r"]));
        let out = parse(&argv2).unwrap();
        assert!(out.contains("swap_args=('--container' 'c')"), "{out}");
        let own = "swap_own=('--quiet-preflight' '--max-load' '1')";
        assert!(out.contains(own), "{out}");
        assert!(out.contains("ready_args=('--container' 'c')"), "{out}");
        argv2.extend(v(&["--unit", "u"]));
        assert_eq!(parse(&argv2).unwrap_err().code, exit::USAGE);
    }
}
