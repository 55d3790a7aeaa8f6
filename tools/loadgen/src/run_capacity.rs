//! The `--find-capacity` loop: run a level, judge its record against the
//! terms (`capacity::judge`), let the search pick the next concurrency,
//! write the record, and on the last one add what the search found. The
//! levels are measured, classified and written exactly as `run_level`
//! does for a fixed list; only the choice of the next level differs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use sweepkit::exit::Exit;
use sweepkit::records::{CapacityStop, Record};

use crate::capacity::{judge, sentence, CapacityPlan, Search};
use crate::classify::{self, Verdict};
use crate::level::Shape;
use crate::measure::{measure, Level, Progress};
use crate::output::Sink;
use crate::plan::Plan;
use crate::record::{record, write_requests};
use crate::setup::Context;
use crate::upstream_record::Upstream;

/// Where the search writes.
pub struct Io<'a, W: Write> {
    pub sink: &'a mut Sink<W>,
    pub req_out: Option<&'a mut BufWriter<File>>,
    pub interrupted: &'a AtomicBool,
}

/// Search until the capacity is known, the budget or the limit is
/// reached, a level fails, or Ctrl-C.
pub fn run<W: Write>(
    plan: &Plan,
    ctx: &Context,
    up: &Upstream,
    cp: &CapacityPlan,
    p: &mut Progress,
    mut io: Io<'_, W>,
) -> Result<(), Exit> {
    let mut search = Search::new(cp.clone());
    let mut c = search.first();
    loop {
        let level = Level {
            shape: Shape::Closed { concurrency: c },
            repeat: None,
        };
        let m = measure(plan, ctx, level, p, io.interrupted);
        if let Some(w) = io.req_out.as_deref_mut() {
            write_requests(w, &m)?;
        }
        let mut verdict = classify::classify(plan, ctx, up, m, p);
        let stop = io.interrupted.load(Ordering::SeqCst);
        let next = match &mut verdict {
            Verdict::Bench(rec, died) => {
                let Record::Bench(b) = rec.as_mut() else {
                    unreachable!("a bench verdict holds a bench record")
                };
                let (meets, missed) = judge(&cp.terms, b);
                let said = missed.join(", ");
                let next = match search.next(c, meets, missed) {
                    _ if stop => Err(CapacityStop::Interrupted),
                    _ if died.is_some() => Err(CapacityStop::ServerFailed),
                    n => n,
                };
                progress(plan, c, meets, &said, &next);
                if let Err(why) = &next {
                    let r = search.result(why.clone());
                    say(plan, &sentence(&r));
                    b.capacity = Some(r);
                }
                next
            }
            Verdict::AllFailed(f) => {
                let _ = search.next(c, false, vec!["every request failed".into()]);
                let r = search.result(if stop {
                    CapacityStop::Interrupted
                } else {
                    CapacityStop::ServerFailed
                });
                let line = sentence(&r);
                say(plan, &line);
                if let Record::Failure(fr) = &mut f.record {
                    fr.reason = format!("{}; capacity search: {line}", fr.reason);
                }
                Err(CapacityStop::ServerFailed)
            }
        };
        record(io.sink, io.req_out.as_deref_mut(), verdict, io.interrupted)?;
        match next {
            Ok(n) => c = n,
            Err(_) => return Ok(()),
        }
    }
}

fn say(plan: &Plan, line: &str) {
    if !plan.level.quiet {
        sweepkit::diag::line(format!("loadgen: {line}"));
    }
}

fn progress(plan: &Plan, c: u32, meets: bool, missed: &str, next: &Result<u32, CapacityStop>) {
    let verdict = if meets {
        "meets every term".to_string()
    } else {
        format!("misses ({missed})")
    };
    let then = match next {
        Ok(n) => format!("; next c={n}"),
        Err(why) => format!("; search ends ({why})"),
    };
    say(plan, &format!("capacity search: c={c} {verdict}{then}"));
}
