//! The command transport svc-swap and wait-ready share: every action on the
//! far side is an argv run through one `Transport` (local, through a command
//! prefix like `pct exec 129 --`, or over SSH). Argvs are never spliced into a
//! shell string unquoted: where a shell is unavoidable (SSH), each word is
//! single-quoted by `shell_quote`.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a far-side command produced.
#[derive(Debug, Clone, Default)]
pub struct CmdOutput {
    /// Exit status; `None` when killed by a signal or the status was lost.
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Why a transport could not run a command (not: the command failed).
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot run {program}: {err}")]
    Spawn {
        program: String,
        err: std::io::Error,
    },
    #[error("command timed out after {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Connect(String),
    #[error("{0}")]
    Auth(String),
    #[error("host key: {0}")]
    HostKey(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The SSH client config (`~/.ssh/config`, `--ssh-config`) is
    /// malformed or names something impossible; says FILE:LINE.
    #[error("{0}")]
    Config(String),
    /// The host name does not resolve (a typo more often than a blip, so
    /// not retried, as ssh's ConnectionAttempts does not).
    #[error("{0}")]
    Resolve(String),
}

impl TransportError {
    /// True for faults of the network or the far side's sshd (refused,
    /// reset, timed-out connects; a session lost mid-command): trying again
    /// later may succeed, and a record should say `transport` rather than
    /// blame the config under test. Authentication, host keys, a bad ssh
    /// config, an unresolvable name, a command's own timeout and a program
    /// that cannot be spawned are permanent.
    pub fn is_transient(&self) -> bool {
        matches!(self, TransportError::Connect(_) | TransportError::Io(_))
    }

    /// The exit code a tool ends with when this stops it: SSH_CONFIG_ERROR
    /// for a bad ssh config, else TRANSPORT_ERROR.
    pub fn exit_code(&self) -> u8 {
        match self {
            TransportError::Config(_) => crate::exit::SSH_CONFIG_ERROR,
            _ => crate::exit::TRANSPORT_ERROR,
        }
    }
}

/// A byte stream to a TCP port on the far side.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// Runs argvs on the far side.
pub trait Transport: Send + Sync {
    /// Run `argv` with optional stdin bytes; bounded by `timeout`.
    fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError>;

    /// As `run`, for a command that is safe to run twice (a read, a check,
    /// an edit that converges): if the session is lost while it runs, the
    /// transport reconnects within its retry budget and runs it again.
    /// `run` never re-runs a command that may have started.
    fn run_idempotent(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError> {
        self.run(argv, stdin, timeout)
    }

    /// A short description for messages and records (`local`, `ssh root@gpu1`).
    fn describe(&self) -> String;

    /// Open a TCP stream to `host:port` as seen from the far side.
    fn connect_tcp(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Box<dyn Stream>, TransportError> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| TransportError::Connect(format!("{host}: {e}")))?
            .next()
            .ok_or_else(|| TransportError::Connect(format!("{host}: no address")))?;
        let s = std::net::TcpStream::connect_timeout(&addr, timeout)?;
        Ok(Box::new(s))
    }

    /// A local address that reaches `host:port` as seen from the far side,
    /// for HTTP clients: the address itself here; over SSH a listener on
    /// 127.0.0.1 whose connections are tunnelled (direct-tcpip).
    fn forward(&self, host: &str, port: u16) -> Result<std::net::SocketAddr, TransportError> {
        std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| TransportError::Connect(format!("{host}: {e}")))?
            .next()
            .ok_or_else(|| TransportError::Connect(format!("{host}: no address")))
    }

    /// Write `contents` to `path` atomically: a temp file beside it, then
    /// `mv -f` onto it, so a reader (or a kill) sees the old or the new file.
    /// The temp file is moved only when every byte arrived: a writer killed
    /// mid-transfer gives `cat` an early EOF, and a truncated file must not
    /// replace the real one; the temp file is removed then, and on a hang-up
    /// or broken pipe (the session dropped). The old file's permissions are
    /// kept. Writing the same bytes twice converges, so it is run as
    /// idempotent: over SSH a session lost mid-write is written again
    /// within the retry budget. A transport failure keeps its class
    /// (`WriteError::Transport`), so a tool ends with the transport code.
    fn write_file(&self, path: &str, contents: &[u8], timeout: Duration) -> Result<(), WriteError> {
        write_with(self, path, contents, timeout, "keep")
    }

    /// As `write_file`, for a file only its owner may read: mode 0600 from
    /// its first byte (umask 077; it may hold a server's secrets, such as a
    /// command's `--api-key`), its directory created; copies made with
    /// `cp -p` keep the mode.
    fn write_private_file(
        &self,
        path: &str,
        contents: &[u8],
        timeout: Duration,
    ) -> Result<(), WriteError> {
        write_with(self, path, contents, timeout, "private")
    }
}

/// `write_file` and `write_private_file`: `mode` is `keep` (the old
/// file's permissions) or `private`.
fn write_with<T: Transport + ?Sized>(
    t: &T,
    path: &str,
    contents: &[u8],
    timeout: Duration,
    mode: &str,
) -> Result<(), WriteError> {
    let len = contents.len().to_string();
    let argv = ["sh", "-c", WRITE_SCRIPT, "sh", path, &len, mode].map(String::from);
    let out = t
        .run_idempotent(&argv, Some(contents), timeout)
        .map_err(|err| WriteError::Transport {
            path: path.to_string(),
            err,
        })?;
    if out.success() {
        return Ok(());
    }
    let msg = out.stderr_str();
    let msg: Vec<&str> = msg
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Err(WriteError::Refused {
        path: path.to_string(),
        msg: match out.status {
            _ if !msg.is_empty() => msg.join("; "),
            Some(rc) => format!("exit {rc}"),
            None => "killed by a signal".into(),
        },
    })
}

/// `write_file`'s far-side script: every value a positional parameter
/// (`$1` the path, `$2` the byte count, `$3` keep or private), never
/// spliced into shell text.
const WRITE_SCRIPT: &str = r#"t="$1.sweepkit-tmp.$$"
trap 'rm -f -- "$t"; exit 1' HUP INT TERM PIPE
if [ "$3" = private ]; then
  umask 077
  case $1 in */*) mkdir -p -- "${1%/*}" || exit 1 ;; esac
fi
cat > "$t" || { rm -f -- "$t"; exit 1; }
if [ "$3" = private ]; then chmod 600 -- "$t"
elif [ -e "$1" ]; then chmod --reference="$1" -- "$t" 2>/dev/null; fi
n=$(wc -c < "$t")
if [ "$n" -ne "$2" ]; then rm -f -- "$t"; echo "short write: $n of $2 bytes" >&2; exit 1; fi
mv -f -- "$t" "$1" || { rm -f -- "$t"; exit 1; }"#;

/// Why `Transport::write_file` left the file as it was.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The transport failed (a lost session, a refused connect): its
    /// class is kept, so a tool exits with the transport code.
    #[error("writing {path}: {err}")]
    Transport { path: String, err: TransportError },
    /// The far side ran the write and refused it (no such directory, no
    /// permission, a short write); one line.
    #[error("writing {path}: {msg}")]
    Refused { path: String, msg: String },
}

impl WriteError {
    /// TRANSPORT_ERROR (or SSH_CONFIG_ERROR) for a transport failure,
    /// FAILURE for a write the far side refused.
    pub fn exit_code(&self) -> u8 {
        match self {
            WriteError::Transport { err, .. } => err.exit_code(),
            WriteError::Refused { .. } => crate::exit::FAILURE,
        }
    }
}

/// Quote one word for a POSIX shell: `'...'` with `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Join an argv into one shell command line, every word quoted.
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs commands on this machine, optionally behind a prefix argv.
pub struct Local {
    pub prefix: Vec<String>,
}

impl Local {
    pub fn new() -> Self {
        Local { prefix: Vec::new() }
    }
    /// A prefix like `pct exec 129 --`, split into words by the caller.
    pub fn with_prefix(prefix: Vec<String>) -> Self {
        Local { prefix }
    }
}

impl Default for Local {
    fn default() -> Self {
        Self::new()
    }
}

impl Transport for Local {
    fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError> {
        let full: Vec<&String> = self.prefix.iter().chain(argv.iter()).collect();
        let (program, args) = full.split_first().expect("empty argv");
        run_local(program, args, stdin, timeout)
    }

    fn describe(&self) -> String {
        if self.prefix.is_empty() {
            "local".into()
        } else {
            format!("local via '{}'", shell_join(&self.prefix))
        }
    }
}

fn run_local(
    program: &str,
    args: &[&String],
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Result<CmdOutput, TransportError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| TransportError::Spawn {
            program: program.to_string(),
            err,
        })?;
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin piped");
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    // Drain both pipes on threads so a full stderr never blocks stdout.
    let mut out_pipe = child.stdout.take().expect("stdout piped");
    let mut err_pipe = child.stderr.take().expect("stderr piped");
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out_pipe.read_to_end(&mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err_pipe.read_to_end(&mut b);
        b
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if t0.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TransportError::Timeout(timeout));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(CmdOutput {
        status: status.code(),
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    })
}

/// `sh -c SCRIPT` on `t` (5 s at most): its stdout, trimmed. For the unit
/// tests of the transports.
#[cfg(test)]
pub(crate) fn sh_stdout(t: &dyn Transport, script: &str) -> String {
    let argv = ["sh".into(), "-c".into(), script.into()];
    let out = t.run(&argv, None, Duration::from_secs(5)).unwrap();
    out.stdout_str().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_defeats_injection() {
        let nasty = ["; rm -rf /", "$(touch /tmp/x)", "it's", "a\nb", "`id`", ""];
        for w in nasty {
            let argv = vec!["printf".to_string(), "%s".to_string(), w.to_string()];
            let out = Local::new()
                .run(
                    &["sh".into(), "-c".into(), shell_join(&argv)],
                    None,
                    Duration::from_secs(5),
                )
                .unwrap();
            assert_eq!(out.stdout_str(), w, "word {w:?} came back changed");
        }
    }

    #[test]
    fn prefix_runs_before_argv() {
        let t = Local::with_prefix(vec!["env".into(), "SWEEPKIT_T=1".into()]);
        assert_eq!(sh_stdout(&t, "echo $SWEEPKIT_T"), "1");
    }

    #[test]
    fn timeout_is_enforced() {
        let e = Local::new().run(
            &["sleep".into(), "5".into()],
            None,
            Duration::from_millis(100),
        );
        assert!(matches!(e, Err(TransportError::Timeout(_))));
    }

    #[test]
    fn short_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("unit.service");
        std::fs::write(&p, "old\n").unwrap();
        // The same script, told to expect more bytes than arrive: as when the
        // writer dies mid-transfer.
        struct Short;
        impl Transport for Short {
            fn run(
                &self,
                argv: &[String],
                stdin: Option<&[u8]>,
                timeout: Duration,
            ) -> Result<CmdOutput, TransportError> {
                // sh -c SCRIPT sh PATH LEN MODE
                let mut argv = argv.to_vec();
                let len = &mut argv[5];
                *len = (len.parse::<usize>().unwrap() + 10).to_string();
                Local::new().run(&argv, stdin, timeout)
            }
            fn describe(&self) -> String {
                "short".into()
            }
        }
        let err = Short
            .write_file(p.to_str().unwrap(), b"new\n", Duration::from_secs(5))
            .unwrap_err();
        assert!(err.to_string().contains("short write"), "{err}");
        assert_eq!(err.exit_code(), crate::exit::FAILURE);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left behind"
        );
    }

    #[test]
    fn write_file_is_atomic_rename() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("unit.service");
        let t = Local::new();
        t.write_file(p.to_str().unwrap(), b"hello\n", Duration::from_secs(5))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "hello\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left behind"
        );
    }

    #[test]
    fn a_private_file_is_0600_in_a_new_directory_even_over_a_readable_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state/c.json");
        let t = Local::new();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        t.write_private_file(p.to_str().unwrap(), b"key\n", Duration::from_secs(5))
            .unwrap();
        assert_eq!(
            (mode(&p), std::fs::read_to_string(&p).unwrap()),
            (0o600, "key\n".into())
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        t.write_private_file(p.to_str().unwrap(), b"new\n", Duration::from_secs(5))
            .unwrap();
        assert_eq!(mode(&p), 0o600, "not the old file's mode");
        // And a plain write keeps the old file's mode.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        t.write_file(p.to_str().unwrap(), b"x\n", Duration::from_secs(5))
            .unwrap();
        assert_eq!(mode(&p), 0o640);
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}
