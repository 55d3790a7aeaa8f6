//! sweep's progress line on a real terminal (a pty from python3's `pty`
//! module, TERM=xterm, 24 rows): it is kept on the bottom row, as apt's
//! Dpkg::Progress-Fancy keeps its own, by a scroll region over rows 1-23
//! (DECSTBM) and a draw between cursor save and restore, and the region is
//! given back (`ESC [ r`, the row cleared) when the sweep ends, after a
//! Ctrl-C typed at the terminal too; NO_COLOR drops only the colour; TERM=dumb
//! gets the plain lines. Off a terminal the plain lines are sweep_report.rs's.

mod sweep_support;

use std::process::Command;

use sweep_support::{records, SimExec, SpecFile, SweepArgs};

const KEY: &str = "speculative-num-steps";

/// Runs argv on a pty of 24 x 100 until it ends (120 s at most); with a
/// `mark`, types Ctrl-C 1.5 s after the output first holds it. Prints the
/// exit status, writes everything the terminal got to `out`.
const PTY_RUN: &str = r#"
import fcntl, os, pty, select, struct, sys, termios, time
out, mark, argv = sys.argv[1], sys.argv[2].encode(), sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    os.execvp(argv[0], argv)
data, sent, t0, seen = b"", False, time.time(), None
while time.time() - t0 < 120:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            b = os.read(fd, 65536)
        except OSError:
            break
        if not b:
            break
        data += b
    if mark and seen is None and mark in data:
        seen = time.time()
    if seen is not None and not sent and time.time() - seen > 1.5:
        os.write(fd, b"\x03")
        sent = True
else:
    os.kill(pid, 9)
_, st = os.waitpid(pid, 0)
open(out, "wb").write(data)
print(os.waitstatus_to_exitcode(st))
"#;

struct Tty {
    code: i32,
    text: String,
}

fn on_pty(spec: &SpecFile, env: &[(&str, &str)], mark: &str, n: &str) -> Tty {
    let bin_dir = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let port = std::fs::read_to_string(&spec.path)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Port=").map(String::from))
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let out = spec.dir.join("tty.out");
    let mut c = Command::new("python3");
    c.args(["-c", PTY_RUN])
        .arg(&out)
        .arg(mark)
        .arg("bash")
        .arg(testkit::repo_root().join("scripts/sweep.sh"))
        .arg("--bin-dir")
        .arg(bin_dir)
        .args(
            SweepArgs::on_spec(spec, &url, "llm-sim")
                .param(KEY, "2,3")
                .levels("1")
                .quick(n, "16")
                .words(),
        )
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let code = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let text = String::from_utf8_lossy(&std::fs::read(out).unwrap()).into_owned();
    Tty { code, text }
}

fn sim(tag: &str) -> SpecFile {
    SimExec::free().eagle(1).spec(tag).0
}

const REGION: &str = "\x1b7\x1b[1;23r\x1b8\x1b[1A";
const GIVE_BACK: &str = "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8";

/// The region was set, and given back after the last time it was set.
fn assert_given_back(t: &Tty) {
    let set = t
        .text
        .rfind(REGION)
        .unwrap_or_else(|| panic!("no scroll region: {:?}", t.text));
    let back = t
        .text
        .rfind(GIVE_BACK)
        .unwrap_or_else(|| panic!("region never reset: {:?}", t.text));
    assert!(back > set, "reset before the last draw: {:?}", t.text);
    assert_eq!(t.text.matches(GIVE_BACK).count(), 1, "{:?}", t.text);
}

#[test]
fn the_progress_line_keeps_the_bottom_row_and_gives_it_back_at_the_end() {
    let spec = sim("progress-tty");
    let t = on_pty(&spec, &[], "", "4");
    assert_eq!(t.code, 0, "{:?}", t.text);
    // Drawn on row 24 in apt's colours, between a cursor save and restore.
    let first = "\x1b7\x1b[24;1H\x1b[2K\x1b[42m\x1b[30msweep: config 1/2, ETA unknown (no config timed yet)\x1b[0m\x1b8";
    assert!(t.text.contains(&format!("{REGION}{first}")), "{:?}", t.text);
    let second = t
        .text
        .split("\x1b[30msweep: config 2/2, ETA ")
        .nth(1)
        .expect("config 2's line");
    let second = second.split("\x1b[0m\x1b8").next().unwrap();
    assert!(second.ends_with(" per config so far)"), "{second:?}");
    // Never as a plain line: each "config i/2" is a bottom-row draw.
    assert_eq!(t.text.matches("sweep: config ").count(), 2, "{:?}", t.text);
    assert_given_back(&t);
    assert_eq!(records(&spec.results()).len(), 2);
}

#[test]
fn ctrl_c_at_the_terminal_gives_the_row_back_and_no_color_drops_only_colour() {
    let spec = sim("progress-int");
    let t = on_pty(
        &spec,
        &[("NO_COLOR", "1")],
        "wait-ready: ready after",
        "100000",
    );
    assert_eq!(t.code, 130, "{:?}", t.text);
    assert!(t.text.contains("sweep: interrupted"), "{:?}", t.text);
    assert!(
        t.text
            .contains("\x1b[24;1H\x1b[2Ksweep: config 1/2, ETA unknown (no config timed yet)\x1b8"),
        "{:?}",
        t.text
    );
    assert!(!t.text.contains("\x1b[42m"), "NO_COLOR: {:?}", t.text);
    assert_given_back(&t);
    let recs = records(&spec.results());
    assert_eq!(recs.len(), 1, "{:?}", t.text);
    assert_eq!(recs[0]["partial"], true);
}

#[test]
fn a_dumb_terminal_gets_the_plain_lines() {
    let spec = sim("progress-dumb");
    let t = on_pty(&spec, &[("TERM", "dumb")], "", "2");
    assert_eq!(t.code, 0, "{:?}", t.text);
    assert!(
        t.text
            .contains("sweep: config 1/2, ETA unknown (no config timed yet)\r\n"),
        "{:?}",
        t.text
    );
    assert!(
        !t.text.contains("\x1b[1;23r") && !t.text.contains("\x1b[r"),
        "{:?}",
        t.text
    );
}
