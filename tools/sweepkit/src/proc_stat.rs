//! `/proc/PID/stat`, parsed once for every tool that reads it (proc(5)):
//! `pid (comm) state ppid pgrp ...`. The command name may hold spaces and
//! parentheses, so the fields are those after the last `)`. Reading the
//! file is the caller's part: a local read, or `cat` on the far side.

/// The fields of a `/proc/PID/stat` text after its command name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat<'a> {
    /// Field 3 (`state`) onwards.
    fields: Vec<&'a str>,
}

impl<'a> ProcStat<'a> {
    /// `None` when the text has no `)` (not a stat file). A text that
    /// ends at the command name parses, with no fields.
    pub fn parse(text: &'a str) -> Option<ProcStat<'a>> {
        let rest = &text[text.rfind(')')? + 1..];
        Some(ProcStat {
            fields: rest.split_whitespace().collect(),
        })
    }

    /// Field `n` as proc(5) numbers them (3 is the state).
    fn field(&self, n: usize) -> Option<&'a str> {
        self.fields.get(n.checked_sub(3)?).copied()
    }

    /// The state letter (`R`, `S`, `Z`...).
    pub fn state(&self) -> Option<char> {
        self.field(3)?.chars().next()
    }

    /// True for a zombie or a dead process ([`dead`]).
    pub fn is_dead(&self) -> bool {
        self.state().is_some_and(dead)
    }

    /// The parent's PID (field 4).
    pub fn ppid(&self) -> Option<u32> {
        self.field(4)?.parse().ok()
    }

    /// The process group (field 5).
    pub fn pgrp(&self) -> Option<i64> {
        self.field(5)?.parse().ok()
    }

    /// The wait status a zombie leaves (field 52, `exit_code`).
    pub fn exit_code(&self) -> Option<i32> {
        self.field(52)?.parse().ok()
    }
}

/// True for the state of a zombie or a dead process (`Z`, `X`, and the
/// `x` of kernels 2.6.33 to 3.13): it has released its memory and ports,
/// and only its parent can reap it.
pub fn dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_the_last_parenthesis_of_an_odd_command_name() {
        let s = ProcStat::parse("123 (we ird) name)) S 1 123 123 0 -1\n").unwrap();
        assert_eq!(
            (s.state(), s.ppid(), s.pgrp(), s.is_dead()),
            (Some('S'), Some(1), Some(123), false)
        );
        assert_eq!(ProcStat::parse("garbage"), None);
        let bare = ProcStat::parse("9 (x)").unwrap();
        assert_eq!((bare.state(), bare.ppid()), (None, None));
    }

    #[test]
    fn a_zombie_carries_its_wait_status_in_field_52() {
        let mut text = String::from("9 (llm-sim) Z");
        for i in 4..=51 {
            text.push_str(&format!(" {i}"));
        }
        text.push_str(" 256\n");
        let s = ProcStat::parse(&text).unwrap();
        assert!(s.is_dead());
        assert_eq!((s.ppid(), s.exit_code()), (Some(4), Some(256)));
    }

    #[test]
    fn this_process_reads_as_alive_with_a_parent() {
        let text = std::fs::read_to_string("/proc/self/stat").unwrap();
        let s = ProcStat::parse(&text).unwrap();
        assert!(!s.is_dead());
        assert_eq!(s.ppid(), Some(std::os::unix::process::parent_id()));
    }
}
