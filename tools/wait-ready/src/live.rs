//! Once ready: describe the live server and check `--expect-config`
//! against the best source there is — the server's own report of its
//! arguments, else the live process's argument vector — and say which.

use std::time::Duration;

use sweepkit::records::ServerInfo;
use url::Url;

use crate::cli::ServerKind;
use crate::info::{self, ConfigExpect};
use crate::probe::RequestSpec;
use crate::watch::Place;

/// What was found about the live server.
pub struct Live {
    pub server: ServerInfo,
    /// `server_info`, `argv` or `none` (the record's `config_source`).
    pub source: &'static str,
    /// One line per `--expect-config` that does not hold.
    pub mismatches: Vec<String>,
}

/// Where the server is and what to check.
pub struct Ask<'a> {
    pub base: &'a Url,
    pub kind: Option<ServerKind>,
    pub req: &'a RequestSpec,
    pub configs: &'a [ConfigExpect],
    /// The server's process: `--pid`, the unit's MainPID, the swap record's.
    pub pid: Option<u32>,
    pub place: &'a Place,
}

/// Ask the server about itself and, when it reports no arguments, read
/// its process's `/proc/PID/cmdline` instead.
pub fn inspect(a: &Ask) -> Live {
    let mut server = info::fetch(a.base, a.kind, a.req, Duration::from_secs(2));
    if let Some(args) = &server.args {
        let mismatches = a
            .configs
            .iter()
            .filter_map(|c| c.check(args, "the server's report"))
            .collect();
        return Live {
            server,
            source: "server_info",
            mismatches,
        };
    }
    let argv = match a.pid {
        Some(pid) => crate::argv::read(pid, a.place).map(|w| (pid, w)),
        None => Err("no process to read it from (give --pid or --unit)".into()),
    };
    match argv {
        Ok((pid, words)) => {
            let args = crate::argv::to_args(&words);
            let from = format!("the command line of PID {pid}");
            let mismatches = a
                .configs
                .iter()
                .filter_map(|c| c.check(&args, &from))
                .collect();
            server.argv = Some(words);
            Live {
                server,
                source: "argv",
                mismatches,
            }
        }
        Err(why) => {
            let mismatches = if a.configs.is_empty() {
                Vec::new()
            } else {
                vec![format!(
                    "the server reports no arguments (no /server_info, \
                     /get_server_info or /props) and its command line could not be \
                     read: {why}"
                )]
            };
            Live {
                server,
                source: "none",
                mismatches,
            }
        }
    }
}
