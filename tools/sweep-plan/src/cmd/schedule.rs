//! `sweep-plan schedule`: where `sweep --schedule`'s step stands, its
//! words, or its record (schedule.rs).

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::ScheduleServer;

use crate::out::Io;
use crate::read::read_text;
use crate::{results, schedule};

/// The last schedule record for SERVER in RESULTS, where its step
/// stands (derive, run or done, its records' state) and the words
/// wait-ready takes for it; with --emit-record the record itself (as
/// svc-swap --apply-from reads it). sweep's loop asks `step`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The server the schedule is for
    #[arg(long, value_name = "SERVER")]
    server: ScheduleServer,
    /// Keep a schedule RESULTS holds (without: always derive anew)
    #[arg(long)]
    resume: bool,
    /// Print the last schedule record instead of the answer; none:
    /// exit 3
    #[arg(long)]
    emit_record: bool,
    /// Print one tool's words one per line instead: expect (wait-ready
    /// --expect-config) or stage (--pipeline-config)
    #[arg(long, value_name = "WHICH", value_parser = ["expect", "stage"])]
    words: Option<String>,
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let server = a.server.name();
    let lines = results::read(&read_text(&a.results, true)?);
    if a.emit_record {
        let rec = schedule::last_schedule(&lines, server).ok_or_else(|| {
            Exit::new(
                exit::BAD_INPUT,
                anyhow!("{}: no schedule record for {}", a.results, server),
            )
        })?;
        return io.out.value(&rec.raw);
    }
    let st = schedule::step(&lines, server, a.resume);
    match a.words.as_deref() {
        Some("expect") => io.out.words(&st.expect),
        Some(_) => io.out.words(&st.stage),
        None => io.out.answer(&st),
    }
}
