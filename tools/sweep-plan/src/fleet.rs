//! `sweep --hosts`: what GNU parallel cannot decide for the pool. parallel
//! binds each job slot to a host (the hosts are its sshlogins) and moves a
//! failed config to another host with its own `--retries`; this module
//! says, after each try, whether the try's result stands (`fleet-step`),
//! keeps the per-host blame and drops a host that fails too often
//! (`fleet-watch`, which reads every try's record on parallel's output and
//! rewrites the sshlogin file parallel re-reads, since parallel has no rule
//! for "this host is bad"), and how the pool ended (`outcome`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::time::SystemTime;

use anyhow::{anyhow, Context};
use serde::{Deserialize, Serialize};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::Record;

use crate::grid::Grid;
use crate::results::{self, State};

/// A pool's end, as `outcome` answers.
#[derive(Debug, Serialize)]
pub struct Outcome {
    #[serde(rename = "type")]
    tag: &'static str,
    pub measured: usize,
    pub failed: usize,
    /// Configs with no result (pending, transport only, cut short).
    pub missing: usize,
    /// Hosts dropped: host_dropped records after line `since`.
    pub dropped: usize,
    /// A job exited 2 (a tool rejected its arguments): the pool stopped.
    pub usage: bool,
    /// Jobs the joblog says ended well that wrote no try record: GNU
    /// parallel's worker never started sweep's job (with SHELL unset its
    /// remote wrapper runs an empty shell and exits 0).
    pub unstarted: usize,
    /// 2 a usage error, 43 configs left unrun, 41 all failed, 40 some failed, 45 a host
    /// dropped, else 0; with [`Outcome::end`], 130 interrupted and 42 the
    /// winner refused.
    pub exit: u8,
    /// Whether the restores apply the winner (--keep-winner, not refused).
    pub keep_winner: bool,
    /// What sweep says at the pool's end ([`Outcome::end`]): an error
    /// before the restores, a warning, the `done:` line, and the
    /// --keep-winner refusal after the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// How the pool's sweep ended, beside the grid's states.
#[derive(Debug, Default)]
pub struct End<'a> {
    /// Ctrl-C or a signal stopped the pool.
    pub interrupted: bool,
    /// --keep-winner was asked for.
    pub keep_winner: bool,
    /// --keep-winner refused: the hosts differ in hardware or server.
    pub winner_refused: bool,
    pub joblog: &'a str,
    pub results: &'a str,
}

impl Outcome {
    /// Fill in what sweep says and its exit status: an interrupt makes it
    /// 130 (a usage error stays 2); a refused --keep-winner, 42.
    pub fn end(&mut self, e: &End<'_>) {
        if self.usage {
            self.error = Some("a tool rejected its arguments; fix the pass-through options".into());
        }
        if self.unstarted > 0 {
            self.warning = Some(format!(
                "{} job(s) ended without running sweep's job (GNU parallel's joblog: {})",
                self.unstarted, e.joblog
            ));
        }
        self.done = Some(format!(
            "done: {} measured, {} failed, {} without a result, {} host(s) dropped",
            self.measured, self.failed, self.missing, self.dropped
        ));
        if e.interrupted && self.exit != exit::USAGE {
            self.exit = exit::INTERRUPTED;
        }
        self.keep_winner = e.keep_winner && !e.winner_refused;
        if e.winner_refused {
            self.refusal = Some(format!(
                "--keep-winner: the hosts differ in hardware or server version, so one pick would compare the hosts, not the configs; every host's original config is back (--summarize-arg --pool-hosts applies one pick to every host anyway; summarize --per-host {} shows each host's best)",
                e.results
            ));
            self.exit = exit::RESTORE_FAILED;
        }
    }
}

/// How the grid stands in `lines`: configs measured, failed, failed in
/// transport only (a node or host lost), and without any result.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Tally {
    pub measured: usize,
    pub failed: usize,
    pub transport: usize,
    pub missing: usize,
}

/// Count each config of `g` by its last record in `lines`.
pub fn tally(g: &Grid, lines: &[results::Line]) -> Tally {
    let mut t = Tally::default();
    for p in &g.points {
        match results::state_of(lines, |c| p.matches(c)) {
            State::Complete => t.measured += 1,
            State::Failed => t.failed += 1,
            State::Transport => t.transport += 1,
            _ => t.missing += 1,
        }
    }
    t
}

/// A grid's exit status: 43 configs left unrun, 41 all failed, 40 some
/// failed, 45 a host dropped, else 0 (sweep(1), EXIT STATUS).
pub fn grid_exit(measured: usize, failed: usize, missing: usize, dropped: usize) -> u8 {
    if missing > 0 {
        exit::NO_HOST_LEFT
    } else if failed > 0 && measured == 0 {
        exit::ALL_CONFIGS_FAILED
    } else if failed > 0 {
        exit::SOME_CONFIGS_FAILED
    } else if dropped > 0 {
        exit::HOST_DROPPED
    } else {
        exit::OK
    }
}

/// How the grid stands in `text`, and the pool's exit status: a config
/// that failed only in transport counts as failed (its hosts were tried).
pub fn outcome(g: &Grid, text: &str, since: usize) -> Outcome {
    let lines = results::read(text);
    let t = tally(g, &lines);
    let (measured, failed, missing) = (t.measured, t.failed + t.transport, t.missing);
    let dropped = lines
        .iter()
        .filter(|l| l.line > since && l.kind.as_deref() == Some("host_dropped"))
        .count();
    let exit = grid_exit(measured, failed, missing, dropped);
    Outcome {
        tag: "outcome",
        measured,
        failed,
        missing,
        dropped,
        usage: false,
        unstarted: 0,
        exit,
        keep_winner: false,
        error: None,
        warning: None,
        done: None,
        refusal: None,
    }
}

/// Each job's exit status in GNU parallel's joblog (TSV with a header;
/// Exitval is its seventh column).
fn joblog_exits(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split('\t').nth(6).map(str::trim))
}

/// Jobs that GNU parallel's joblog says exited 0, less the try records
/// (`tries`, JSON Lines) that say so: the jobs that ended well without
/// running.
pub fn unstarted(joblog: &str, tries: &str) -> usize {
    let ok = joblog_exits(joblog).filter(|x| *x == "0").count();
    let tried = tries
        .lines()
        .filter_map(|l| serde_json::from_str::<Try>(l).ok())
        .filter(|t| t.exit == 0)
        .count();
    ok.saturating_sub(tried)
}

/// Whether GNU parallel's joblog holds a job that exited 2, a usage error.
pub fn joblog_usage(text: &str) -> bool {
    let usage = exit::USAGE.to_string();
    joblog_exits(text).any(|x| x == usage)
}

/// One try of a config on one host, as `fleet-step` answers: the record
/// `fleet-watch` reads (it names the host, for blame).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Try {
    #[serde(rename = "type")]
    pub tag: String,
    pub index: usize,
    pub label: String,
    /// The host's id (its sshlogin in parallel's --slf file).
    pub host: String,
    /// The try's verdict; `origin_failed`: the host's config could not be
    /// read, so nothing ran.
    pub state: String,
    /// measured, config-failed (its own failure stands), try-elsewhere (a
    /// first failure), blame-host (transport: the host's fault) or
    /// interrupted.
    pub step: String,
    /// The job's exit status for parallel: 0 the config is done (its
    /// result stands), 1 another host should try it (--retries), 130.
    pub exit: u8,
}

/// A config that fails on one host runs once more on another before it
/// counts as its own failure (a GPU fault or a leftover process on one
/// host looks exactly like an OOM at load), unless pre-flight refused the
/// config itself; a transport failure blames its host. `suspect`: this
/// run's records already hold a failure of the config (on another host).
pub fn step(state: State, suspect: bool, swap_exit: u8) -> (&'static str, u8) {
    const AGAIN: u8 = 1; // any non-zero status: parallel's --retries
    match state {
        State::Complete => ("measured", exit::OK),
        State::Transport => ("blame-host", AGAIN),
        State::Failed if suspect || swap_exit == exit::PREFLIGHT_REJECTED => {
            ("config-failed", exit::OK)
        }
        State::Failed => ("try-elsewhere", AGAIN),
        State::Pending | State::Incomplete => ("interrupted", exit::INTERRUPTED),
    }
}

/// A host of the pool, as `fleet-watch --host ID=NAME` names it.
#[derive(Debug, Clone)]
pub struct Host {
    pub id: String,
    pub name: String,
}

/// clap's parser for `--host ID=NAME`.
pub fn parse_host(s: &str) -> Result<Host, String> {
    let (id, name) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected ID=NAME"))?;
    if id.is_empty() || id.contains(char::is_whitespace) || id.contains('/') {
        return Err(format!("'{id}': not a host id"));
    }
    Ok(Host {
        id: id.into(),
        name: name.into(),
    })
}

/// The pool's blame: failures charged to each host, and the dropped ones.
#[derive(Debug, Default)]
pub struct Blame {
    pub drop_after: usize,
    pub hosts: Vec<Host>,
    charges: BTreeMap<String, usize>,
    pub dropped: BTreeSet<String>,
    /// A config's first failure, on this host, until another host decides.
    failed_on: BTreeMap<usize, String>,
}

/// A host to drop: its id, failure count and the last reason.
#[derive(Debug, PartialEq)]
pub struct Drop {
    pub id: String,
    pub count: usize,
    pub why: String,
}

impl Blame {
    pub fn new(drop_after: usize, hosts: Vec<Host>) -> Self {
        Blame {
            drop_after,
            hosts,
            ..Blame::default()
        }
    }

    fn name(&self, id: &str) -> String {
        self.hosts
            .iter()
            .find(|h| h.id == id)
            .map_or_else(|| id.to_string(), |h| h.name.clone())
    }

    /// Take one try into account; a host that reaches --drop-after
    /// failures is to be dropped (once).
    pub fn record(&mut self, t: &Try) -> Option<Drop> {
        let (host, why) = match t.step.as_str() {
            "measured" => match self.failed_on.remove(&t.index) {
                Some(h) if h != t.host => {
                    let why = format!("{} failed there, not on {}", t.label, self.name(&t.host));
                    (h, why)
                }
                _ => return None,
            },
            "try-elsewhere" => {
                self.failed_on.insert(t.index, t.host.clone());
                return None;
            }
            "blame-host" if t.state == "origin_failed" => (
                t.host.clone(),
                "svc-swap --dry-run could not read its config".to_string(),
            ),
            "blame-host" => (t.host.clone(), format!("transport failure on {}", t.label)),
            _ => {
                self.failed_on.remove(&t.index);
                return None;
            }
        };
        let n = self.charges.entry(host.clone()).or_default();
        *n += 1;
        if *n < self.drop_after || self.dropped.contains(&host) {
            return None;
        }
        let count = *n;
        self.dropped.insert(host.clone());
        Some(Drop {
            id: host,
            count,
            why,
        })
    }

    /// parallel's sshlogin file: one job slot per live host; a dropped one
    /// stays as a comment, which parallel skips and a job on it reads.
    pub fn sshlogins(&self) -> String {
        let mut s = String::from("# sweep --hosts: one job slot per live host\n");
        for h in &self.hosts {
            if self.dropped.contains(&h.id) {
                s.push_str(&format!("# dropped {}\n", h.id));
            } else {
                s.push_str(&format!("1/{}\n", h.id));
            }
        }
        s
    }
}

/// Where `fleet-watch` reads and writes.
pub struct WatchFiles<'a> {
    pub slf: &'a str,
    pub origins: &'a str,
    pub results: &'a str,
    pub tries: Option<&'a str>,
}

/// Read the tries on `input` till it ends; keep the blame, and drop a
/// host at --drop-after failures: a warning, a host_dropped record in
/// RESULTS (whose upstream is the host's origin record) and the sshlogin
/// file rewritten without it (parallel re-reads it when a job ends).
pub fn watch(mut b: Blame, f: &WatchFiles, input: impl BufRead) -> Result<(), Exit> {
    for line in input.lines() {
        let line = line.context("<stdin>").code(exit::BAD_INPUT)?;
        let Ok(t) = serde_json::from_str::<Try>(&line) else {
            // Not a try: a job's stray output, passed on as it is.
            println!("{line}");
            continue;
        };
        if let Some(path) = f.tries {
            results::append(path, &format!("{line}\n"))?;
        }
        let Some(d) = b.record(&t) else { continue };
        let name = b.name(&d.id);
        sweepkit::diag::line(format!(
            "sweep: warning: host {name}: dropped after {} failures ({}); its configs go to the other hosts",
            d.count, d.why
        ));
        let origin = format!("{}/origin-{}.jsonl", f.origins, d.id);
        let text = std::fs::read_to_string(&origin).unwrap_or_default();
        let reason = format!(
            "host {name} dropped after {} failures; last: {}",
            d.count, d.why
        );
        let rec = crate::origin::host_dropped(&text, &reason, SystemTime::now())
            .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("{origin}: {e}")))?;
        results::append_records(f.results, &[Record::Failure(rec)])?;
        write_slf(f.slf, &b.sshlogins())?;
    }
    Ok(())
}

/// Replace the sshlogin file whole (a new file renamed over it), so
/// parallel never reads half of one.
fn write_slf(path: &str, text: &str) -> Result<(), Exit> {
    let tmp = format!("{path}.new");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("{path}: cannot write"))
        .code(exit::FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use State as S;

    fn t(index: usize, host: &str, state: S, suspect: bool) -> Try {
        let (step, exit) = step(state, suspect, 0);
        Try {
            tag: "try".into(),
            index,
            label: format!("k={index}"),
            host: host.into(),
            state: format!("{state:?}").to_lowercase(),
            step: step.into(),
            exit,
        }
    }

    #[test]
    fn a_first_failure_moves_on_and_a_second_one_stands() {
        assert_eq!(step(S::Complete, true, 0), ("measured", 0));
        assert_eq!(step(S::Transport, false, 21), ("blame-host", 1));
        assert_eq!(step(S::Failed, false, 24), ("try-elsewhere", 1));
        assert_eq!(step(S::Failed, true, 24), ("config-failed", 0));
        assert_eq!(
            step(S::Failed, false, exit::PREFLIGHT_REJECTED),
            ("config-failed", 0)
        );
        assert_eq!(step(S::Incomplete, false, 130), ("interrupted", 130));
    }

    #[test]
    fn a_host_whose_configs_pass_elsewhere_is_dropped_once() {
        let hosts = ["1", "2", "3"].map(|i| Host {
            id: i.into(),
            name: format!("h{i}"),
        });
        let mut b = Blame::new(2, hosts.to_vec());
        assert_eq!(b.record(&t(1, "3", S::Failed, false)), None);
        assert_eq!(b.record(&t(1, "1", S::Complete, true)), None, "one charge");
        // A config failing everywhere is its own failure: no blame.
        assert_eq!(b.record(&t(2, "2", S::Failed, false)), None);
        assert_eq!(b.record(&t(2, "3", S::Failed, true)), None);
        assert_eq!(b.record(&t(4, "3", S::Failed, false)), None);
        let d = b.record(&t(4, "2", S::Complete, true)).unwrap();
        assert_eq!(d.id, "3");
        assert_eq!(d.count, 2);
        assert_eq!(d.why, "k=4 failed there, not on h2");
        assert!(b.sshlogins().contains("# dropped 3\n"));
        assert!(b.sshlogins().contains("1/1\n1/2\n"));
        // Dropped already: never a second record.
        assert_eq!(b.record(&t(5, "3", S::Transport, false)), None);
        assert!(parse_host("12=pct exec 1 --").is_ok());
        assert!(parse_host("a b=x").is_err() && parse_host("x").is_err());
    }

    #[test]
    fn the_pools_end_is_said_and_its_status_named() {
        let g = crate::grid::expand(&["k".into()], &["1,2".into()]).unwrap();
        let bench = |v: &str| format!(r#"{{"type":"bench","config":{{"k":"{v}"}}}}"#);
        let text = format!("{}\n{}\n", bench("1"), bench("2"));
        let e = End {
            joblog: "J",
            results: "R",
            ..End::default()
        };
        let mut o = outcome(&g, &text, 0);
        o.unstarted = 1;
        o.end(&e);
        assert_eq!(o.exit, exit::OK);
        assert_eq!(
            o.done.as_deref(),
            Some("done: 2 measured, 0 failed, 0 without a result, 0 host(s) dropped")
        );
        assert!(o.warning.unwrap().ends_with("(GNU parallel's joblog: J)"));
        assert!(o.error.is_none() && o.refusal.is_none());
        let mut o = outcome(&g, &text, 0);
        o.end(&End {
            interrupted: true,
            ..End::default()
        });
        assert_eq!(o.exit, exit::INTERRUPTED);
        let mut o = outcome(&g, &text, 0);
        (o.usage, o.exit) = (true, exit::USAGE);
        o.end(&End {
            interrupted: true,
            ..End::default()
        });
        assert_eq!(o.exit, exit::USAGE);
        assert!(o.error.unwrap().contains("rejected its arguments"));
        let mut o = outcome(&g, &text, 0);
        o.end(&End {
            interrupted: true,
            winner_refused: true,
            results: "R",
            ..End::default()
        });
        assert_eq!(o.exit, exit::RESTORE_FAILED);
        assert!(o.refusal.unwrap().contains("summarize --per-host R shows"));
    }

    #[test]
    fn the_outcome_counts_this_runs_drops() {
        let g = crate::grid::expand(&["k".into()], &["1,2".into()]).unwrap();
        let drop = r#"{"type":"failure","kind":"host_dropped","config":{}}"#;
        let text = format!("{drop}\n{drop}\n");
        let o = outcome(&g, &text, 1);
        assert_eq!((o.dropped, o.missing, o.exit), (1, 2, exit::NO_HOST_LEFT));
        let log = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n\
                   1\th1\t1.0\t0.5\t0\t0\t2\t0\tbash sweep.sh --values 2,3\n";
        assert!(joblog_usage(log));
        assert!(!joblog_usage(&log.replace("\t2\t0\t", "\t1\t0\t")));
        assert!(!joblog_usage(""));
    }

    #[test]
    fn jobs_that_ended_well_without_a_try_are_unstarted() {
        let head = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n";
        let row =
            |seq: u32, exit: u8| format!("{seq}\th1\t1.0\t0.5\t0\t0\t{exit}\t0\tbash sweep.sh\n");
        let log = format!("{head}{}{}{}", row(1, 0), row(2, 0), row(3, 1));
        let t = |exit: u8| {
            format!(
                r#"{{"type":"try","index":1,"label":"k=1","host":"h1","state":"complete","step":"measured","exit":{exit}}}"#
            )
        };
        assert_eq!(unstarted(&log, ""), 2);
        assert_eq!(unstarted(&log, &format!("{}\n{}\n", t(0), t(1))), 1);
        assert_eq!(unstarted(&log, &format!("{}\n{}\n", t(0), t(0))), 0);
        assert_eq!(unstarted("", &t(0)), 0);
    }

    /// Mixed hardware refusing --keep-winner was decided in the script:
    /// the outcome says whether the restores apply the winner.
    #[test]
    fn the_winner_is_kept_unless_the_hosts_differ() {
        let g = crate::grid::expand(&["k".into()], &["1".into()]).unwrap();
        let text = "{\"type\":\"bench\",\"config\":{\"k\":\"1\"}}\n";
        let mut o = outcome(&g, text, 0);
        o.end(&End {
            keep_winner: true,
            ..End::default()
        });
        assert!(o.keep_winner && o.refusal.is_none());
        assert_eq!(o.exit, exit::OK);
        let mut o = outcome(&g, text, 0);
        o.end(&End {
            keep_winner: true,
            winner_refused: true,
            ..End::default()
        });
        assert!(!o.keep_winner && o.refusal.is_some());
        assert_eq!(o.exit, exit::RESTORE_FAILED);
    }
}
