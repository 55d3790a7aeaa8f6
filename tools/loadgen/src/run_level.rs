//! The level loop: each level of the fixed list (or, with
//! `--find-capacity`, of run_capacity.rs's search) is measured
//! (measure.rs), judged (classify.rs: a bench record, a failure, or a
//! stop) and written (record.rs: whether the run goes on).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::AtomicBool;

use anyhow::{anyhow, Context as _};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};

use crate::classify;
use crate::measure::{measure, Level, Progress};
use crate::output::Sink;
use crate::plan::{LevelPlan, Plan};
use crate::record::{record, write_requests};
use crate::setup::Context;
use crate::upstream_record::Upstream;

/// Run every level in turn; write records; map outcomes to the exit code.
pub fn run_all<W: Write>(
    plan: &Plan,
    ctx: &Context,
    up: &Upstream,
    sink: &mut Sink<W>,
    interrupted: &AtomicBool,
) -> Result<(), Exit> {
    let lp = &plan.level;
    let mut req_out = open_requests_out(lp)?;
    let mut p = Progress {
        offset: 0,
        answered: !lp.model_given || ctx.server_info.is_some(),
        any_failed: false,
    };
    if let Some(cp) = &plan.capacity {
        let io = crate::run_capacity::Io {
            sink,
            req_out: req_out.as_mut(),
            interrupted,
        };
        crate::run_capacity::run(plan, ctx, up, cp, &mut p, io)?;
        return finish(&p);
    }
    let levels = plan.shapes.iter().flat_map(|&shape| {
        (1..=lp.repeat).map(move |i| Level {
            shape,
            repeat: (lp.repeat > 1).then_some(i),
        })
    });
    for level in levels {
        let m = measure(plan, ctx, level, &mut p, interrupted);
        if let Some(w) = req_out.as_mut() {
            write_requests(w, &m)?;
        }
        let verdict = classify::classify(plan, ctx, up, m, &mut p);
        record(sink, req_out.as_mut(), verdict, interrupted)?;
    }
    finish(&p)
}

/// The run's end: exit 3 when some level had failed requests.
fn finish(p: &Progress) -> Result<(), Exit> {
    if p.any_failed {
        return Err(Exit::new(
            exit::SOME_FAILED,
            anyhow!("some requests failed (see each record's errors)"),
        ));
    }
    Ok(())
}

fn open_requests_out(lp: &LevelPlan) -> Result<Option<BufWriter<File>>, Exit> {
    let Some(p) = &lp.requests_out else {
        return Ok(None);
    };
    let f = File::create(p)
        .with_context(|| format!("--requests-out {}", p.display()))
        .code(exit::USAGE)?;
    Ok(Some(BufWriter::new(f)))
}
