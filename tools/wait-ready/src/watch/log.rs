//! `--log FILE`: tail the server's log, keep its last lines for the failure
//! record, and end the wait on a fatal line (an OOM, a Python traceback, a
//! failed model load). Only this instance's lines count, for both: a
//! process manager appends every instance's output to one file, and the
//! previous instance's "received SIGTERM, exiting" is not this crash's
//! tail. This instance begins at the offset the swap record gives (the
//! size before the start) or, without one, where the file ends when the
//! wait starts.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use regex::Regex;

use super::{Event, Place, CMD_TIMEOUT};

/// Lines kept for the record.
pub const TAIL_LINES: usize = 20;
const MAX_READ: u64 = 1 << 20;
const REMOTE_EVERY: Duration = Duration::from_millis(500);

/// Lines that mean the server will not come up.
pub const DEFAULT_FATAL: &[&str] = &[
    r"(?i)out of memory",
    r"OutOfMemoryError",
    r"Traceback \(most recent call last\)",
    r"\bFATAL\b",
    r"Fatal Python error",
    r"panicked at",
    r"Segmentation fault",
    r"core dumped",
    r"(?i)failed to load model",
    r"(?i)error loading model",
    r"EngineDeadError",
    r"Engine core initialization failed",
];

/// True for a line that reports running out of (GPU) memory.
pub fn is_oom(line: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)out of memory|OutOfMemoryError|oom-kill|cudaErrorMemoryAllocation")
            .expect("static regex")
    })
    .is_match(line)
}

pub struct LogWatch {
    pub path: String,
    place: Place,
    offset: u64,
    partial: String,
    lines: VecDeque<String>,
    fatal: Vec<Regex>,
    next: Instant,
}

impl LogWatch {
    /// Start at byte `from` (this instance's first byte), or at the file's
    /// current end when not known. `extra` are the user's `--fatal-regex`
    /// patterns, already checked.
    pub fn new(path: &str, place: Place, extra: &[Regex], from: Option<u64>) -> Self {
        let mut fatal: Vec<Regex> = DEFAULT_FATAL
            .iter()
            .map(|p| Regex::new(p).expect("static regex"))
            .collect();
        fatal.extend(extra.iter().cloned());
        let mut w = LogWatch {
            path: path.to_string(),
            place,
            offset: 0,
            partial: String::new(),
            lines: VecDeque::new(),
            fatal,
            next: Instant::now(),
        };
        let size = w.size().unwrap_or(0);
        w.offset = match from {
            Some(o) if o <= size => o,
            // Shorter than when the offset was taken: truncated or
            // replaced since, so all of it is this instance's.
            Some(_) => 0,
            None => size,
        };
        w
    }

    fn push(&mut self, line: String) {
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    fn size(&self) -> Option<u64> {
        match &self.place {
            Place::Local => std::fs::metadata(&self.path).ok().map(|m| m.len()),
            Place::Remote(t) => {
                let argv = ["wc", "-c", &self.path].map(String::from);
                let o = t.run_idempotent(&argv, None, CMD_TIMEOUT).ok()?;
                o.stdout_str().split_whitespace().next()?.parse().ok()
            }
        }
    }

    fn read_from(&self, offset: u64, len: u64) -> Option<Vec<u8>> {
        let len = len.min(MAX_READ);
        if len == 0 {
            return Some(Vec::new());
        }
        match &self.place {
            Place::Local => {
                let mut f = std::fs::File::open(&self.path).ok()?;
                f.seek(SeekFrom::Start(offset)).ok()?;
                let mut buf = Vec::new();
                f.take(len).read_to_end(&mut buf).ok()?;
                Some(buf)
            }
            Place::Remote(t) => {
                let script = r#"tail -c +"$2" "$1" | head -c "$3""#;
                let argv = [
                    "sh",
                    "-c",
                    script,
                    "sh",
                    &self.path,
                    &(offset + 1).to_string(),
                    &len.to_string(),
                ]
                .map(String::from);
                let o = t.run_idempotent(&argv, None, CMD_TIMEOUT).ok()?;
                o.success().then_some(o.stdout)
            }
        }
    }

    /// Read new lines; a fatal one ends the wait.
    pub fn poll(&mut self, now: Instant) -> Option<Event> {
        if now < self.next {
            return None;
        }
        if let Place::Remote(_) = self.place {
            self.next = now + REMOTE_EVERY;
        }
        let size = self.size()?;
        if size < self.offset {
            // Truncated or replaced: start over at the top.
            self.offset = 0;
            self.partial.clear();
        }
        let bytes = self.read_from(self.offset, size - self.offset)?;
        self.offset += bytes.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&bytes));
        let mut event = None;
        while let Some(nl) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=nl).collect();
            let line = line.trim_end().to_string();
            if event.is_none() && self.fatal.iter().any(|r| r.is_match(&line)) {
                event = Some(Event::Crashed {
                    reason: format!("{}{FATAL_LINE}{}", self.path, clip(&line)),
                    oom: is_oom(&line),
                });
            }
            self.push(line);
        }
        event
    }

    /// Read until the log stops growing (0.5 s without a new byte, 5 s at
    /// most): what a dying server writes after its first fatal line.
    pub fn settle(&mut self) {
        let t0 = Instant::now();
        let mut last = (self.offset, Instant::now());
        while t0.elapsed() < Duration::from_secs(5) {
            self.poll(Instant::now() + Duration::from_secs(3600));
            if self.offset != last.0 {
                last = (self.offset, Instant::now());
            } else if last.1.elapsed() >= Duration::from_millis(500) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn tail(&self) -> Vec<String> {
        let mut t: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.trim().is_empty() {
            t.push(self.partial.trim_end().to_string());
        }
        t
    }
}

/// What a reason from the log watch says between the file and its line;
/// `name_the_exception` leaves such a reason's chosen line alone.
const FATAL_LINE: &str = " shows a fatal line: ";

/// A reason that only names a traceback's first line names its exception
/// instead (`...ValidationError: 1 validation error for SpeculativeConfig`,
/// `TypeError: '>' not supported ...`): the last such line in `tail`; a
/// unit's or process's exit gets that line added.
pub fn name_the_exception(reason: String, tail: &[String]) -> String {
    const FIRST: &str = "Traceback (most recent call last):";
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?$")
            .expect("static regex")
    });
    let last = tail.iter().rev().find(|l| re.is_match(l.trim_end()));
    if !reason.ends_with(FIRST) {
        // A unit that failed or a process that exited names no error of its
        // own: add the server's last exception line from its log or journal
        // (vLLM's `ValidationError ... SpeculativeConfig`, SGLang's
        // `TypeError: '>' not supported ...`). A fatal line the log watch
        // already chose stays as it is.
        return match last {
            Some(l) if !reason.contains(FATAL_LINE) => {
                format!("{reason}: {}", clip(l))
            }
            _ => reason,
        };
    }
    match last {
        Some(l) => format!("{}{}", reason.trim_end_matches(FIRST), clip(l)),
        None => reason,
    }
}

/// One line, at most 200 characters, for the reason.
pub fn clip(line: &str) -> String {
    let l = line.trim();
    if l.chars().count() > 200 {
        format!("{}...", l.chars().take(200).collect::<String>())
    } else {
        l.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn previous_instance_lines_are_neither_judged_nor_in_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("server.log");
        std::fs::write(
            &p,
            "old Traceback (most recent call last)\nreceived SIGTERM, exiting\n",
        )
        .unwrap();
        let mut w = LogWatch::new(p.to_str().unwrap(), Place::Local, &[], None);
        assert_eq!(w.poll(Instant::now()), None);
        assert!(w.tail().is_empty(), "{:?}", w.tail());
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        write!(f, "weights 50%\ntorch.OutOfMemoryError: CUDA out of mem").unwrap();
        assert_eq!(w.poll(Instant::now()), None, "partial line judged");
        writeln!(f, "ory. Tried to allocate 2.00 GiB").unwrap();
        match w.poll(Instant::now()) {
            Some(Event::Crashed { oom: true, reason }) => {
                assert!(reason.contains("CUDA out of memory"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        let tail = w.tail();
        assert_eq!(tail.first().map(String::as_str), Some("weights 50%"));
        assert!(tail.last().unwrap().starts_with("torch.OutOfMemoryError"));
        assert_eq!(tail.len(), 2, "{tail:?}");
    }

    #[test]
    fn a_given_offset_reads_this_instance_from_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("server.log");
        let old = "received SIGTERM, exiting\n";
        // The new instance wrote (and died) before the wait began.
        std::fs::write(&p, format!("{old}loading\nFATAL: bad weights\n")).unwrap();
        let path = p.to_str().unwrap();
        let mut w = LogWatch::new(path, Place::Local, &[], Some(old.len() as u64));
        assert!(matches!(
            w.poll(Instant::now()),
            Some(Event::Crashed { oom: false, .. })
        ));
        assert_eq!(w.tail(), vec!["loading", "FATAL: bad weights"]);
        // An offset past the end: the file was replaced; all of it is new.
        let mut w = LogWatch::new(path, Place::Local, &[], Some(1 << 20));
        w.poll(Instant::now());
        assert_eq!(w.tail().len(), 3, "{:?}", w.tail());
    }

    #[test]
    fn missing_file_is_waited_for_and_extra_patterns_apply() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("late.log");
        let extra = [Regex::new("^BOOM").unwrap()];
        let mut w = LogWatch::new(p.to_str().unwrap(), Place::Local, &extra, None);
        assert_eq!(w.poll(Instant::now()), None);
        std::fs::write(&p, "BOOM now\n").unwrap();
        assert!(matches!(
            w.poll(Instant::now()),
            Some(Event::Crashed { oom: false, .. })
        ));
    }

    #[test]
    fn a_traceback_reason_names_its_exception_line() {
        let tail: Vec<String> = [
            "Traceback (most recent call last):",
            "  File \"x.py\", line 1, in <module>",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
            "num_speculative_tokens",
            "  Input should be a valid integer",
        ]
        .map(String::from)
        .to_vec();
        let r = name_the_exception(
            "s.log shows a fatal line: Traceback (most recent call last):".into(),
            &tail,
        );
        assert_eq!(
            r,
            "s.log shows a fatal line: pydantic_core._pydantic_core.ValidationError: \
             1 validation error for SpeculativeConfig"
        );
        let other = "s.log shows a fatal line: CUDA out of memory".to_string();
        assert_eq!(name_the_exception(other.clone(), &tail), other);
        let bare = "s.log shows a fatal line: Traceback (most recent call last):".to_string();
        assert_eq!(name_the_exception(bare.clone(), &tail[..2]), bare);
        // A unit's failure (the journal is the tail) names the server's error.
        let unit = "unit vllm.service failed (Result=exit-code; main process exited with status 1)";
        assert_eq!(
            name_the_exception(unit.into(), &tail),
            format!(
                "{unit}: pydantic_core._pydantic_core.ValidationError: \
                 1 validation error for SpeculativeConfig"
            )
        );
        assert_eq!(name_the_exception(unit.into(), &tail[1..2]), unit);
    }
}
