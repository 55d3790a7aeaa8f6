//! `sweep --dry-run`'s plan: with --hosts each host and its URL, then
//! each config's pipe as a command to copy, the tools at the paths the
//! script found, every word quoted as bash's `printf %q` quotes.

use std::fmt::Write as _;

use sweepkit::exit::Exit;

use super::settings::Settings;
use super::stage_words::Target;
use crate::quote::printf_q;

/// The tools' paths, as the script found them.
pub struct Tools<'a> {
    pub swap: &'a str,
    pub ready: &'a str,
    pub load: &'a str,
}

/// `--dry-run`'s plan for sweep `s`, the tools at `tools`: with a pool,
/// each host and its URL; then each config's pipe (on the first host), as
/// a command to copy.
pub fn plan(s: &Settings, tools: &Tools<'_>) -> Result<String, Exit> {
    let pool = match s.args.hosts {
        Some(_) => s.pool()?,
        None => Vec::new(),
    };
    let st = match pool.first() {
        Some(h) => s.stages(&Target::of_host(h)),
        None => s.here.clone(),
    };
    let (g, expect_config, results) = (&s.grid, s.args.expect_config, &s.args.results);
    let mut out = String::new();
    for h in &pool {
        let _ = writeln!(out, "# host {}: {} -> {}", h.n, h.name, h.url);
    }
    let n = g.points.len();
    for p in &g.points {
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
        let _ = writeln!(out, "# [{}/{n}] {}", p.index, p.label());
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
    Ok(out)
}
