//! The container's definition as svc-swap records it on the far side (one
//! JSON file per container, backed up at each swap like a unit file): the
//! command, the image and the engine commands a swap runs. Its diff is what
//! `--dry-run` prints; `--restore` reads the command back from the latest
//! backup. Env values are not written (they may be secrets; the engine keeps
//! them), nor are the command's secret values (`sealed.rs`: fingerprints,
//! filled back at restore). Also the check that a re-created container
//! equals the old one outside its command. Pure: no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::create::{Recreate, CARRIED};
use super::inspect::Inspected;
use super::sealed::seal;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Definition {
    pub engine: String,
    pub container: String,
    pub image: String,
    pub entrypoint: Vec<String>,
    /// Secret values sealed (`sealed.rs`).
    pub command: Vec<String>,
    /// The engine commands a swap to this definition runs, shell-quoted,
    /// env values left out.
    pub commands: Vec<String>,
}

/// The definition `old` would have with `cmd` as its command.
pub fn render(engine: &str, old: &Inspected, cmd: &[String], rc: &Recreate, stop_s: u64) -> String {
    let q = |w: &[String]| sweepkit::transport::shell_join(&masked(&seal(w)));
    let e = engine;
    let n = &old.name;
    let mut commands = vec![
        format!("{e} stop -t {stop_s} {n}"),
        format!("{e} rename {n} {n}.sweepkit-old-ID"),
        q(&rc.argv),
    ];
    if !rc.starts {
        commands.push(format!("{e} start {n}"));
    }
    commands.push(format!("{e} rename {n}.sweepkit-old-ID {n}.sweepkit-prev"));
    let d = Definition {
        engine: engine.into(),
        container: old.name.clone(),
        image: if old.image_name.is_empty() {
            old.image_id.clone()
        } else {
            old.image_name.clone()
        },
        entrypoint: seal(&old.argv[..old.entrypoint_len]),
        command: seal(cmd),
        commands,
    };
    let mut s = serde_json::to_string_pretty(&d).expect("definition serializes");
    s.push('\n');
    s
}

/// `--env K=V` words with the value left out (`--env K=…`).
fn masked(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut env_next = false;
    for w in argv {
        if env_next {
            out.push(mask(w));
            env_next = false;
            continue;
        }
        env_next = w == "-e" || w == "--env";
        match w.strip_prefix("--env=") {
            Some(kv) => out.push(format!("--env={}", mask(kv))),
            None => out.push(w.clone()),
        }
    }
    out
}

fn mask(kv: &str) -> String {
    match kv.split_once('=') {
        Some((k, _)) => format!("{k}=…"),
        None => kv.to_string(),
    }
}

pub fn parse(text: &str) -> Result<Definition, serde_json::Error> {
    serde_json::from_str(text)
}

/// Where the re-created container differs from the old one in what
/// `CARRIED` lists (Env compared as a set); one line each.
pub fn differences(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for path in CARRIED {
        let get = |v: &Value| {
            let mut cur = v;
            for p in path.split('.') {
                cur = &cur[p];
            }
            normal(cur)
        };
        let (a, b) = (get(old), get(new));
        if a != b {
            out.push(format!(
                "the re-created container differs in {path}: {} -> {}",
                shown(path, &a),
                shown(path, &b)
            ));
        }
    }
    out
}

/// Null, empty arrays and objects alike; arrays sorted (order of Env, Binds
/// and the like carries no meaning).
fn normal(v: &Value) -> Value {
    match v {
        Value::Array(a) if a.is_empty() => Value::Null,
        Value::Object(o) if o.is_empty() => Value::Null,
        Value::Array(a) => {
            let mut items: Vec<Value> = a.iter().map(normal).collect();
            items.sort_by_key(|x| x.to_string());
            Value::Array(items)
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), normal(v))).collect()),
        Value::Bool(false) => Value::Null,
        Value::String(s) if s.is_empty() => Value::Null,
        other => other.clone(),
    }
}

fn shown(path: &str, v: &Value) -> String {
    if path == "Config.Env" {
        return "(values not shown)".into();
    }
    let s = v.to_string();
    if s.chars().count() > 120 {
        format!("{}...", s.chars().take(117).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::inspect;

    #[test]
    fn definition_hides_env_values_and_round_trips() {
        let i = inspect::parse(
            r#"[{"Id":"x","Name":"s","Path":"/bin/sim","Args":["--a","1"],
          "Config":{"Cmd":["/bin/sim","--a","1"]}}]"#,
        )
        .unwrap();
        let rc = Recreate {
            argv: [
                "podman",
                "run",
                "-d",
                "-e",
                "HF_TOKEN=hf_secret",
                "--env=K=v",
                "/:O",
                "/bin/sim",
            ]
            .map(String::from)
            .to_vec(),
            starts: true,
            source: "create-command",
        };
        let mut rc = rc;
        rc.argv
            .extend(["--api-key", "sk-in-create"].map(String::from));
        let cmd: Vec<String> = ["/bin/sim", "--a", "2", "--api-key", "sk-in-cmd"]
            .map(String::from)
            .to_vec();
        let text = render("podman", &i, &cmd, &rc, 10);
        for secret in ["hf_secret", "K=v", "sk-in-create", "sk-in-cmd"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("HF_TOKEN=…"), "{text}");
        let d = parse(&text).unwrap();
        assert_eq!(d.command, seal(&cmd));
        assert_eq!(d.commands[0], "podman stop -t 10 s");
        assert!(
            !d.commands.iter().any(|c| c.contains(" start ")),
            "run -d starts it"
        );
    }

    #[test]
    fn differences_ignore_order_and_empties() {
        let a: Value = serde_json::from_str(
            r#"{"Config":{"Env":["A=1","B=2"],"Labels":null},"HostConfig":{"Binds":[],"Privileged":false,"ShmSize":100}}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"Config":{"Env":["B=2","A=1"],"Labels":{}},"HostConfig":{"ShmSize":200}}"#,
        )
        .unwrap();
        let d = differences(&a, &b);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("HostConfig.ShmSize: 100 -> 200"), "{d:?}");
        let c: Value = serde_json::from_str(r#"{"Config":{"Env":["A=9","B=2"]}}"#).unwrap();
        let d = differences(&a, &c);
        assert!(
            d.iter()
                .any(|l| l.contains("Config.Env: (values not shown)")),
            "{d:?}"
        );
    }
}
