//! The engine command that re-creates a container with another command and
//! everything else as it was. Pure: no I/O.
//!
//! A container's command cannot be changed in place; it is re-created.
//! Two ways, most faithful first:
//! - podman keeps the argv that created the container in
//!   `Config.CreateCommand`. podman's own `generate systemd --new` re-creates
//!   containers by replaying it (`pkg/systemd/generate/containers.go`: find
//!   the first `run`/`create`, keep the root flags before it, enforce `-d`),
//!   so that is what svc-swap replays too, with the command words after the
//!   image replaced. It keeps what inspect does not show, e.g. the `:O` of
//!   `--rootfs /:O` (inspect's `Rootfs` reads `/`).
//! - Otherwise (Docker keeps no create command; a podman container made
//!   through the API has none) the `create` flags are written from inspect's
//!   `Config` and `HostConfig`, as rekcod and runlike do. `CARRIED` lists
//!   what is carried; after the create, svc-swap compares the two
//!   containers' inspect on those fields and warns about any difference.
//!
//! Either way the image is pinned to the old container's image ID, so a tag
//! that moved since (a newer `:latest` pulled) cannot slip in.

use serde_json::Value;

use super::inspect::Inspected;

/// How to bring the new container up.
#[derive(Debug, Clone, PartialEq)]
pub struct Recreate {
    /// The engine argv (`podman run -d ...` or `docker create ...`).
    pub argv: Vec<String>,
    /// True when `argv` starts the container itself (`run -d`).
    pub starts: bool,
    /// `create-command` or `inspect`: where the definition came from.
    pub source: &'static str,
}

/// The `create` flags the inspect route carries (also the fields compared
/// after the create).
pub const CARRIED: &[&str] = &[
    "Config.Env",
    "Config.Labels",
    "Config.WorkingDir",
    "Config.User",
    "Config.Tty",
    "Config.OpenStdin",
    "Config.StopSignal",
    "HostConfig.Binds",
    "HostConfig.Mounts",
    "HostConfig.PortBindings",
    "HostConfig.NetworkMode",
    "HostConfig.IpcMode",
    "HostConfig.PidMode",
    "HostConfig.ShmSize",
    "HostConfig.Runtime",
    "HostConfig.DeviceRequests",
    "HostConfig.Devices",
    "HostConfig.Privileged",
    "HostConfig.CapAdd",
    "HostConfig.SecurityOpt",
    "HostConfig.RestartPolicy",
    "HostConfig.Ulimits",
    "HostConfig.ExtraHosts",
    "HostConfig.Init",
    "HostConfig.Memory",
    "HostConfig.NanoCpus",
    "HostConfig.CpusetCpus",
    "HostConfig.AutoRemove",
];

/// Why a podman container's create command cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("container {name}: cannot re-create it from its Config.CreateCommand ({why}): {words}")]
pub struct CannotReplay {
    pub name: String,
    pub why: &'static str,
    /// The create command, its words joined by spaces.
    pub words: String,
}

/// The argv that re-creates `old` as `name` running `argv` (entrypoint
/// words unchanged, then the new command words).
pub fn recreate(engine: &str, old: &Inspected, cmd: &[String]) -> Result<Recreate, CannotReplay> {
    if !old.create_command.is_empty() {
        return replay(engine, old, cmd);
    }
    Ok(from_inspect(engine, old, cmd))
}

/// podman: `Config.CreateCommand` with the command after the image
/// replaced, the image pinned, `-d` and `--name` enforced.
fn replay(engine: &str, old: &Inspected, cmd: &[String]) -> Result<Recreate, CannotReplay> {
    let cc = &old.create_command;
    let bad = |why: &'static str| {
        Err(CannotReplay {
            name: old.name.clone(),
            why,
            words: cc.join(" "),
        })
    };
    let Some(sub) = cc.iter().position(|w| w == "run" || w == "create") else {
        return bad("no run or create in it");
    };
    let k = old.cmd().len();
    // The command words follow the image (or --rootfs's path); with no
    // command given the image is last and the image's CMD ran.
    let image_at = if k > 0 && cc.len() > sub + 1 + k && cc.ends_with(old.cmd()) {
        cc.len() - k - 1
    } else if cc.len() > sub + 1 && names_image(&cc[cc.len() - 1], old) {
        cc.len() - 1
    } else {
        return bad("its last words are neither the command nor the image");
    };
    let flags = &cc[sub + 1..image_at];
    let mut argv = vec![engine.to_string()];
    argv.extend(cc[1..=sub].iter().cloned());
    let starts = cc[sub] == "run";
    let detached = flags
        .iter()
        .any(|w| w == "-d" || w == "--detach" || w == "--detach=true");
    if starts && !detached {
        argv.push("-d".into());
    }
    if !flags
        .iter()
        .any(|w| w == "--name" || w.starts_with("--name="))
    {
        argv.extend(["--name".to_string(), old.name.clone()]);
    }
    argv.extend(flags.iter().cloned());
    argv.push(if old.image_id.is_empty() {
        cc[image_at].clone()
    } else {
        old.image_id.clone()
    });
    argv.extend(cmd.iter().cloned());
    Ok(Recreate {
        argv,
        starts,
        source: "create-command",
    })
}

/// True when `w` is how the create command named the container's image.
fn names_image(w: &str, old: &Inspected) -> bool {
    let n = old.image_name.as_str();
    !w.is_empty()
        && (w == n
            || n.ends_with(&format!("/{w}"))
            || n == format!("{w}:latest")
            || n.ends_with(&format!("/{w}:latest"))
            || old.image_id.trim_start_matches("sha256:").starts_with(w))
}

fn list<'a>(v: &'a Value, k: &str) -> impl Iterator<Item = &'a str> {
    v[k].as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `create` flags from inspect's Config and HostConfig (see `CARRIED`).
fn from_inspect(engine: &str, old: &Inspected, cmd: &[String]) -> Recreate {
    let c = &old.raw["Config"];
    let h = &old.raw["HostConfig"];
    let mut a: Vec<String> = vec![engine.into(), "create".into(), "--name".into()];
    a.push(old.name.clone());
    config_flags(c, &mut a);
    host_placement_flags(h, &mut a);
    host_resource_flags(h, &mut a);
    for (k, flag) in [
        ("Privileged", "--privileged"),
        ("Init", "--init"),
        ("AutoRemove", "--rm"),
    ] {
        if h[k].as_bool() == Some(true) {
            a.push(flag.into());
        }
    }
    for (k, flag) in [("Tty", "--tty"), ("OpenStdin", "--interactive")] {
        if c[k].as_bool() == Some(true) {
            a.push(flag.into());
        }
    }
    // Docker's --entrypoint takes one word: the entrypoint's others go
    // before the command (the process's argv is the same).
    let ep = &old.argv[..old.entrypoint_len];
    let mut words: Vec<String> = Vec::new();
    if let Some((first, rest)) = ep.split_first() {
        a.push("--entrypoint".into());
        a.push(first.clone());
        words.extend(rest.iter().cloned());
    }
    a.push(if old.image_id.is_empty() {
        old.image_name.clone()
    } else {
        old.image_id.clone()
    });
    words.extend(cmd.iter().cloned());
    a.extend(words);
    Recreate {
        argv: a,
        starts: false,
        source: "inspect",
    }
}

/// A flag and its value.
fn put(a: &mut Vec<String>, flag: &str, v: String) {
    a.push(flag.to_string());
    a.push(v);
}

/// Config's flags: environment, labels, working directory, user, stop
/// signal and timeout.
fn config_flags(c: &Value, a: &mut Vec<String>) {
    for e in list(c, "Env") {
        put(a, "--env", e.to_string());
    }
    if let Value::Object(m) = &c["Labels"] {
        for (k, v) in m {
            put(
                a,
                "--label",
                format!("{k}={}", v.as_str().unwrap_or_default()),
            );
        }
    }
    for (k, flag) in [("WorkingDir", "--workdir"), ("User", "--user")] {
        if let Some(v) = c[k].as_str().filter(|v| !v.is_empty()) {
            put(a, flag, v.to_string());
        }
    }
    if let Some(s) = c["StopSignal"].as_str().filter(|v| !v.is_empty()) {
        put(a, "--stop-signal", s.to_string());
    }
    if let Some(t) = c["StopTimeout"].as_u64() {
        put(a, "--stop-timeout", t.to_string());
    }
}

/// HostConfig's flags of where the container stands: volumes, mounts,
/// published ports, its network, IPC and PID namespaces, its runtime.
fn host_placement_flags(h: &Value, a: &mut Vec<String>) {
    for b in list(h, "Binds") {
        put(a, "--volume", b.to_string());
    }
    for m in h["Mounts"].as_array().into_iter().flatten() {
        put(a, "--mount", mount_spec(m));
    }
    if let Value::Object(ports) = &h["PortBindings"] {
        for (cport, binds) in ports {
            for b in binds.as_array().into_iter().flatten() {
                let ip = b["HostIp"].as_str().unwrap_or_default();
                let hp = b["HostPort"].as_str().unwrap_or_default();
                let spec = match (ip.is_empty(), hp.is_empty()) {
                    (true, true) => cport.clone(),
                    (true, false) => format!("{hp}:{cport}"),
                    (false, _) => format!("{ip}:{hp}:{cport}"),
                };
                put(a, "--publish", spec);
            }
        }
    }
    let mode = |k: &str, skip: &[&str]| {
        h[k].as_str()
            .filter(|v| !v.is_empty() && !skip.contains(v))
            .map(String::from)
    };
    if let Some(n) = mode("NetworkMode", &["default"]) {
        put(a, "--network", n);
    }
    if let Some(i) = mode("IpcMode", &["private", "shareable"]) {
        put(a, "--ipc", i);
    }
    if let Some(p) = mode("PidMode", &["private"]) {
        put(a, "--pid", p);
    }
    if let Some(r) = mode("Runtime", &["runc", "oci"]) {
        put(a, "--runtime", r);
    }
}

/// HostConfig's flags of what the container may use: shared memory, GPUs
/// and devices, capabilities, hosts, its restart policy and limits.
fn host_resource_flags(h: &Value, a: &mut Vec<String>) {
    // Docker's default /dev/shm is 64 MiB; inspect always reports a size.
    if let Some(s) = h["ShmSize"].as_u64().filter(|s| *s > 0 && *s != 67_108_864) {
        put(a, "--shm-size", format!("{s}b"));
    }
    for g in h["DeviceRequests"].as_array().into_iter().flatten() {
        put(a, "--gpus", gpus_spec(g));
    }
    for d in h["Devices"].as_array().into_iter().flatten() {
        let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
        put(
            a,
            "--device",
            format!(
                "{}:{}:{}",
                s("PathOnHost"),
                s("PathInContainer"),
                s("CgroupPermissions")
            ),
        );
    }
    for (k, flag) in [
        ("CapAdd", "--cap-add"),
        ("SecurityOpt", "--security-opt"),
        ("ExtraHosts", "--add-host"),
    ] {
        for v in list(h, k) {
            put(a, flag, v.to_string());
        }
    }
    let rp = &h["RestartPolicy"];
    match rp["Name"].as_str().unwrap_or_default() {
        "" | "no" => {}
        "on-failure" if rp["MaximumRetryCount"].as_u64().unwrap_or(0) > 0 => put(
            a,
            "--restart",
            format!("on-failure:{}", rp["MaximumRetryCount"]),
        ),
        n => put(a, "--restart", n.to_string()),
    }
    for u in h["Ulimits"].as_array().into_iter().flatten() {
        let name = u["Name"].as_str().unwrap_or_default().to_lowercase();
        let name = name.trim_start_matches("rlimit_");
        put(a, "--ulimit", format!("{name}={}:{}", u["Soft"], u["Hard"]));
    }
    if let Some(m) = h["Memory"].as_u64().filter(|m| *m > 0) {
        put(a, "--memory", format!("{m}b"));
    }
    if let Some(n) = h["NanoCpus"].as_u64().filter(|n| *n > 0) {
        put(a, "--cpus", format!("{}", n as f64 / 1e9));
    }
    if let Some(s) = h["CpusetCpus"].as_str().filter(|s| !s.is_empty()) {
        put(a, "--cpuset-cpus", s.to_string());
    }
}

/// `--mount` from a HostConfig.Mounts entry.
fn mount_spec(m: &Value) -> String {
    let s = |k: &str| m[k].as_str().unwrap_or_default();
    let mut spec = format!("type={},target={}", s("Type"), s("Target"));
    if !s("Source").is_empty() {
        spec.push_str(&format!(",source={}", s("Source")));
    }
    if m["ReadOnly"].as_bool() == Some(true) {
        spec.push_str(",readonly");
    }
    spec
}

/// `--gpus` from a HostConfig.DeviceRequests entry (Count -1 is `all`).
fn gpus_spec(g: &Value) -> String {
    let ids: Vec<&str> = list(g, "DeviceIDs").collect();
    if !ids.is_empty() {
        return format!("\"device={}\"", ids.join(","));
    }
    match g["Count"].as_i64() {
        Some(-1) | None => "all".into(),
        Some(n) => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::inspect::parse;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn podman_create_command_is_replayed_with_the_new_command() {
        let i = parse(r#"[{"Id":"ba85","Name":"sim","Path":"/bin/llm-sim","Args":["--port","1"],"Image":"",
          "Config":{"Cmd":["/bin/llm-sim","--port","1"],
          "CreateCommand":["/usr/bin/podman","--runtime","runc","run","--net=host","--rootfs","/:O","/bin/llm-sim","--port","1"]}}]"#).unwrap();
        let r = recreate(
            "podman",
            &i,
            &v(&["/bin/llm-sim", "--port", "1", "--x", "2"]),
        )
        .unwrap();
        assert_eq!(
            r.argv,
            v(&[
                "podman",
                "--runtime",
                "runc",
                "run",
                "-d",
                "--name",
                "sim",
                "--net=host",
                "--rootfs",
                "/:O",
                "/bin/llm-sim",
                "--port",
                "1",
                "--x",
                "2"
            ])
        );
        assert!(r.starts);
    }

    #[test]
    fn image_default_command_and_image_pinning() {
        // `podman create --name s docker.io/x/sglang` ran the image's CMD.
        let i = parse(
            r#"[{"Id":"c1","Name":"s","Path":"python3","Args":["-m","sglang.launch_server"],
          "Image":"sha256:feed","ImageName":"docker.io/x/sglang:latest",
          "Config":{"Cmd":["python3","-m","sglang.launch_server"],
          "CreateCommand":["podman","create","--name","s","x/sglang"]}}]"#,
        )
        .unwrap();
        let r = recreate("podman", &i, &v(&["python3", "-m", "x", "--a", "1"])).unwrap();
        assert_eq!(
            r.argv,
            v(&[
                "podman",
                "create",
                "--name",
                "s",
                "sha256:feed",
                "python3",
                "-m",
                "x",
                "--a",
                "1"
            ])
        );
        assert!(!r.starts);
        // A create command whose end is neither: refused, with the words.
        let mut j = i.clone();
        j.create_command = v(&["podman", "create", "--name", "s", "other"]);
        let e = recreate("podman", &j, &v(&["a"])).unwrap_err();
        assert_eq!(
            e.why,
            "its last words are neither the command nor the image"
        );
        let e = e.to_string();
        assert!(e.contains("CreateCommand") && e.contains("other"), "{e}");
    }

    /// The shape of `docker inspect` for vLLM's documented
    /// `docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:...
    /// --env HF_TOKEN -p 8000:8000 --ipc=host vllm/vllm-openai --model M`.
    #[test]
    fn docker_flags_from_inspect() {
        let i = parse(r#"[{"Id":"d1","Name":"/vllm","Path":"vllm","Args":["serve","--model","M"],
          "Image":"sha256:beef",
          "Config":{"Image":"vllm/vllm-openai:latest","Cmd":["--model","M"],"Entrypoint":["vllm","serve"],
            "Env":["HF_TOKEN=x","PATH=/usr/bin"],"Labels":{"a":"b"},"WorkingDir":"/w","StopTimeout":30},
          "HostConfig":{"Binds":["/root/.cache/huggingface:/root/.cache/huggingface"],
            "PortBindings":{"8000/tcp":[{"HostIp":"","HostPort":"8000"}]},"NetworkMode":"bridge",
            "IpcMode":"host","Runtime":"nvidia","ShmSize":67108864,
            "DeviceRequests":[{"Driver":"","Count":-1,"DeviceIDs":null,"Capabilities":[["gpu"]]}],
            "RestartPolicy":{"Name":"unless-stopped","MaximumRetryCount":0},
            "Ulimits":[{"Name":"memlock","Soft":-1,"Hard":-1}]}}]"#).unwrap();
        let r = recreate("docker", &i, &v(&["--model", "M", "--max-num-seqs", "8"])).unwrap();
        let s = r.argv.join(" ");
        assert_eq!(r.source, "inspect");
        for want in [
            "docker create --name vllm",
            "--env HF_TOKEN=x",
            "--label a=b",
            "--workdir /w",
            "--stop-timeout 30",
            "--volume /root/.cache/huggingface:/root/.cache/huggingface",
            "--publish 8000:8000/tcp",
            "--network bridge",
            "--ipc host",
            "--runtime nvidia",
            "--gpus all",
            "--restart unless-stopped",
            "--ulimit memlock=-1:-1",
            "--entrypoint vllm sha256:beef serve --model M --max-num-seqs 8",
        ] {
            assert!(s.contains(want), "{want} missing from {s}");
        }
        assert!(!s.contains("--shm-size"), "default shm left out: {s}");
    }

    #[test]
    fn gpu_requests() {
        let g: Value = serde_json::from_str(r#"{"Count":0,"DeviceIDs":["0","2"]}"#).unwrap();
        assert_eq!(gpus_spec(&g), "\"device=0,2\"");
        let g: Value = serde_json::from_str(r#"{"Count":2}"#).unwrap();
        assert_eq!(gpus_spec(&g), "2");
    }
}
