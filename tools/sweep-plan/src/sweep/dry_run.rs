//! `sweep --dry-run`'s plan: with --hosts each host and its URL (a GPU
//! slot with its GPUs and target), then each config's pipe as a command to
//! copy, the tools at the paths the script found, every word quoted as
//! bash's `printf %q` quotes; with slots, the slot each config of the
//! first round starts on. A secret given as an argument
//! (`--ready-arg --api-key K`) is printed `<redacted>`, as every other
//! output prints it, and said once.

use std::fmt::Write as _;

use sweepkit::exit::Exit;

use super::settings::Settings;
use super::stage_words::Target;
use crate::quote::printf_q;

/// Said once when the plan hides a secret given as an argument.
const KEY_IN_ARGV: &str = "a key given as an argument is shown <redacted>; \
    SWEEPKIT_API_KEY in the environment is the better way (it stays out of \
    every command line, here and in ps)";

/// The tools' paths, as the script found them.
pub struct Tools<'a> {
    pub swap: &'a str,
    pub ready: &'a str,
    pub load: &'a str,
}

/// `--dry-run`'s plan for sweep `s`, the tools at `tools`: with a pool,
/// each host and its URL; then each config's pipe (on the first host, or
/// with slots on the slot it starts on), as a command to copy.
pub fn plan(s: &Settings, tools: &Tools<'_>) -> Result<String, Exit> {
    let pool = match s.is_pool() {
        true => s.pool()?,
        false => Vec::new(),
    };
    let slotted = pool.iter().any(|h| h.slot.is_some());
    let (g, expect_config, results) = (&s.grid, s.args.expect_config, &s.args.results);
    let mut out = String::new();
    for h in &pool {
        let _ = writeln!(
            out,
            "# host {}: {}{} -> {}",
            h.n,
            h.name,
            slot_note(h),
            h.url
        );
    }
    if slotted {
        let _ = writeln!(out, "{}", turns_note(s.args.bench_together));
    }
    let n = g.points.len();
    let mut redacted = false;
    for p in &g.points {
        let on = pool.get(p.index - 1).filter(|_| slotted);
        let st = match on.or(pool.first()) {
            Some(h) => s.stages(&Target::of_host(h)),
            None => s.here.clone(),
        };
        let own = p.stage_words(expect_config);
        let whole = |tool: &str, shared: &[String], own: Vec<String>| {
            let mut ws = vec![tool.to_string()];
            ws.extend(shared.iter().cloned());
            ws.extend(own);
            ws
        };
        let swap = whole(tools.swap, &st.target, own.swap);
        let ready = whole(tools.ready, &st.ready, own.ready);
        let load = whole(tools.load, &st.load, own.load);
        let [swap, ready, load] = [swap, ready, load].map(|ws| {
            let shown = sweepkit::redact::argv(&ws);
            redacted |= shown != ws;
            shown
        });
        let start = match (on, slotted) {
            (Some(h), _) => format!(" (starts on {})", h.name),
            (None, true) => " (on the first slot free)".to_string(),
            (None, false) => String::new(),
        };
        let _ = writeln!(out, "# [{}/{n}] {}{start}", p.index, p.label());
        let words = |ws: &[String]| ws.iter().map(|w| printf_q(w) + " ").collect::<String>();
        let _ = writeln!(
            out,
            "{}\\\n  | {}\\\n  | {}>> {}",
            words(&swap),
            words(&ready),
            words(&load),
            printf_q(results)
        );
    }
    if redacted {
        sweepkit::diag::warning("sweep", KEY_IN_ARGV);
    }
    Ok(out)
}

/// A slot's GPUs and target, as the host line shows them.
fn slot_note(h: &crate::hosts::Host) -> String {
    let mut parts = Vec::new();
    if let Some(g) = &h.gpus {
        parts.push(format!("GPUs {g}"));
    }
    if let Some(t) = &h.target {
        parts.push(t.clone());
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}

/// How a machine's slots share it.
fn turns_note(together: bool) -> &'static str {
    match together {
        false => "# a machine's slots load at once and bench one at a time ({port}: read from each slot's target)",
        true => "# a machine's slots load and bench at once (--bench-together; {port}: read from each slot's target)",
    }
}
