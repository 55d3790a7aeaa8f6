//! sweep's settings handed to sweep.sh as the lines of a bash script
//! (`sweep-plan options`): `name='value'` and `name=('a' 'b')`, every
//! value single-quoted by [`single`], so the script's `eval` runs no user
//! text; and the exit codes by name. What the script reads: the grid,
//! each tool's words, the pass-through options, the loop's, the origin's
//! and the end's words; a pool's hosts; one host's own stages.

use sweepkit::exit;
use sweepkit::exit::Exit;

use super::definition::usage;
use super::settings::Settings;
use super::stage_words::{Stages, Target};
use crate::hosts::Host;
use crate::quote::single;
use crate::slots::pool as slots;

/// The exit codes sweep.sh names, as `EXIT_<NAME>` with their values from
/// the shared table, so the script holds no magic numbers.
const EXITS: &[(&str, u8)] = &[
    ("FAILURE", exit::FAILURE),
    ("USAGE", exit::USAGE),
    ("BAD_INPUT", exit::BAD_INPUT),
    ("TRANSPORT_ERROR", exit::TRANSPORT_ERROR),
    ("PREFLIGHT_REJECTED", exit::PREFLIGHT_REJECTED),
    ("SOME_CONFIGS_FAILED", exit::SOME_CONFIGS_FAILED),
    ("ALL_CONFIGS_FAILED", exit::ALL_CONFIGS_FAILED),
    ("RESTORE_FAILED", exit::RESTORE_FAILED),
    ("NO_HOST_LEFT", exit::NO_HOST_LEFT),
    ("NO_PARALLEL", exit::NO_PARALLEL),
    ("HOST_DROPPED", exit::HOST_DROPPED),
    ("SUBMIT_REJECTED", exit::SUBMIT_REJECTED),
    ("NO_SLURM", exit::NO_SLURM),
    ("MIXED_HARDWARE", exit::MIXED_HARDWARE),
    ("INTERRUPTED", exit::INTERRUPTED),
    ("SCHEDULE_REFUSED", exit::SCHEDULE_REFUSED),
];

/// Which of sweep's settings `options` hands back.
#[derive(Debug, Clone, Copy)]
pub enum Want<'a> {
    /// Every setting, and the exit codes.
    All,
    /// The pool's hosts (`h_id`, `h_name`: ids and names in --hosts order;
    /// `h_slots`: some are GPU slots, whose origins are read first).
    Pool,
    /// One pool host's own: the stages' `target`, `ready` and `load`, its
    /// `origin_file`, the `say_prefix` that names it, a slot's
    /// `bench_gate` and the `progress_args` of the pool.
    Host(&'a str),
}

/// The lines of the script.
#[derive(Default)]
struct Lines(Vec<String>);

impl Lines {
    fn scalar(&mut self, name: &str, v: &str) {
        self.0.push(format!("{name}={}", single(v)));
    }
    fn flag(&mut self, name: &str, on: bool) {
        self.0.push(format!("{name}={}", u8::from(on)));
    }
    fn array(&mut self, name: &str, words: &[String]) {
        let q: Vec<String> = words.iter().map(|w| single(w)).collect();
        self.0.push(format!("{name}=({})", q.join(" ")));
    }
    fn stages(&mut self, st: &Stages) {
        self.array("target", &st.target);
        self.array("ready", &st.ready);
        self.array("load", &st.load);
    }
}

/// `help='...'`: the text of --help or --version, for the script to print.
pub fn help(text: &str) -> String {
    format!("help={}\n", single(text))
}

/// The settings `want` names of sweep `s` (`argv`: its words, handed
/// back for a pool's jobs), as the script's lines.
pub fn assignments(s: &Settings, argv: &[String], want: Want<'_>) -> Result<String, Exit> {
    let mut l = Lines::default();
    match want {
        Want::All => {
            every_setting(&mut l, s);
            l.array("argv", argv);
            l.0.push("help=''".into());
            let exits: Vec<String> = EXITS.iter().map(|(n, c)| format!("EXIT_{n}={c}")).collect();
            l.0.push(format!("readonly {}", exits.join(" ")));
        }
        Want::Pool => {
            let pool = pool_read(s)?;
            l.array(
                "h_id",
                &pool.iter().map(|h| h.id.clone()).collect::<Vec<_>>(),
            );
            l.array(
                "h_name",
                &pool.iter().map(|h| h.name.clone()).collect::<Vec<_>>(),
            );
            l.flag("h_slots", pool.iter().any(|h| h.slot.is_some()));
        }
        Want::Host(id) => {
            let pool = pool_read(s)?;
            let h = pool
                .iter()
                .find(|h| h.id == id)
                .ok_or_else(|| usage(format!("--host '{id}' is not in --hosts")))?;
            l.stages(&s.stages(&Target::of_host(h)));
            let a = &s.args;
            l.scalar("origin_file", &s.origin_file(id));
            l.scalar("say_prefix", &format!("[{}] ", h.name));
            l.array("say_to", &s.say_to(&format!("[{}] ", h.name)));
            l.array(
                "bench_gate",
                &slots::bench_words(h, &a.results, a.bench_together),
            );
            let (lanes, benches) = slots::lanes(&pool, a.bench_together);
            let progress = [
                "--lanes",
                &lanes.to_string(),
                "--bench-lanes",
                &benches.to_string(),
            ];
            l.array("progress_args", &progress.map(String::from));
        }
    }
    Ok(l.0.join("\n") + "\n")
}

/// The pool, each slot's `{port}` filled from its origin where read
/// (two slots of a machine on one port: a usage error).
fn pool_read(s: &Settings) -> Result<Vec<Host>, Exit> {
    let mut pool = s.pool()?;
    slots::fill_ports(&mut pool, &s.args.results).map_err(|e| usage(e.to_string()))?;
    Ok(pool)
}

/// Every variable sweep.sh reads.
fn every_setting(l: &mut Lines, s: &Settings) {
    let a = &s.args;
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    let schedule = a.schedule.map(|s| s.name().to_string());
    l.array("params", &a.params);
    l.array("values", &a.values);
    for (n, v) in [
        ("results", &a.results),
        ("retries", &a.retries),
        ("drop_after", &a.drop_after),
        ("url", &a.url),
        ("ready_timeout", &a.ready_timeout),
    ] {
        l.scalar(n, v);
    }
    for (n, v) in [
        ("unit", &a.unit),
        ("spec", &a.spec),
        ("ssh", &a.ssh),
        ("exec_prefix", &a.exec_prefix),
        ("server", &a.server),
        ("concurrency", &a.concurrency),
        ("schedule", &schedule),
        ("report", &a.report),
        ("compare_to", &a.compare_to),
    ] {
        l.scalar(n, &opt(v));
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
        ("pool", s.is_pool()),
    ] {
        l.flag(n, v);
    }
    // A pool host's own (Want::Host): a slot's bench stage, the lanes.
    l.array("bench_gate", &[]);
    l.array("progress_args", &[]);
    l.array("adaptive_args", &s.search_knobs);
    l.array("step_args", &s.step_args);
    l.array("say_to", &s.say_to(""));
    l.array("schedule_args", &s.schedule_args);
    let w = &s.words;
    l.array("ssh_opts", &w.ssh_opts);
    l.array("swap_args", &w.swap);
    l.array("ready_args", &w.ready);
    l.array("load_args", &w.load);
    l.array("sum_args", &w.sum);
    // svc-swap's words for each config's swap only (not the dry run's
    // or the restore's): pre-flight notes are said once, by verdict.
    l.array("swap_own", &s.swap_own);
    l.stages(&s.here);
    l.array("end_args", &s.end_args);
    l.array("grid", &s.grid_words);
    let labels: Vec<String> = s.grid.points.iter().map(|p| p.label()).collect();
    l.array("labels", &labels);
    l.scalar("n_configs", &labels.len().to_string());
    l.scalar("plan_line", &s.plan_line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::checks::For;
    use crate::sweep::definition::PASS_THROUGH;

    /// `options -- ARGV`: every setting, or the usage error.
    fn parse(argv: &[String]) -> Result<String, Exit> {
        let s = crate::sweep::read(argv, For::Options { start: false })?.to_plan()?;
        assignments(&s, argv, Want::All)
    }

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
