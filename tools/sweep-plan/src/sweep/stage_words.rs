//! Each tool's words for one target, from sweep's parsed options: svc-swap's
//! target (`--unit`/`--spec`, `--ssh` with its key options, `--exec-prefix`,
//! the pass-through words), wait-ready's URL, timeout and preset, loadgen's
//! URL and levels. A pool host (`--hosts`) is one target: its own SSH
//! destination, exec prefix and URL; a GPU slot also its own unit, spec or
//! container name.

use crate::hosts::Host;

/// Where the configs run: the SSH destination and exec prefix (`None`:
/// here, as given) and the server's URL.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target {
    pub ssh: Option<String>,
    pub exec_prefix: Option<String>,
    pub url: String,
    /// A GPU slot's own unit, spec or container name (in place of the
    /// options' one).
    pub own: Option<String>,
}

impl Target {
    /// A pool host's target (`-` is this machine).
    pub fn of_host(h: &Host) -> Target {
        Target {
            ssh: Some(h.dest.clone()).filter(|d| d != "-"),
            exec_prefix: Some(h.exec.clone()).filter(|e| !e.is_empty()),
            url: h.url.clone(),
            own: h.target.clone(),
        }
    }
}

/// What every config's stages share, less the tool names: as sweep.sh's
/// `target`, `ready` and `load` arrays.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stages {
    pub target: Vec<String>,
    pub ready: Vec<String>,
    pub load: Vec<String>,
}

/// The settings a target's words are built from (sweep's options).
#[derive(Debug, Clone, Default)]
pub struct Base<'a> {
    pub unit: Option<&'a str>,
    pub spec: Option<&'a str>,
    pub ssh_opts: &'a [String],
    pub swap_args: &'a [String],
    pub ready_timeout: &'a str,
    pub server: Option<&'a str>,
    pub ready_args: &'a [String],
    pub concurrency: Option<&'a str>,
    pub load_args: &'a [String],
}

fn given(o: Option<&str>) -> Option<&str> {
    o.filter(|s| !s.is_empty())
}

/// The three stages' shared words for target `t`.
pub fn stages<'a>(b: &Base<'a>, t: &'a Target) -> Stages {
    let w = |s: &str| s.to_string();
    let own = |o: Option<&'a str>| given(o).map(|x| t.own.as_deref().unwrap_or(x));
    let mut target = Vec::new();
    if let Some(u) = own(b.unit) {
        target.extend([w("--unit"), w(u)]);
    }
    if let Some(s) = own(b.spec) {
        target.extend([w("--spec"), w(s)]);
    }
    if let Some(d) = given(t.ssh.as_deref()) {
        target.extend([w("--ssh"), w(d)]);
        target.extend(b.ssh_opts.iter().cloned());
    }
    if let Some(e) = given(t.exec_prefix.as_deref()) {
        target.extend([w("--exec-prefix"), w(e)]);
    }
    target.extend(container(b.swap_args, t.own.as_deref()));
    let mut ready = vec![t.url.clone(), w("--timeout"), w(b.ready_timeout)];
    if let Some(s) = given(b.server) {
        ready.extend([w("--server"), w(s)]);
    }
    ready.extend(container(b.ready_args, t.own.as_deref()));
    let mut load = vec![w("--url"), t.url.clone()];
    if let Some(c) = given(b.concurrency) {
        load.extend([w("-c"), w(c)]);
    }
    load.extend(b.load_args.iter().cloned());
    Stages {
        target,
        ready,
        load,
    }
}

/// Pass-through `words` with `--container NAME` naming `own` instead.
fn container(words: &[String], own: Option<&str>) -> Vec<String> {
    let mut out = words.to_vec();
    if let Some(o) = own {
        for i in 1..out.len() {
            if out[i - 1] == "--container" {
                out[i] = o.to_string();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_a_target_of_its_own() {
        let b = Base {
            unit: Some("sim"),
            ssh_opts: &["--ssh-key".into(), "k".into()],
            ready_timeout: "10m",
            server: Some("vllm"),
            concurrency: Some("1,4"),
            ..Base::default()
        };
        let here = Target {
            url: "http://h:1".into(),
            exec_prefix: Some("pct exec 1 --".into()),
            ..Target::default()
        };
        let s = stages(&b, &here);
        assert_eq!(
            s.target,
            ["--unit", "sim", "--exec-prefix", "pct exec 1 --"]
        );
        assert_eq!(
            s.ready,
            ["http://h:1", "--timeout", "10m", "--server", "vllm"]
        );
        assert_eq!(s.load, ["--url", "http://h:1", "-c", "1,4"]);
        let far = Target {
            ssh: Some("root@g".into()),
            url: "u".into(),
            ..Target::default()
        };
        assert_eq!(
            stages(&b, &far).target,
            ["--unit", "sim", "--ssh", "root@g", "--ssh-key", "k"]
        );
        let slot = Target {
            own: Some("sim@1".into()),
            ..far
        };
        assert_eq!(stages(&b, &slot).target[..2], ["--unit", "sim@1"]);
        let words = ["--container".to_string(), "c-{slot}".into()];
        let b = Base {
            swap_args: &words,
            ready_args: &words,
            ..Base::default()
        };
        let s = stages(&b, &slot);
        assert_eq!(s.target, ["--ssh", "root@g", "--container", "sim@1"]);
        assert_eq!(s.ready[3..], ["--container", "sim@1"]);
    }
}
