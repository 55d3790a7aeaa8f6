//! `sweep-plan step`: the one question sweep's loop asks before each
//! config, "which config runs next?". Over the grid, in order after the
//! config the loop ran last, skipping (`--resume`) configs whose last
//! record is a result; with `--adaptive`, the adaptive search's next value
//! (`next`); then with `--schedule` the schedule step (derive it, run
//! it, or done). Each answer carries the lines sweep says about it (the
//! configs skipped, the search's reasons, its end and cost) and, for a
//! run, each tool's words, so the script only runs the pipe.

use anyhow::anyhow;
use serde::Serialize;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::grid::Grid;
use crate::results::{self, Line};
use crate::schedule;
use crate::search::answer::Answer;

/// One answer of `step`.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Step {
    #[serde(rename = "type")]
    pub tag: &'static str,
    /// `run` (config `index`, or the schedule when it has none),
    /// `derive` (without --summarize: run `summarize --schedule` into
    /// RESULTS and ask again with `--derived RC`), `done`, or `fail`
    /// (`error`, `exit`).
    pub action: &'static str,
    /// The config to run (none: the schedule, or nothing).
    pub index: Option<usize>,
    /// Configs skipped on the way (`--resume`), or the values a finished
    /// adaptive search never tried.
    pub skipped: usize,
    /// What sweep says, one line each.
    pub notes: Vec<String>,
    /// With `--all`: every config left to run, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<usize>,
    /// With `run`: the line to say, svc-swap's, wait-ready's and loadgen's
    /// words for it (beside the sweep's shared ones), and `verdict`'s.
    pub label: String,
    pub to_swap: Vec<String>,
    pub to_ready: Vec<String>,
    pub to_load: Vec<String>,
    pub judge: Vec<String>,
    /// With `run`: the words to ask again with, after it (`--after N`,
    /// `--scheduled`).
    pub again: Vec<String>,
    /// With `fail`: why, and the exit status sweep ends with.
    pub error: String,
    pub exit: u8,
}

impl Step {
    /// Nothing left (yet): `done`.
    pub fn new() -> Step {
        Step {
            tag: "step",
            action: "done",
            ..Step::default()
        }
    }

    /// `fail` with the error `e` and its exit status.
    pub fn failed(e: Exit) -> Step {
        let mut s = Step::new();
        s.fail(
            e.code,
            e.error.map(|e| format!("{e:#}")).unwrap_or_default(),
        );
        s
    }

    /// Stop the loop (`fail`): `error`, and sweep's exit status `code`.
    fn fail(&mut self, code: u8, error: String) {
        (self.action, self.index, self.exit, self.error) = ("fail", None, code, error);
    }
}

/// A loop that asks to run more steps than this is stuck (the search
/// asking for one config again and again): 4 per config, plus 40.
fn step_limit(n_configs: usize) -> usize {
    n_configs * 4 + 40
}

/// The steps run so far: the `run` answers in the tally file's `text`.
pub fn runs(text: &str) -> usize {
    #[derive(serde::Deserialize)]
    struct Said {
        #[serde(rename = "type")]
        tag: String,
        action: String,
    }
    text.lines()
        .filter_map(|l| serde_json::from_str::<Said>(l).ok())
        .filter(|s| s.tag == "step" && s.action == "run")
        .count()
}

/// The step `s` to run, after `runs` ran already in a grid of
/// `n_configs`: past the limit ([`step_limit`]) the loop is stuck, and
/// stops.
pub fn stuck(s: &mut Step, runs: usize, n_configs: usize) {
    if s.action == "run" && runs >= step_limit(n_configs) {
        let why = format!("sweep-plan step keeps asking for {}; stopping", s.label);
        s.fail(exit::FAILURE, why);
    }
}

/// Config `i` of `g` as the step to run, with its words; `expect`: its
/// wait-ready words check the live server runs it.
pub fn run_config(s: &mut Step, g: &Grid, i: usize, expect: bool) {
    let Some(p) = g.points.get(i.wrapping_sub(1)) else {
        return;
    };
    let w = p.stage_words(expect);
    s.action = "run";
    s.index = Some(i);
    s.label = format!("[{i}/{}] {}", g.points.len(), p.label());
    (s.to_swap, s.to_ready, s.to_load) = (w.swap, w.ready, w.load);
    s.judge = vec!["--index".into(), i.to_string()];
    s.again = vec!["--after".into(), i.to_string()];
}

/// The adaptive search asked for config `after` again and again while it
/// failed only in transport: stop (`fail`) rather than loop.
pub fn transport_stop(s: &mut Step, g: &Grid, lines: &[Line], after: usize, retries: usize) {
    let Some(p) = g.points.get(after.wrapping_sub(1)) else {
        return;
    };
    if results::state_of(lines, |c| p.matches(c)) == results::State::Transport {
        let why = format!(
            "{}: transport failures after {retries} retries; fix the target and rerun (the file resumes)",
            p.label()
        );
        s.fail(exit::FAILURE, why);
    }
}

/// The schedule step for `server` once the configs are done: derive it,
/// run it (its record written to `work`/schedule.json for svc-swap
/// --apply-from), or done; `derived`: the derive ran and exited so.
pub fn schedule_step(
    s: &mut Step,
    lines: &[Line],
    server: &str,
    resume: bool,
    derived: Option<u8>,
    results: &str,
    work: &str,
) -> Result<(), Exit> {
    let st = schedule::step(lines, server, resume);
    let action = match derived {
        Some(exit::OK) => "run",
        Some(exit::SCHEDULE_REFUSED) => {
            s.notes.push(format!("schedule: the results cannot support a {server} schedule (summarize said why above); keeping the static pick"));
            return Ok(());
        }
        Some(rc) => {
            s.fail(
                rc,
                format!("summarize --schedule {server} failed (exit {rc})"),
            );
            return Ok(());
        }
        None => st.action,
    };
    match action {
        "done" => s
            .notes
            .push(format!("schedule: already measured in {results}, skipped")),
        "derive" => {
            s.action = "derive";
            s.notes.push(format!(
                "schedule: deriving the {server} schedule (summarize --schedule {server})"
            ));
        }
        _ => {
            // The words come from the last schedule record, resumed or not.
            let (file, _) = schedule::write_record(lines, server, work)
                .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{results}: {e}")))?;
            s.action = "run";
            s.index = None;
            s.label = format!("[schedule] {server} per-load schedule");
            s.to_swap = vec!["--apply-from".into(), file];
            s.to_ready = st.expect;
            s.to_ready.extend(st.stage.iter().cloned());
            s.to_load = st.stage;
            s.judge = vec!["--schedule".into(), server.into()];
            s.again = vec!["--scheduled".into()];
        }
    }
    Ok(())
}

/// The grid's next config after config `after` (0: none yet). With
/// `resume`, configs whose last record in `lines` is a result are skipped
/// and said so (`results`: the file's name, for the note).
pub fn grid(g: &Grid, lines: &[Line], after: usize, resume: bool, results: &str) -> Step {
    let mut s = Step::new();
    let n = g.points.len();
    for p in g.points.iter().filter(|p| p.index > after) {
        if resume && results::state_of(lines, |c| p.matches(c)).is_done() {
            s.skipped += 1;
            s.notes.push(format!(
                "[{}/{n}] {}: already in {results}, skipped",
                p.index,
                p.label()
            ));
            continue;
        }
        s.action = "run";
        s.index = Some(p.index);
        break;
    }
    s
}

/// Every config left to run after config `after` at once (a pool hands
/// them all to GNU parallel), with the skips said on the way.
pub fn all(g: &Grid, lines: &[Line], after: usize, resume: bool, results: &str) -> Step {
    let mut s = grid(g, lines, after, resume, results);
    let mut next = s.index;
    while let Some(i) = next {
        s.pending.push(i);
        let more = grid(g, lines, i, resume, results);
        s.skipped += more.skipped;
        s.notes.extend(more.notes);
        next = more.index;
    }
    s.action = "done";
    s.index = None;
    s
}

/// The adaptive search's answer `a` as a step: measure its value (config
/// `a.index`), or done with the values it skipped.
pub fn of_search(a: &Answer) -> Step {
    let mut s = Step {
        tag: "step",
        action: "run",
        index: a.index,
        notes: vec![format!("next: {}", a.why)],
        ..Step::default()
    };
    if a.action == "done" {
        s.action = "done";
        s.index = None;
        s.skipped = a.skipped.unwrap_or(0);
        s.notes.push(format!(
            "adaptive search done ({}); best: {}",
            a.rule.unwrap_or_default(),
            a.best.as_deref().unwrap_or("none")
        ));
        s.notes
            .push(format!("cost: {}", a.cost_line.as_deref().unwrap_or("")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::expand;

    fn grid3() -> Grid {
        expand(&["k".into()], &["1,2,3".into()]).unwrap()
    }

    fn lines(text: &str) -> Vec<Line> {
        results::read(text)
    }

    const DONE_2: &str = r#"{"type":"bench","config":{"k":"2"}}
{"type":"failure","config":{"k":"3"},"class":"transport"}
"#;

    #[test]
    fn the_grid_runs_in_order_after_the_last_config() {
        let g = grid3();
        let l = lines(DONE_2);
        let s = grid(&g, &l, 0, false, "r.jsonl");
        assert_eq!((s.action, s.index, s.skipped), ("run", Some(1), 0));
        assert_eq!(grid(&g, &l, 1, false, "r").index, Some(2));
        let end = grid(&g, &l, 3, false, "r");
        assert_eq!((end.action, end.index), ("done", None));
    }

    #[test]
    fn resume_skips_the_configs_with_a_result_and_says_so() {
        let g = grid3();
        let l = lines(DONE_2);
        let s = grid(&g, &l, 1, true, "r.jsonl");
        // 2 has a result; 3's transport failure is none: it runs again.
        assert_eq!((s.action, s.index, s.skipped), ("run", Some(3), 1));
        assert_eq!(s.notes, ["[2/3] k=2: already in r.jsonl, skipped"]);
        let all = lines("{\"type\":\"bench\",\"config\":{\"k\":\"1\"}}\n");
        let s = grid(
            &expand(&["k".into()], &["1".into()]).unwrap(),
            &all,
            0,
            true,
            "r",
        );
        assert_eq!((s.action, s.skipped), ("done", 1));
    }

    #[test]
    fn an_adaptive_value_that_only_failed_in_transport_stops_the_loop() {
        let g = grid3();
        let l = lines(DONE_2);
        let mut s = Step::default();
        transport_stop(&mut s, &g, &l, 3, 2);
        assert_eq!((s.action, s.exit), ("fail", 1));
        assert_eq!(
            s.error,
            "k=3: transport failures after 2 retries; fix the target and rerun (the file resumes)"
        );
        // A result, or nothing run yet: the search goes on.
        for after in [2, 0] {
            let mut s = Step::default();
            transport_stop(&mut s, &g, &l, after, 2);
            assert_eq!(s.action, "");
        }
    }

    #[test]
    fn a_config_step_carries_each_tools_words() {
        let g = grid3();
        let mut s = Step::default();
        run_config(&mut s, &g, 2, false);
        assert_eq!((s.action, s.index), ("run", Some(2)));
        assert_eq!(s.label, "[2/3] k=2");
        assert_eq!(s.to_swap, ["--set", "k=2"]);
        assert_eq!(s.to_ready, ["--pipeline-config", "k=2"]);
        assert_eq!(s.to_load, s.to_ready);
        assert_eq!(s.judge, ["--index", "2"]);
        run_config(&mut s, &g, 2, true);
        assert_eq!(s.to_ready[..2], ["--expect-config", "k=2"]);
    }

    #[test]
    fn all_hands_on_every_config_left_at_once() {
        let g = grid3();
        let s = all(&g, &lines(DONE_2), 0, true, "r");
        assert_eq!((s.pending, s.skipped, s.action), (vec![1, 3], 1, "done"));
        assert_eq!(s.notes, ["[2/3] k=2: already in r, skipped"]);
        assert_eq!(all(&g, &[], 0, false, "r").pending, [1, 2, 3]);
    }

    #[test]
    fn a_finished_search_says_its_end_and_cost() {
        let a = Answer {
            tag: "next",
            action: "done",
            value: None,
            index: None,
            measure: vec![],
            why: "plateau after k=4".into(),
            rule: Some("plateau"),
            best: Some("k=3".into()),
            skip: vec!["k=8".into()],
            skipped: Some(1),
            cost: None,
            cost_line: Some("restarts=4".into()),
        };
        let s = of_search(&a);
        assert_eq!((s.action, s.index, s.skipped), ("done", None, 1));
        assert_eq!(
            s.notes,
            [
                "next: plateau after k=4",
                "adaptive search done (plateau); best: k=3",
                "cost: restarts=4"
            ]
        );
        let more = Answer {
            action: "measure",
            index: Some(2),
            ..a
        };
        assert_eq!(of_search(&more).index, Some(2));
        assert_eq!(of_search(&more).notes.len(), 1);
    }

    /// The step limit came from the script (`n_configs * 4 + 40` rounds):
    /// the tally file counts the runs, and one past the limit fails,
    /// naming the step it kept asking for.
    #[test]
    fn a_loop_that_keeps_asking_is_stopped_naming_its_step() {
        let g = grid3();
        let mut s = Step::default();
        run_config(&mut s, &g, 2, false);
        assert_eq!(s.again, ["--after", "2"]);
        let ran = r#"{"type":"step","action":"run","index":2}"#.to_string() + "\n";
        let tally = ran.repeat(51) + "{\"type\":\"verdict\",\"tally\":\"ok\"}\n";
        assert_eq!(runs(&tally), 51);
        stuck(&mut s, 51, 3);
        assert_eq!(s.action, "run", "3 configs: 52 runs allowed");
        stuck(&mut s, 52, 3);
        assert_eq!((s.action, s.exit, s.index), ("fail", exit::FAILURE, None));
        assert_eq!(
            s.error,
            "sweep-plan step keeps asking for [2/3] k=2; stopping"
        );
    }
}
