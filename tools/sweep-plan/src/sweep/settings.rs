//! sweep's checked options turned into what each tool and each question
//! of sweep-plan takes ([`Settings`]): the grid, the words sweep hands each
//! tool beside a config's own (the pass-through options first), the
//! stages' words for a target (stage_words.rs), the loop's, the origin's
//! and the end's words, and the line sweep says as it starts.

use clap::{ArgAction, ArgMatches, CommandFactory};
use sweepkit::exit::Exit;

use super::checks::{Checked, SchemeUrl};
use super::definition::{usage, SweepArgs, To, PASS_THROUGH};
use super::stage_words::{self, Base, Stages, Target};
use crate::grid::{key_of, Grid};
use crate::hosts::{self, Host, Templates};
use crate::load_args::{self, Levels};
use crate::preflight::look::Ask;
use crate::slots::layout::Split;

/// A sweep's settings: its options (checked, `--param` and `--param-new`
/// one list in command-line order), its grid, its `--url`, and the words
/// it hands each tool and each question of sweep-plan, worked out once.
pub struct Settings {
    pub args: SweepArgs,
    pub grid: Grid,
    pub url: SchemeUrl,
    pub words: ToolWords,
    /// The grid's words for every sweep-plan question about it.
    pub grid_words: Vec<String>,
    /// The adaptive search's knobs as `sweep-plan step` takes them.
    pub search_knobs: Vec<String>,
    /// `sweep-plan step`'s words for the loop.
    pub step_args: Vec<String>,
    /// summarize --schedule's own words (`--max-depth K`).
    pub schedule_args: Vec<String>,
    /// svc-swap's words for each config's swap only ([`swap_words`]).
    pub swap_own: Vec<String>,
    /// The line sweep says as it starts.
    pub plan_line: String,
    /// The stages' words for the target the options name (a pool host's:
    /// [`Settings::stages`] of its [`Target`]).
    pub here: Stages,
    /// `sweep-plan end`'s words.
    pub end_args: Vec<String>,
}

/// The words sweep hands each tool beside a config's own.
pub struct ToolWords {
    /// The SSH options that go with each --ssh.
    pub ssh_opts: Vec<String>,
    pub swap: Vec<String>,
    pub ready: Vec<String>,
    pub load: Vec<String>,
    pub sum: Vec<String>,
}

impl Settings {
    /// The settings of checked options `c`.
    pub fn new(c: Checked) -> Settings {
        let words = ToolWords::of(&c.args, &c.matches);
        let a = c.args;
        let levels = load_args::levels(
            a.concurrency.as_deref(),
            a.find_capacity.is_some(),
            &a.load_arg,
        );
        let search_knobs = search_knobs(&a);
        let mut s = Settings {
            grid_words: grid_words(&a),
            step_args: step_args(&a, &search_knobs, &words.sum),
            search_knobs,
            schedule_args: schedule_args(&a),
            swap_own: swap_words(&levels),
            plan_line: plan_line(&a, c.grid.points.len(), &levels),
            here: Stages::default(),
            end_args: Vec::new(),
            args: a,
            grid: c.grid,
            url: c.url,
            words,
        };
        s.here = s.stages(&s.target());
        s.end_args = end_args(&s.args, &s.here, &s.words.sum);
        s
    }

    /// The target sweep's options name (`--ssh`, `--exec-prefix`, `--url`).
    pub fn target(&self) -> Target {
        Target {
            ssh: self.args.ssh.clone(),
            exec_prefix: self.args.exec_prefix.clone(),
            url: self.args.url.clone(),
            own: None,
        }
    }

    /// What the look before the first stop needs for target `t`
    /// (preflight/look.rs): its svc-swap words, config 1's, and what the
    /// checks compare; `url`: check `t`'s URL too (not under --slurm).
    pub fn ask(&self, t: &Target, url: bool) -> Ask {
        let a = &self.args;
        let first = self.grid.points.first();
        // Only swept keys are checked: a `--swap-arg --set K` adds K on
        // purpose. `--param-new` declares its keys absent from the launch
        // line (a coupled `A,B` both); `params` holds them too.
        let keys = |ps: &[String]| -> Vec<String> {
            ps.iter()
                .flat_map(|p| p.split(','))
                .map(|k| key_of(k.trim()).to_string())
                .collect()
        };
        Ask {
            target: self.stages(t).target,
            config: first.map_or_else(Vec::new, |p| p.stage_words(a.expect_config).swap),
            url: url.then(|| t.url.clone()),
            new: keys(&a.params_new),
            swept: keys(&a.params),
            // wait-ready probes the URL as given only without a preset.
            probe: url && a.server.is_none() && a.ready_arg.is_empty(),
            // A key given to loadgen as an argument (the environment is
            // better, and the look reads it too).
            key_given: a.load_arg.iter().any(|x| sweepkit::api::is_key_flag(x)),
        }
    }

    /// Pool host `id` (a usage error when --hosts has none such).
    pub fn host(&self, id: &str) -> Result<Host, Exit> {
        self.pool()?
            .into_iter()
            .find(|h| h.id == id)
            .ok_or_else(|| usage(format!("--host '{id}' is not in --hosts")))
    }

    /// Where pool host `id`'s original is kept across runs.
    pub fn origin_file(&self, id: &str) -> String {
        crate::slots::pool::origin_file(&self.args.results, id)
    }

    /// The stages' shared words for target `t`.
    pub fn stages(&self, t: &Target) -> Stages {
        let (a, w) = (&self.args, &self.words);
        let b = Base {
            unit: a.unit.as_deref(),
            spec: a.spec.as_deref(),
            ssh_opts: &w.ssh_opts,
            swap_args: &w.swap,
            ready_timeout: &a.ready_timeout,
            server: a.server.as_deref(),
            ready_args: &w.ready,
            concurrency: a.concurrency.as_deref(),
            load_args: &w.load,
        };
        stage_words::stages(&b, t)
    }

    /// A pool runs the configs: `--hosts`, or `--gpus` slots.
    pub fn is_pool(&self) -> bool {
        self.args.hosts.is_some() || self.args.gpus.is_some()
    }

    /// The pool of --hosts, split into --gpus slots (a usage error names a
    /// bad line or the clash of two slots).
    pub fn pool(&self) -> Result<Vec<Host>, Exit> {
        let a = &self.args;
        if !self.is_pool() {
            return Err(usage("a pool's settings need --hosts or --gpus".into()));
        }
        let t = Templates {
            url: &a.url,
            target: a
                .unit
                .as_deref()
                .or(a.spec.as_deref())
                .or(a.container.as_deref()),
        };
        let split = a.gpus.as_deref().map(|gpus| Split {
            gpus,
            per: a.gpus_per_config as usize,
        });
        let here = hosts::here(a.ssh.as_deref(), a.exec_prefix.as_deref());
        hosts::pool(a.hosts.as_deref(), &here, &t, split.as_ref())
    }

    /// The words that have sweep-plan say its notes on stderr as sweep
    /// does, after `prefix` (none with --quiet).
    pub fn say_to(&self, prefix: &str) -> Vec<String> {
        match self.args.quiet {
            true => Vec::new(),
            false => vec!["--say".to_string(), format!("sweep: {prefix}")],
        }
    }
}

/// The grid's words: each --param and its --values.
fn grid_words(a: &SweepArgs) -> Vec<String> {
    a.params
        .iter()
        .zip(&a.values)
        .flat_map(|(p, v)| [format!("--param={p}"), format!("--values={v}")])
        .collect()
}

/// The adaptive search's knobs as `sweep-plan step` takes them.
fn search_knobs(a: &SweepArgs) -> Vec<String> {
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

/// `sweep-plan step`'s words for the loop (the script adds where the
/// scores are kept, for --adaptive, summarize's path, and where to
/// write): with --adaptive or --schedule, summarize's words `sum` for the
/// scores and the schedule's derivation, which step runs.
fn step_args(a: &SweepArgs, knobs: &[String], sum: &[String]) -> Vec<String> {
    let mut step = knobs.to_vec();
    step.extend(["--retries".to_string(), a.retries.clone()]);
    for (on, w) in [(a.resume, "--resume"), (a.expect_config, "--expect-config")] {
        if on {
            step.push(w.into());
        }
    }
    if let Some(sv) = &a.schedule {
        step.extend(["--schedule".to_string(), sv.name().to_string()]);
    }
    if let Some(k) = a.schedule_max_depth {
        step.extend(["--schedule-max-depth".to_string(), k.to_string()]);
    }
    if a.adaptive || a.schedule.is_some() {
        step.extend(sum.iter().map(|w| format!("--sum-arg={w}")));
    }
    step
}

/// summarize --schedule's own words (`--max-depth K`).
fn schedule_args(a: &SweepArgs) -> Vec<String> {
    a.schedule_max_depth
        .iter()
        .flat_map(|k| ["--max-depth".to_string(), k.to_string()])
        .collect()
}

/// The line sweep says as it starts: how many configs (or values, with
/// --adaptive), where the results go, and at which loads: a sweep without
/// levels measures concurrency 1 only, which is worth saying once.
fn plan_line(a: &SweepArgs, n_configs: usize, levels: &Levels) -> String {
    let what = match a.adaptive {
        true => format!("adaptive over {n_configs} value(s)"),
        false => format!("{n_configs} config(s)"),
    };
    let mut line = format!("{what}; results: {}", a.results);
    if *levels == Levels::Default {
        line.push_str("; ");
        line.push_str(levels_note());
    }
    line
}

/// `sweep-plan end`'s words from the options (--validate-on's replay, from
/// the stages `st`; summarize's arguments `sum` for the summary it runs);
/// sweep.sh adds --keep-winner, which a pool may refuse.
fn end_args(a: &SweepArgs, st: &Stages, sum: &[String]) -> Vec<String> {
    let mut w: Vec<String> = sum.iter().map(|x| format!("--sum-arg={x}")).collect();
    if let Some(f) = &a.validate_on {
        w.push(format!("--validate-on={f}"));
        w.extend(a.slo.iter().map(|s| format!("--slo={s}")));
        let load = load_args::replay_words(&st.load, f, a.slo.as_deref());
        w.extend(load.iter().map(|x| format!("--validate-load={x}")));
    }
    w
}

/// svc-swap's words from sweep: its pre-flight notes go into the records
/// only (sweep-plan verdict says each once per sweep, not per config),
/// and a note about a request cap no level reaches is left out. With a
/// capacity search, an open loop or a trace the top load is not known.
pub fn swap_words(levels: &Levels) -> Vec<String> {
    let mut w = vec!["--quiet-preflight".to_string()];
    let top = match levels {
        Levels::Default => Some(1),
        Levels::Closed(_) => levels.top(),
        Levels::Open => None,
    };
    if let Some(top) = top {
        w.extend(["--max-load".to_string(), top.to_string()]);
    }
    w
}

/// The note on a sweep given no load levels.
pub fn levels_note() -> &'static str {
    "concurrency 1 only (loadgen's default); give --concurrency 1,4,16 to measure under load"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_args_levels_in_every_spelling() {
        let of = |load: &str, conc: Option<&str>| {
            let load: Vec<String> = load.split_whitespace().map(String::from).collect();
            let l = load_args::levels(conc, false, &load);
            let top = l.top();
            let words = swap_words(&l);
            (l, top, words)
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
