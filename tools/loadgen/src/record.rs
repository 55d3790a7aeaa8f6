//! Writing a judged level: its requests to `--requests-out`, its
//! verdict's records to stdout, and whether the run goes on (the exit
//! code when it does not).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{anyhow, Context as _};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};

use crate::classify::Verdict;
use crate::measure::Measured;
use crate::output::{self, Sink};

pub(crate) fn write_requests(w: &mut impl Write, m: &Measured) -> Result<(), Exit> {
    for (s, d) in m.out.samples.iter().zip(&m.derived) {
        let line = output::request_line(&m.label, m.out.started, s, d.as_ref());
        sweepkit::io::write_json_line(w, &line)
            .context("--requests-out")
            .code(exit::FAILURE)?;
    }
    Ok(())
}

/// Write the verdict's records. Err ends the run: every request failed,
/// the server died (later levels would only meet a closed port), or Ctrl-C.
pub(crate) fn record<W: Write>(
    sink: &mut Sink<W>,
    req_out: Option<&mut BufWriter<File>>,
    verdict: Verdict,
    interrupted: &AtomicBool,
) -> Result<(), Exit> {
    let stop = interrupted.load(Ordering::SeqCst);
    match verdict {
        Verdict::AllFailed(failure) => {
            write(sink, &failure.record)?;
            if stop {
                return Err(Exit::silent(exit::INTERRUPTED));
            }
            Err(Exit::new(failure.code, anyhow!("{}", failure.reason)))
        }
        Verdict::Bench(bench, died) => {
            write(sink, &bench)?;
            if let Some(w) = req_out {
                w.flush().context("--requests-out").code(exit::FAILURE)?;
            }
            if stop {
                return Err(Exit::silent(exit::INTERRUPTED));
            }
            match died {
                None => Ok(()),
                Some(failure) => {
                    write(sink, &failure.record)?;
                    Err(Exit::new(failure.code, anyhow!("{}", failure.reason)))
                }
            }
        }
    }
}

fn write<W: Write>(sink: &mut Sink<W>, rec: &sweepkit::records::Record) -> Result<(), Exit> {
    sink.record(rec)
        .context("writing stdout")
        .code(exit::FAILURE)
}
