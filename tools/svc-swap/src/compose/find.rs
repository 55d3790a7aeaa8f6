//! Where a Compose service lives on the far side: the compose tool for the
//! engine, the file's real path, and the service's container by the labels
//! both tools set (see `compose.rs`).

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::transport::Transport;

use crate::container::inspect::Inspected;
use crate::container::{self, Engine};
use crate::far_side;

pub const SERVICE_LABEL: &str = "com.docker.compose.service";
pub const PROJECT_LABEL: &str = "com.docker.compose.project";
pub const DIR_LABEL: &str = "com.docker.compose.project.working_dir";
pub const FILES_LABEL: &str = "com.docker.compose.project.config_files";

/// Which compose CLI goes with the engine, found on the far side: Docker
/// Compose v2 (`docker compose`, a CLI plugin) before the v1 binary;
/// podman-compose for podman.
const FIND_TOOL: &str = r#"case $1 in
  docker)
    if docker compose version >/dev/null 2>&1 </dev/null; then echo "docker compose"
    elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose
    fi ;;
  *) command -v podman-compose >/dev/null 2>&1 && echo podman-compose ;;
esac
exit 0"#;

pub fn find_tool(t: &dyn Transport, e: Engine) -> Result<Vec<String>, Exit> {
    let out = far_side::check(
        t,
        &["sh", "-c", FIND_TOOL, "sh", e.cli()],
        far_side::SHORT,
        exit::FAILURE,
    )?;
    let words: Vec<String> = out.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        let want = match e {
            Engine::Docker => "docker compose (or docker-compose)",
            Engine::Podman => "podman-compose",
        };
        return Err(Exit::new(
            exit::ENGINE_UNAVAILABLE,
            anyhow::anyhow!("--compose: {want} is not installed on {}", t.describe()),
        ));
    }
    Ok(words)
}

/// The absolute path of FILE on the far side.
pub fn resolve(t: &dyn Transport, file: &str) -> Result<String, Exit> {
    let out = far_side::run(t, &["realpath", "-e", "--", file], far_side::SHORT)?;
    let p = out.stdout_str().trim().to_string();
    if !out.success() || p.is_empty() {
        return Err(target_err(format!(
            "--compose {file}: no such file on {}",
            t.describe()
        )));
    }
    Ok(p)
}

/// The container of SERVICE whose project lives in DIR (one, not a scaled
/// set).
pub fn find_container(
    t: &dyn Transport,
    e: Engine,
    file: &str,
    dir: &str,
    service: &str,
) -> Result<Inspected, Exit> {
    let filter = format!("label={SERVICE_LABEL}={service}");
    let argv = [
        e.cli(),
        "ps",
        "-a",
        "--filter",
        &filter,
        "--format",
        "{{.Names}}",
    ];
    let out = far_side::run(t, &argv, far_side::SHORT)?;
    if !out.success() {
        // `ps` has no wrong argument here: it failed because the engine
        // did not answer, which says nothing of the config (exit 28, a
        // sweep retries), as `container::lookup` reports it.
        return Err(Exit::new(
            exit::ENGINE_UNAVAILABLE,
            anyhow::anyhow!(
                "--compose {file}: {} ps failed (the engine did not answer): {}",
                e.cli(),
                out.stderr_str().trim()
            ),
        ));
    }
    let mut found = Vec::new();
    let mut vanished = None;
    for n in out.stdout_str().lines().filter(|l| !l.trim().is_empty()) {
        // Another project's container of the same service name may be
        // removed between `ps` and `inspect`: not ours, so pass it by; if
        // none is found, that error is the one to report.
        let c = match container::inspect(t, e, n.trim()) {
            Ok(c) => c,
            Err(err) => {
                vanished.get_or_insert(err);
                continue;
            }
        };
        let Some(wd) = c.label(DIR_LABEL) else {
            continue;
        };
        // The tool may have recorded the directory through a symlink.
        if wd == dir || resolve(t, wd).ok().as_deref() == Some(dir) {
            found.push(c);
        }
    }
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 if vanished.is_some() => Err(vanished.expect("some")),
        0 => Err(target_err(format!(
            "--compose {file}: service {service} has no container ({} has none labelled {SERVICE_LABEL}={service} from {dir}); start it with `compose up -d {service}` first",
            e.cli()
        ))),
        n => Err(target_err(format!(
            "--compose {file}: service {service} has {n} containers (replicas); svc-swap swaps a service of one"
        ))),
    }
}

fn target_err(msg: String) -> Exit {
    Exit::new(exit::TARGET_ERROR, anyhow::anyhow!(msg))
}
