//! Once ready: describe the live server and check `--expect-config`
//! against the best source there is — the server's own report of its
//! arguments, else the live process's argument vector — and say which.

use std::time::Duration;

use serde_json::Value;
use sweepkit::records::{ConfigSource, ServerInfo};
use url::Url;

use crate::cli::ServerKind;
use crate::info::{self, ConfigExpect};
use crate::probe::RequestSpec;
use crate::watch::Place;

/// What was found about the live server.
pub struct Live {
    pub server: ServerInfo,
    /// Where the live config was read (the record's `config_source`).
    pub source: ConfigSource,
    /// One line per `--expect-config` that does not hold.
    pub mismatches: Vec<String>,
    /// One line per `--expect-config` value the server holds but does not
    /// use (see [`inert`]).
    pub warnings: Vec<String>,
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
    /// The watched container: its command comes from the engine's inspect
    /// (the server runs in the container's PID namespace).
    pub container: Option<&'a crate::watch::container::ContainerWatch>,
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
        let warnings = inert(a.configs, args);
        return Live {
            server,
            source: ConfigSource::ServerInfo,
            mismatches,
            warnings,
        };
    }
    let argv = match (a.container, a.pid) {
        (Some(c), _) => c.live_argv().map(|w| {
            let from = format!(
                "container {}'s command ({} inspect)",
                c.name,
                c.engine.cli()
            );
            (from, w, ConfigSource::Inspect)
        }),
        (None, Some(pid)) => crate::argv::read(pid, a.place).map(|w| {
            (
                format!("the command line of PID {pid}"),
                w,
                ConfigSource::Argv,
            )
        }),
        (None, None) => {
            Err("no process to read it from (give --pid, --unit or --container)".into())
        }
    };
    match argv {
        Ok((from, words, source)) => {
            let args = crate::argv::to_args(&words);
            let mismatches = a
                .configs
                .iter()
                .filter_map(|c| c.check(&args, &from))
                .collect();
            server.argv = Some(words);
            Live {
                server,
                source,
                mismatches,
                warnings: Vec::new(),
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
                source: ConfigSource::None,
                mismatches,
                warnings: Vec::new(),
            }
        }
    }
}

/// `--expect-config` keys whose value the server reports but does not act
/// on: a speculative knob (`speculative-num-steps=3`) while the report says
/// `speculative_algorithm: null`. SGLang keeps such flags in its
/// `ServerArgs` and serves with speculation off: `handle_speculative_decoding`
/// resolves nothing without an algorithm (sgl-project/sglang
/// `python/sglang/srt/arg_groups/speculative_hook.py`), so `/server_info`
/// says `speculative_num_steps: 3` beside `speculative_algorithm: null`
/// (SGLang 0.5.23, tests/fixtures/real/sglang/serve-steps-no-algorithm.json).
/// The check passes, yet such a config measures the same as no speculation.
/// Only the server's own report can say so: argv shows flags, not what the
/// server made of them.
pub fn inert(configs: &[ConfigExpect], args: &Value) -> Vec<String> {
    let algorithm = match args.get("speculative_algorithm") {
        Some(Value::Null) => "null",
        Some(Value::String(s)) if s.is_empty() => "empty",
        _ => return Vec::new(),
    };
    configs
        .iter()
        .filter(|c| {
            let name = c.name();
            name.starts_with("speculative_") && name != "speculative_algorithm"
        })
        .filter(|c| c.reported(args).is_some_and(|v| !v.is_null()))
        .map(|c| {
            format!(
                "{}={} is inert: the server reports speculative_algorithm {algorithm}, so \
                 speculation is off and this config measures the same as none; add \
                 --speculative-algorithm (EAGLE, EAGLE3, NGRAM, ...) for it to take effect",
                c.key, c.value
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expect(s: &[&str]) -> Vec<ConfigExpect> {
        s.iter().map(|s| ConfigExpect::parse(s).unwrap()).collect()
    }

    #[test]
    fn speculative_values_without_an_algorithm_are_inert() {
        // As SGLang 0.5.23 reports `--speculative-num-steps 3` alone.
        let off = json!({"speculative_algorithm": null, "speculative_num_steps": 3,
            "speculative_eagle_topk": null, "max_running_requests": null});
        let c = expect(&[
            "speculative-num-steps=3",
            "speculative_eagle_topk=null",
            "max-running-requests=null",
        ]);
        let w = inert(&c, &off);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("speculative-num-steps=3 is inert"),
            "{w:?}"
        );
        assert!(w[0].contains("--speculative-algorithm"), "{w:?}");
        // With an algorithm, or where the report has no such key (llama.cpp's
        // /props), nothing is said.
        let on = json!({"speculative_algorithm": "EAGLE", "speculative_num_steps": 3});
        assert!(inert(&c, &on).is_empty());
        assert!(inert(&c, &json!({"speculative_num_steps": 3})).is_empty());
        assert!(inert(&expect(&["speculative-algorithm=null"]), &off).is_empty());
    }
}
