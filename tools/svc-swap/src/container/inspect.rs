//! A container's definition as `docker|podman container inspect` reports
//! it, read into what svc-swap needs: the argv and where its command
//! (`Config.Cmd`) begins after the entrypoint, the image, the state, the
//! stop timeout and the create command podman keeps. Pure: no I/O.
//!
//! Both engines report `Path` (argv[0]) and `Args` (the rest) for the
//! process the container runs, and `Config.Cmd` as an array (Docker Engine
//! API `ContainerInspectResponse`; podman's docker-compatible inspect,
//! `libpod/define/container_inspect.go`). `Config.Entrypoint` is an array in
//! Docker but a string in podman 4 (seen here: `"Entrypoint": ""` on podman
//! 4.3.1), so the entrypoint is taken as the argv minus its trailing
//! `Config.Cmd`, the same on both.

use serde_json::Value;

/// What one inspect says about a container.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Inspected {
    pub id: String,
    /// Without Docker's leading `/`.
    pub name: String,
    /// The process the container runs: entrypoint words, then command words.
    pub argv: Vec<String>,
    /// How many of `argv`'s words are the entrypoint (the rest is Cmd).
    pub entrypoint_len: usize,
    pub running: bool,
    /// `running`, `exited`, `created`, `restarting`, ...
    pub status: String,
    /// Host PID of the container's first process (0 when not running).
    pub pid: u32,
    pub exit_code: i64,
    pub oom_killed: bool,
    pub restarting: bool,
    pub restart_count: u64,
    /// `Image`: the image ID (empty for podman's `--rootfs`).
    pub image_id: String,
    /// The image as named at create time (Docker `Config.Image`, podman
    /// `ImageName`); empty for `--rootfs`.
    pub image_name: String,
    /// podman's `ImageDigest` (Docker reports digests on the image only).
    pub image_digest: Option<String>,
    /// Seconds `stop` waits before SIGKILL (Docker's default 10 when unset).
    pub stop_timeout: u64,
    /// podman's `Config.CreateCommand`: the argv that created it.
    pub create_command: Vec<String>,
    /// Removed by the engine once stopped (`--rm`).
    pub auto_remove: bool,
    pub labels: Vec<(String, String)>,
    /// The whole inspect object, for the generic re-create (`create.rs`).
    pub raw: Value,
}

impl Inspected {
    /// The command words (Config.Cmd).
    pub fn cmd(&self) -> &[String] {
        &self.argv[self.entrypoint_len..]
    }
    /// The server's command line: `argv` from [`line_from`] on.
    pub fn server_argv(&self) -> &[String] {
        &self.argv[line_from(&self.argv, self.entrypoint_len)..]
    }
    /// The entrypoint's words after [`line_from`] (before the command).
    pub fn server_entrypoint(&self) -> &[String] {
        &self.argv[line_from(&self.argv, self.entrypoint_len)..self.entrypoint_len]
    }
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.as_str())
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

fn text(v: &Value, path: &[&str]) -> String {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().unwrap_or_default().to_string()
}

/// Why the engine's inspect output does not describe one container.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error("inspect output: {0}")]
    NotJson(serde_json::Error),
    #[error("inspect gave {0} objects, not one")]
    NotOne(usize),
}

/// Parse the output of `ENGINE container inspect NAME` (a JSON array of one
/// object).
pub fn parse(json: &str) -> Result<Inspected, InspectError> {
    let v: Value = serde_json::from_str(json).map_err(InspectError::NotJson)?;
    let c = match &v {
        Value::Array(a) if a.len() == 1 => a[0].clone(),
        Value::Array(a) => return Err(InspectError::NotOne(a.len())),
        other => other.clone(),
    };
    let path = text(&c, &["Path"]);
    let mut argv: Vec<String> = Vec::new();
    if !path.is_empty() {
        argv.push(path);
        argv.extend(strings(&c["Args"]));
    }
    let cmd = strings(&c["Config"]["Cmd"]);
    let entrypoint_len = if argv.ends_with(&cmd) {
        argv.len() - cmd.len()
    } else {
        // Not expected from either engine; keep Cmd as the editable part
        // only when argv says nothing.
        if argv.is_empty() {
            argv = cmd.clone();
            0
        } else {
            argv.len()
        }
    };
    let st = &c["State"];
    let config = &c["Config"];
    let labels = match &config["Labels"] {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        _ => Vec::new(),
    };
    let annotation = |k: &str| config["Annotations"][k].as_str().unwrap_or_default();
    let image_name = match text(&c, &["ImageName"]) {
        n if !n.is_empty() => n,
        _ => text(config, &["Image"]),
    };
    Ok(Inspected {
        id: text(&c, &["Id"]),
        name: text(&c, &["Name"]).trim_start_matches('/').to_string(),
        argv,
        entrypoint_len,
        running: st["Running"].as_bool().unwrap_or(false),
        status: text(st, &["Status"]),
        pid: st["Pid"].as_u64().unwrap_or(0) as u32,
        exit_code: st["ExitCode"].as_i64().unwrap_or(0),
        oom_killed: st["OOMKilled"].as_bool().unwrap_or(false),
        restarting: st["Restarting"].as_bool().unwrap_or(false),
        restart_count: c["RestartCount"].as_u64().unwrap_or(0),
        image_id: text(&c, &["Image"]),
        image_name,
        image_digest: Some(text(&c, &["ImageDigest"])).filter(|d| !d.is_empty()),
        stop_timeout: config["StopTimeout"].as_u64().unwrap_or(10),
        create_command: strings(&config["CreateCommand"]),
        auto_remove: c["HostConfig"]["AutoRemove"].as_bool().unwrap_or(false)
            || annotation("io.podman.annotations.autoremove") == "TRUE",
        labels,
        raw: c,
    })
}

/// Where the server's own command line begins in `argv`: after an init's
/// entrypoint that ends in `--` (podman's `--init` runs
/// `/run/podman-init -- CMD`; images often have `ENTRYPOINT ["tini",
/// "--"]` or dumb-init's), since its flags are the server's and a scan for
/// flags stops at `--`, when a command follows; else 0, the whole argv.
pub fn line_from(argv: &[String], entrypoint_len: usize) -> usize {
    let ends_in_dashes = entrypoint_len > 0 && argv[entrypoint_len - 1] == "--";
    if ends_in_dashes && argv.len() > entrypoint_len {
        entrypoint_len
    } else {
        0
    }
}

/// Host PIDs from `podman top NAME hpid` or `docker top NAME -eo pid`:
/// a header line, then one PID a line.
pub fn top_pids(out: &str) -> Vec<u32> {
    out.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trimmed from `podman container inspect` of a `--rootfs` container on
    /// podman 4.3.1 here.
    const PODMAN: &str = r#"[{"Id":"ba85","Name":"t25a","Path":"/bin/llm-sim",
      "Args":["--port","18725"],"Image":"","ImageName":"","ImageDigest":"",
      "RestartCount":0,
      "State":{"Status":"running","Running":true,"Pid":32548,"ExitCode":0,"OOMKilled":false},
      "Config":{"Cmd":["/bin/llm-sim","--port","18725"],"Entrypoint":"","StopTimeout":10,
        "Annotations":{"io.podman.annotations.autoremove":"FALSE"},
        "CreateCommand":["podman","--runtime","runc","run","-d","--name","t25a","--rootfs","/:O","/bin/llm-sim","--port","18725"]},
      "HostConfig":{"NetworkMode":"host"}}]"#;

    #[test]
    fn podman_rootfs_container() {
        let i = parse(PODMAN).unwrap();
        assert_eq!(i.argv, ["/bin/llm-sim", "--port", "18725"]);
        assert_eq!(i.entrypoint_len, 0);
        assert_eq!(i.cmd().len(), 3);
        assert!(i.running && !i.auto_remove);
        assert_eq!((i.pid, i.stop_timeout), (32548, 10));
        assert_eq!(i.create_command[3], "run");
        assert_eq!(i.image_digest, None);
    }

    /// Docker's shape: leading `/` in Name, Entrypoint an array, the
    /// entrypoint's words in Path/Args before Cmd.
    #[test]
    fn docker_entrypoint_and_cmd() {
        let d = r#"[{"Id":"abc","Name":"/vllm","Path":"vllm","Args":["serve","--model","m"],
          "Image":"sha256:1","State":{"Status":"exited","Running":false,"Pid":0,"ExitCode":137,"OOMKilled":true},
          "Config":{"Image":"vllm/vllm-openai:latest","Cmd":["--model","m"],"Entrypoint":["vllm","serve"],
            "Labels":{"com.docker.compose.service":"vllm"}},
          "HostConfig":{"AutoRemove":true}}]"#;
        let i = parse(d).unwrap();
        assert_eq!(i.name, "vllm");
        assert_eq!(i.entrypoint_len, 2);
        assert_eq!(i.cmd(), ["--model", "m"]);
        assert_eq!(i.image_name, "vllm/vllm-openai:latest");
        assert!(i.oom_killed && i.auto_remove && !i.running);
        assert_eq!(i.label("com.docker.compose.service"), Some("vllm"));
    }

    /// `podman run --init` (podman 4.3.1 here): podman runs its init with
    /// `--` before the command, while `Config.Entrypoint` stays empty; an
    /// image's own `ENTRYPOINT ["tini", "--"]` looks the same. The server's
    /// command line, whose flags svc-swap edits, starts after the `--`;
    /// an entrypoint such as `vllm serve` stays part of it.
    #[test]
    fn an_init_entrypoint_ending_in_dashes_is_not_the_servers_line() {
        let d = r#"[{"Id":"i1","Name":"s","Path":"/run/podman-init",
          "Args":["--","/bin/llm-sim","--port","1"],
          "State":{"Running":true,"Pid":7},
          "Config":{"Cmd":["/bin/llm-sim","--port","1"],"Entrypoint":""},
          "HostConfig":{"Init":true}}]"#;
        let i = parse(d).unwrap();
        assert_eq!((i.entrypoint_len, line_from(&i.argv, 2)), (2, 2));
        assert_eq!(i.server_argv(), ["/bin/llm-sim", "--port", "1"]);
        assert!(i.server_entrypoint().is_empty());
        assert_eq!(i.cmd(), i.server_argv());
        let argv = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(line_from(&argv(&["tini", "--", "srv", "-p", "1"]), 2), 2);
        // An entrypoint that is the server, or `--` with nothing after it.
        assert_eq!(line_from(&argv(&["vllm", "serve", "--model", "m"]), 2), 0);
        assert_eq!(line_from(&argv(&["tini", "--"]), 2), 0);
    }

    #[test]
    fn bad_inspect_output() {
        assert!(parse("[]").unwrap_err().to_string().contains("0 objects"));
        assert!(parse("not json").is_err());
    }

    #[test]
    fn top_output() {
        assert_eq!(top_pids("HPID\n4242\n4250\n"), [4242, 4250]);
        assert_eq!(top_pids("PID\n  17 \n"), [17]);
        assert!(top_pids("").is_empty());
    }
}
