//! sweep(1)'s progress line kept on a terminal's bottom row, the way apt's
//! Dpkg::Progress-Fancy keeps its own (apt-pkg/install-progress.cc,
//! PackageManagerFancy): a scroll region (DECSTBM) over every row but the
//! last reserves that row, and the line is drawn there between a cursor
//! save and restore (DECSC/DECRC), so the tools' own stderr lines scroll
//! above it untouched. Each draw sets the region again (a resized terminal
//! gets the new size; sweep-plan runs once per config and keeps no state);
//! `end` gives the whole screen back and clears the row. Off a terminal
//! (stderr not a tty, TERM unset or dumb, a fleet job) the line is a plain
//! line, as before. NO_COLOR drops the colour only.

use std::io::{IsTerminal, Write};

/// How stderr takes the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Bottom { rows: u16, cols: u16, colour: bool },
}

/// The terminal's size from stderr (TIOCGWINSZ), else LINES/COLUMNS.
fn size() -> Option<(u16, u16)> {
    // SAFETY: a zeroed winsize is valid; TIOCGWINSZ only writes into it.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: fd 2 is open for the process's life; the pointer is to ws.
    let rc = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) };
    if rc == 0 && ws.ws_row > 0 && ws.ws_col > 0 {
        return Some((ws.ws_row, ws.ws_col));
    }
    let env = |k: &str| std::env::var(k).ok()?.parse::<u16>().ok();
    Some((env("LINES")?, env("COLUMNS").unwrap_or(80)))
}

/// The mode for stderr now; `plain` forces plain lines.
pub fn mode(plain: bool) -> Mode {
    let term = std::env::var("TERM").unwrap_or_default();
    if plain || !std::io::stderr().is_terminal() || term.is_empty() || term == "dumb" {
        return Mode::Plain;
    }
    // https://no-color.org: set and not empty.
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    match size() {
        // Too small to give a row away.
        Some((rows, cols)) if rows >= 3 && cols >= 10 => Mode::Bottom { rows, cols, colour },
        _ => Mode::Plain,
    }
}

/// The bytes that show `text` in mode `m`.
pub fn draw(m: Mode, text: &str) -> String {
    let Mode::Bottom { rows, cols, colour } = m else {
        return format!("{text}\n");
    };
    // One row short of the width: a character in the last column of the
    // last row would wrap and scroll the whole screen.
    let text: String = text.chars().take(usize::from(cols) - 1).collect();
    let (on, off) = if colour {
        ("\x1b[42m\x1b[30m", "\x1b[0m")
    } else {
        ("", "")
    };
    format!(
        // apt's SetupTerminalScrollArea: a newline first so the cursor is
        // not on the row given away, the region (which homes the cursor)
        // between save and restore, then back up into the region.
        "\n\x1b7\x1b[1;{}r\x1b8\x1b[1A\
         \x1b7\x1b[{rows};1H\x1b[2K{on}{text}{off}\x1b8",
        rows - 1
    )
}

/// The bytes that give the screen back: the whole screen as the scroll
/// region again and the status row cleared, the cursor where it was.
pub fn end(m: Mode) -> String {
    match m {
        Mode::Plain => String::new(),
        Mode::Bottom { rows, .. } => format!("\x1b7\x1b[r\x1b[{rows};1H\x1b[2K\x1b8"),
    }
}

/// Writes `bytes` to stderr in one write.
pub fn emit(bytes: &str) -> std::io::Result<()> {
    let mut e = std::io::stderr().lock();
    e.write_all(bytes.as_bytes())?;
    e.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bottom_row_sequences() {
        let m = Mode::Bottom {
            rows: 24,
            cols: 20,
            colour: false,
        };
        assert_eq!(
            draw(m, "config 1/2, ETA unknown"),
            "\n\x1b7\x1b[1;23r\x1b8\x1b[1A\x1b7\x1b[24;1H\x1b[2Kconfig 1/2, ETA unk\x1b8"
        );
        let c = Mode::Bottom {
            rows: 24,
            cols: 80,
            colour: true,
        };
        assert!(draw(c, "x").contains("\x1b[42m\x1b[30mx\x1b[0m"));
        assert_eq!(end(m), "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8");
        assert_eq!(draw(Mode::Plain, "a b"), "a b\n");
        assert_eq!(end(Mode::Plain), "");
    }
}
