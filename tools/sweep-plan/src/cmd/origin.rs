//! `sweep-plan origin`: the origin record a results file's first start
//! writes, from the dry-run swap record on stdin, after sweep's pre-flight
//! on it (`--url`, preflight.rs).

use anyhow::{anyhow, Context};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::Record;

use crate::out::Io;
use crate::read::read_text;
use crate::{origin, preflight, results};

/// Read a dry-run swap record on stdin; print the origin record to
/// append, unless ORIGIN already holds one (then print nothing)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Append the new origin record to FILE (the results file) instead
    /// of printing it
    #[arg(long, value_name = "FILE")]
    append: Option<String>,
    /// Also write the new origin record to FILE (a pool host's own)
    #[arg(long, value_name = "FILE")]
    copy: Option<String>,
    /// When ORIGIN holds one already (and no --copy), say so on
    /// stderr after PREFIX
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    say: Option<String>,
    /// Check the dry run first (sweep's pre-flight; exit 2 with one
    /// line): every swept flag is on the launch line (or --new), and
    /// URL's port is the one the target listens on
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With --url: a swept key the launch line may lack (sweep
    /// --param-new); repeatable
    #[arg(long = "new", value_name = "KEY", requires = "url")]
    new: Vec<String>,
    /// With --url: a swept key (sweep --param) that must be on the
    /// launch line already; repeatable. Other changes are not checked
    #[arg(long = "swept", value_name = "KEY", requires = "url")]
    swept: Vec<String>,
    /// With --url: wait-ready probes that URL as given (sweep has no
    /// --server); a running server's 404 or 405 there is refused (exit 2)
    #[arg(long, requires = "url")]
    probe: bool,
    /// With --url: a key goes to the tools as an argument (sweep's
    /// --load-arg --api-key); else a launch line with --api-key needs one
    /// in the environment (SWEEPKIT_API_KEY or OPENAI_API_KEY; exit 2)
    #[arg(long, requires = "url")]
    key_given: bool,
    /// Where the origin is kept (the results file); missing: none yet
    #[arg(value_name = "ORIGIN")]
    file: Option<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let have = match &a.file {
        Some(f) => origin::find(&read_text(f, true)?).is_some(),
        None => false,
    };
    let mut s = String::new();
    io.stdin
        .read_to_string(&mut s)
        .context("<stdin>: not UTF-8 text")
        .code(exit::BAD_INPUT)?;
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("<stdin>: not JSON: {e}")))?;
    // The dry run's record, read once; what is wrong with it is said
    // after the pre-flight, which checks only a swap record.
    let swap = origin::swap_of(&v);
    if let (Some(url), Ok(s)) = (&a.url, &swap) {
        let c = preflight::Checks {
            url,
            new: &a.new,
            swept: &a.swept,
            probe: a.probe,
            key_given: a.key_given || sweepkit::api::key_in_env(),
        };
        preflight::check(s, &c).map_err(|why| {
            // sweep's usage error, said in its name (sweep.sh exits with it)
            sweepkit::diag::error("sweep", &anyhow!(why));
            Exit::silent(exit::USAGE)
        })?;
    }
    let rec = swap
        .and_then(|s| origin::new_origin(&s, &v, io.started))
        .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("<stdin>: {e}")))?;
    let rec = Record::Origin(rec);
    match (have, &a.append) {
        (true, _) => {
            if let (Some(prefix), None) = (&a.say, &a.copy) {
                sweepkit::diag::line(format!(
                    "{prefix}restores will put back the original recorded in {}",
                    a.file.as_deref().unwrap_or_default()
                ));
            }
        }
        (false, None) => io.out.record(&rec)?,
        (false, Some(results)) => {
            results::append_records(results, &[&rec])?;
            if let Some(c) = &a.copy {
                std::fs::File::create(c)
                    .and_then(|mut f| sweepkit::io::write_record(&mut f, &rec))
                    .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{c}: {e}")))?;
            }
        }
    }
    Ok(())
}
