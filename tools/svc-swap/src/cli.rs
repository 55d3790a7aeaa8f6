//! svc-swap's flags (clap derive) and their translation into a request.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::time::parse_duration;
use sweepkit::transport_args::TransportArgs;

use crate::flags::Op;
use crate::request::Request;
use crate::target::Opts;

/// The name svc-swap's messages and records give it.
pub(crate) const TOOL: &str = "svc-swap";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Manager {
    /// A systemd service (--unit)
    Systemd,
    /// A server svc-swap supervises from a process spec (--spec)
    Process,
    /// A Docker or podman container (--container)
    Container,
    /// A Docker Compose or podman-compose service (--compose, --service)
    Compose,
}

/// Stop a service, edit its launch flags, restart it, and prove the edit took.
#[derive(Debug, Parser)]
#[command(
    name = "svc-swap",
    version,
    about,
    max_term_width = 79,
    after_help = "Writes one swap record (JSON line) on stdout, or a failure record.\n\
                  Exit codes: 20 target, 21 transport, 22 not applied, 23 stop,\n\
                  24 start, 25 rolled back, 26 refused by pre-flight,\n\
                  28 no container engine, 29 copied file mismatch.\n\
                  See svc-swap(1)."
)]
pub struct Args {
    /// systemd unit to swap (".service" is added when NAME has no suffix)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["spec", "container"])]
    pub unit: Option<String>,

    /// Container to swap: re-created with the edited command, the old one
    /// kept stopped as NAME.sweepkit-prev (see CONTAINERS in svc-swap(1))
    #[arg(long, value_name = "NAME", conflicts_with = "spec")]
    pub container: Option<String>,

    /// Compose file whose --service to swap: its command: is edited in the
    /// file (backed up), then `compose up -d --no-deps --force-recreate`
    #[arg(
        long,
        value_name = "FILE",
        requires = "service",
        conflicts_with_all = ["spec", "container", "unit"]
    )]
    pub compose: Option<String>,

    /// The service of --compose FILE to swap
    #[arg(long, value_name = "NAME", requires = "compose")]
    pub service: Option<String>,

    /// Container engine CLI on the far side (default: docker when its
    /// daemon answers, else podman)
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<crate::container::Engine>,

    /// Process spec of a server svc-swap supervises itself (no systemd);
    /// relative to the current directory; absolute with --ssh or
    /// --exec-prefix
    #[arg(long, value_name = "FILE")]
    pub spec: Option<String>,

    /// Service manager (default: systemd with --unit, process with --spec)
    #[arg(long, value_enum, value_name = "KIND")]
    pub manager: Option<Manager>,

    /// Set a launch flag (replace or add); FLAG alone makes a bare switch
    #[arg(long = "set", value_name = "FLAG=VALUE", allow_hyphen_values = true)]
    pub set: Vec<String>,

    /// Set FLAG to a copy of local file PATH on the far side (checked there
    /// by size and SHA-256; see FILES in svc-swap(1))
    #[arg(
        long = "set-file",
        value_name = "FLAG=PATH",
        allow_hyphen_values = true
    )]
    pub set_file: Vec<String>,

    /// Far-side directory for --set-file copies (default:
    /// /var/lib/sweepkit-swap/files; SPEC.sweepkit-files with --spec; with
    /// --container, required: a directory on one of its bind mounts)
    #[arg(long, value_name = "DIR")]
    pub file_dir: Option<String>,

    /// Remove a launch flag (and its value)
    #[arg(long = "unset", value_name = "FLAG", allow_hyphen_values = true)]
    pub unset: Vec<String>,

    /// Apply the config of a record from FILE or - (a summary's best_config,
    /// with its best_unset keys removed)
    #[arg(long, value_name = "FILE")]
    pub apply_from: Option<String>,

    /// Edit the unit file itself (timestamped backup) instead of a drop-in
    #[arg(long)]
    pub in_place: bool,

    /// Print the diff on stderr and a dry-run record; change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Put the previous config back (latest backup, or drop-in removal)
    #[arg(long, conflicts_with_all = ["set", "set_file", "unset", "apply_from"])]
    pub restore: bool,

    /// TCP port that must be free before the new instance starts
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// Wait until no old PID holds GPU memory (nvidia-smi)
    #[arg(long)]
    pub gpu: bool,

    /// SIGKILL the service's own PIDs when a graceful stop did not end them
    #[arg(long)]
    pub force_kill: bool,

    /// How long to wait for old PIDs, port and GPU after the stop
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "30s")]
    pub wait: Duration,

    /// Send SIGTERM again every DUR while the old server outlives it (a
    /// vLLM that is still loading loses the first); 0 never re-sends
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "5s")]
    pub resend_term_after: Duration,

    /// SIGTERM grace before SIGKILL (process spec; default TimeoutStopSec)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub stop_timeout: Option<Duration>,

    /// Bound on the start (systemctl start waits for ExecStartPost)
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10m")]
    pub start_timeout: Duration,

    /// After the start, run CMD with sh -c locally (e.g. 'wait-ready ...')
    #[arg(long, value_name = "CMD")]
    pub ready_cmd: Option<String>,

    /// Bound on --ready-cmd
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "15m")]
    pub ready_timeout: Duration,

    /// Restore and restart the old config when the new one fails to start
    /// or --ready-cmd fails (exit 25)
    #[arg(long)]
    pub rollback_on_fail: bool,

    /// Skip the pre-flight of SGLang's speculative flags (exit 26): let the
    /// server itself refuse a bad config, after its model load
    // Repeatable: sweep.sh adds it to its dry run and final restore, so a
    // `--swap-arg --no-preflight` of the user's must not be a usage error.
    #[arg(long, overrides_with = "no_preflight")]
    pub no_preflight: bool,

    /// Keep pre-flight notes off stderr: they stay in the swap record's
    /// preflight field (sweep says each one once per sweep)
    #[arg(long)]
    pub quiet_preflight: bool,

    /// The highest concurrency the server will serve: pre-flight's note of
    /// a request cap at or above N is left out (sweep gives its top level)
    #[arg(long, value_name = "N")]
    pub max_load: Option<u32>,

    /// Restart even when the live instance already runs the requested
    /// config (by default such a swap is a no-op, recorded as noop: true)
    #[arg(long)]
    pub force_restart: bool,

    /// Keep the newest N backups of the edited file, delete older ones
    /// (0 keeps all)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub keep_backups: u32,

    /// Follow swap job ID (a run that lost its session) to its end and
    /// write its record: which config runs now
    #[arg(long, value_name = "ID", conflicts_with_all = ["set", "set_file", "unset", "apply_from", "restore", "dry_run"])]
    pub reattach: Option<String>,

    #[command(flatten)]
    pub transport: TransportArgs,
}

impl Args {
    /// The manager asked for, checked against --unit / --spec.
    pub fn manager(&self) -> Result<Manager, Exit> {
        let usage = |m: &str| Err(Exit::new(exit::USAGE, anyhow::anyhow!("{m}")));
        if self.engine.is_some() && self.container.is_none() && self.compose.is_none() {
            return usage("--engine goes with --container NAME or --compose FILE");
        }
        if self.compose.is_some() {
            return match self.manager {
                None | Some(Manager::Compose) if !self.in_place => Ok(Manager::Compose),
                None | Some(Manager::Compose) => {
                    usage("--in-place edits a unit file; --compose edits the Compose file")
                }
                Some(_) => usage("--compose FILE takes --manager compose (or none)"),
            };
        }
        if self.container.is_some() {
            return match self.manager {
                None | Some(Manager::Container) if !self.in_place => Ok(Manager::Container),
                None | Some(Manager::Container) => {
                    usage("--in-place edits a unit file; a container is re-created")
                }
                Some(_) => usage("--container NAME takes --manager container (or none)"),
            };
        }
        match (self.manager, &self.unit, &self.spec) {
            (None | Some(Manager::Systemd), Some(_), None) => Ok(Manager::Systemd),
            (None | Some(Manager::Process), None, Some(_)) => Ok(Manager::Process),
            (Some(Manager::Process), Some(_), _) => {
                usage("--manager process takes --spec FILE, not --unit")
            }
            (Some(Manager::Systemd), _, Some(_)) => {
                usage("--manager systemd takes --unit NAME, not --spec")
            }
            _ => usage(
                "give --unit NAME (systemd), --spec FILE (process manager), --container NAME \
                 or --compose FILE --service NAME",
            ),
        }
    }

    /// Make a relative `--spec` absolute against the current directory,
    /// so the record, the far-side job (whose working directory is not
    /// ours) and a later `--restore`/`--reattach` all name the same file.
    /// Through --ssh or --exec-prefix a relative path would mean the far
    /// side's working directory (the SSH login directory, whatever the
    /// prefix starts in), which the caller cannot see: refused.
    pub fn resolve_spec(&mut self) -> Result<(), Exit> {
        let Some(spec) = self.spec.as_deref() else {
            return Ok(());
        };
        if spec.starts_with('/') {
            return Ok(());
        }
        if self.transport.is_remote() || self.transport.exec_prefix.is_some() {
            return Err(Exit::new(
                exit::USAGE,
                anyhow::anyhow!(
                    "--spec {spec}: give an absolute path with --ssh or --exec-prefix \
                     (a relative one would name a file in the far side's working directory)"
                ),
            ));
        }
        let cwd = std::env::current_dir().map_err(|e| {
            Exit::new(
                exit::TARGET_ERROR,
                anyhow::anyhow!("--spec {spec}: cannot read the current directory: {e}"),
            )
        })?;
        let abs = cwd.join(spec);
        let abs = abs.to_str().ok_or_else(|| {
            Exit::new(
                exit::TARGET_ERROR,
                anyhow::anyhow!("--spec {spec}: {} is not UTF-8", abs.display()),
            )
        })?;
        self.spec = Some(abs.to_string());
        Ok(())
    }

    pub fn request(&self, ops: Vec<Op>) -> Request {
        Request {
            ops,
            restore: self.restore,
            in_place: self.in_place,
            dry_run: self.dry_run,
            opts: Opts {
                force_kill: self.force_kill,
                port: self.port,
                gpu: self.gpu,
                wait: self.wait,
                stop_timeout: self.stop_timeout,
                start_timeout: self.start_timeout,
                resend_term: self.resend_term_after,
            },
            ready_cmd: self.ready_cmd.clone(),
            ready_timeout: self.ready_timeout,
            rollback_on_fail: self.rollback_on_fail,
            force_restart: self.force_restart,
            keep_backups: self.keep_backups,
            transport: self.transport.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    testkit::cli_tests!(Args);

    #[test]
    fn help_lines_fit_79_columns() {
        let help = Args::command().render_long_help().to_string();
        for l in help.lines() {
            assert!(l.chars().count() <= 79, "too long: {l}");
        }
    }

    #[test]
    fn manager_is_inferred_and_checked() {
        let p = |a: &[&str]| Args::try_parse_from([&["svc-swap"], a].concat()).unwrap();
        assert_eq!(p(&["--unit", "x"]).manager().unwrap(), Manager::Systemd);
        assert_eq!(p(&["--spec", "x"]).manager().unwrap(), Manager::Process);
        assert_eq!(p(&[]).manager().unwrap_err().code, exit::USAGE);
        assert_eq!(
            p(&["--manager", "process", "--unit", "x"])
                .manager()
                .unwrap_err()
                .code,
            exit::USAGE
        );
        assert!(
            Args::try_parse_from(["svc-swap", "--unit", "x", "--restore", "--set", "a=1"]).is_err()
        );
        // A relative --spec: against the cwd here, refused on a far side.
        let mut a = p(&["--spec", "d/s.spec"]);
        a.resolve_spec().unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(a.spec, cwd.join("d/s.spec").to_str().map(String::from));
        let mut a = p(&["--spec", "s.spec", "--exec-prefix", "pct exec 1 --"]);
        assert_eq!(a.resolve_spec().unwrap_err().code, exit::USAGE);
        let mut a = p(&["--spec", "/abs/s.spec", "--ssh", "u@h"]);
        a.resolve_spec().unwrap();
        assert_eq!(a.spec.as_deref(), Some("/abs/s.spec"));
        // --compose: its own manager; --service goes with it.
        let a = p(&[
            "--compose",
            "c.yaml",
            "--service",
            "s",
            "--engine",
            "podman",
        ]);
        assert_eq!(a.manager().unwrap(), Manager::Compose);
        assert!(Args::try_parse_from(["svc-swap", "--service", "s"]).is_err());
        assert!(Args::try_parse_from(["svc-swap", "--compose", "c.yaml"]).is_err());
        let a = p(&["--compose", "c.yaml", "--service", "s", "--in-place"]);
        assert_eq!(a.manager().unwrap_err().code, exit::USAGE);
        let a = p(&["--unit", "x", "--set", "--port=1", "--unset", "-c"]);
        assert_eq!((a.set[0].as_str(), a.unset[0].as_str()), ("--port=1", "-c"));
    }
}
