//! Exit codes: a public contract shared by every sweepkit tool.
//!
//! Codes are unique across tools so that a shell script running a pipeline
//! can tell from `PIPESTATUS` alone which stage failed and how. Each tool's
//! man page lists the subset it uses in its EXIT STATUS section. How a tool
//! ends with one of them is [`Exit`] and [`finish`] (status.rs).

mod status;

pub use status::{finish, is_broken_pipe, Exit, WithCode};

/// Success.
pub const OK: u8 = 0;
/// A runtime failure not covered by a more specific code.
pub const FAILURE: u8 = 1;
/// Usage error: bad flags or flag values (clap also exits 2).
pub const USAGE: u8 = 2;
/// Bad input: malformed JSON, a record of the wrong kind, empty stdin.
pub const BAD_INPUT: u8 = 3;
/// The upstream record on stdin was a failure record; it was passed through.
pub const UPSTREAM_FAILED: u8 = 4;

// wait-ready outcomes.
/// wait-ready: the server crashed (process exited, unit failed).
pub const CRASHED: u8 = 10;
/// wait-ready: the service is in a restart loop.
pub const RESTART_LOOP: u8 = 11;
/// wait-ready: the target is unreachable with nothing to wait for.
pub const UNREACHABLE: u8 = 12;
/// wait-ready: ready, but the live config differs from `--expect-config`.
pub const CONFIG_MISMATCH: u8 = 13;
/// wait-ready: the server answers, but not at the probed path (HTTP 404 or
/// 405 for `--not-found-after`): probe its health path (`--server KIND`,
/// or a path in the URL). A loading server refuses or answers 503.
pub const NOT_FOUND: u8 = 14;
/// wait-ready/loadgen: the server answered HTTP 401 or 403: it wants an
/// API key, or refused the one sent. No retry changes that: set
/// SWEEPKIT_API_KEY (the message says which variables the tool reads).
pub const AUTH_REFUSED: u8 = 15;

// svc-swap outcomes.
/// svc-swap: unknown unit, unit without ExecStart, unreadable spec.
pub const TARGET_ERROR: u8 = 20;
/// svc-swap/wait-ready: SSH connect, authentication or host key failure.
pub const TRANSPORT_ERROR: u8 = 21;
/// svc-swap: the edit did not take (live ExecStart lacks the new values).
pub const NOT_APPLIED: u8 = 22;
/// svc-swap: the service did not stop cleanly (old PIDs or port remain).
pub const STOP_FAILED: u8 = 23;
/// svc-swap: the service did not start.
pub const START_FAILED: u8 = 24;
/// svc-swap: the new config never became ready; the old one was restored.
pub const ROLLED_BACK: u8 = 25;
/// svc-swap: pre-flight refused a config the server would reject at
/// start-up (SGLang's speculative flags); nothing was stopped or written.
pub const PREFLIGHT_REJECTED: u8 = 26;
/// svc-swap/wait-ready: the SSH client config (`~/.ssh/config`,
/// `--ssh-config`) is malformed or unusable; the message names FILE:LINE.
pub const SSH_CONFIG_ERROR: u8 = 27;
/// svc-swap/wait-ready: no usable container engine for `--container` or
/// `--compose`: the CLI (docker, podman, a compose tool) is not installed on
/// the far side, or its engine does not answer (a docker client without a
/// running daemon).
pub const ENGINE_UNAVAILABLE: u8 = 28;

/// svc-swap's exits that say nothing about the config: SSH connect,
/// authentication or a lost session (21), a container engine that did not
/// answer (28). A later try may well work: svc-swap's failure record says
/// class `transport`, and sweep-plan's end retries them.
pub fn is_transient(code: u8) -> bool {
    code == TRANSPORT_ERROR || code == ENGINE_UNAVAILABLE
}
/// svc-swap: a file given with `--set-file` (or a schedule's adaptive
/// config) arrived on the far side with another size or SHA-256 than the
/// local one; it was removed there and nothing was stopped.
pub const FILE_MISMATCH: u8 = 29;

// loadgen outcomes.
/// loadgen: every request of a level failed, or the server died mid-run.
pub const ALL_FAILED: u8 = 30;
/// loadgen: some requests failed (results were still written).
pub const SOME_FAILED: u8 = 31;

// scripts/sweep.sh outcomes (a shell script, but the table is one).
/// sweep.sh: some configs failed (their failure records are in the results).
pub const SOME_CONFIGS_FAILED: u8 = 40;
/// sweep.sh: every config failed.
pub const ALL_CONFIGS_FAILED: u8 = 41;
/// sweep.sh: the final restore (or --keep-winner apply) did not end ready.
pub const RESTORE_FAILED: u8 = 42;
/// sweep.sh --hosts: configs left unrun (every host was dropped).
pub const NO_HOST_LEFT: u8 = 43;
/// sweep.sh --hosts: GNU parallel is not installed.
pub const NO_PARALLEL: u8 = 44;
/// sweep.sh --hosts: a host was dropped (every config has a result).
pub const HOST_DROPPED: u8 = 45;
/// sweep.sh --slurm: sbatch refused the job (unknown partition, gres the
/// cluster lacks, a bad --sbatch-arg); its line is in a failure record
/// and nothing else was submitted.
pub const SUBMIT_REJECTED: u8 = 46;
/// sweep.sh --slurm: Slurm's client commands (sbatch, scontrol, scancel)
/// are not installed or cannot reach slurmctld.
pub const NO_SLURM: u8 = 47;

// sweep-plan outcomes (the sweep's decisions; `next` is the adaptive
// search's step).
/// sweep-plan next: the results file holds no records at all (not even the
/// origin record sweep(1) writes first).
pub const NEXT_EMPTY: u8 = 50;
/// sweep-plan next: records of another parameter set (a config without
/// the --param key, or with more than one varying parameter).
pub const NEXT_MIXED: u8 = 51;
/// sweep-plan next: a --values value is not a number, so the parameter
/// has no order to find a plateau along.
pub const NEXT_NOT_NUMERIC: u8 = 52;
/// sweep-plan restore: the origin file has no origin record, or one that
/// lacks a swept key (the results file is another sweep's).
pub const ORIGIN_MISSING: u8 = 53;
// summarize outcomes.
/// summarize: the results come from hosts of different hardware and one
/// pick (json, csv) was asked for without `--pool-hosts` or `--per-host`.
pub const MIXED_HARDWARE: u8 = 55;
/// summarize --schedule: the results cannot support a per-load schedule
/// (one level or one depth, a level where every config failed, picks
/// within noise everywhere, another parameter varying, speculation off
/// winning everywhere); the message says which, stdout stays empty.
pub const SCHEDULE_REFUSED: u8 = 56;
/// summarize: the results come from two or more workloads (prompts or
/// traces) and one pick (json, csv) was asked for without `--by workload`.
pub const MIXED_WORKLOADS: u8 = 57;
/// summarize --compare: the two runs cannot be compared at all: they share
/// no config x level, a metric asked for is in neither or one side's
/// records only, or --compare-by found other than two values; the message
/// names the file and what to give instead.
pub const COMPARE_REFUSED: u8 = 58;
/// summarize --compare --fail-on: a cell got worse beyond both a --fail-on
/// threshold and the noise (one line per regression on stderr); the
/// comparison itself was written.
pub const REGRESSION: u8 = 59;

/// timeout(1)'s code, used by wait-ready when the server is still loading.
pub const TIMEOUT: u8 = 124;
/// Interrupted by SIGINT/SIGTERM (128 + SIGINT).
pub const INTERRUPTED: u8 = 130;
