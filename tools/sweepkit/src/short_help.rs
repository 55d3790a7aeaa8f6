//! `-h`: a short summary of a tool (what it does, its usage, one example,
//! its flags' names by heading), as cargo's `-h` is; `--help` and the man
//! page keep the long text (issue 33: `-h` ran 77 to 139 lines). Made from
//! the tool's one clap definition, so it cannot drift from `--help`.

use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};

/// Lines are wrapped to this width, as the help lines are.
const WIDTH: usize = 79;

/// `P` parsed from the process's arguments; `-h` prints [`summary`] with
/// `example` and exits 0; `--help`, `--version` and usage errors are
/// clap's own.
pub fn parse<P: CommandFactory + FromArgMatches>(example: &str) -> P {
    parse_from(std::env::args_os().collect(), example)
}

/// [`parse`] from `argv` (program name first).
pub fn parse_from<P: CommandFactory + FromArgMatches>(argv: Vec<OsString>, example: &str) -> P {
    match matches(P::command(), &argv, example) {
        Ok(m) => P::from_arg_matches(&m).unwrap_or_else(|e| e.format(&mut P::command()).exit()),
        Err(text) => {
            print!("{text}");
            std::process::exit(0)
        }
    }
}

/// `cmd`'s matches for `argv`; `Err(summary)` when `-h` asked for help. A
/// usage error, `--help` or `--version` exits as clap does.
fn matches(cmd: Command, argv: &[OsString], example: &str) -> Result<ArgMatches, String> {
    match cmd.clone().try_get_matches_from(argv) {
        Ok(m) => Ok(m),
        Err(e) if is_short_help(&e, argv) && !names_a_subcommand(&cmd, argv) => {
            Err(summary(&cmd, example))
        }
        Err(e) => e.exit(),
    }
}

/// Whether clap's error is the help that `-h` (not `--help`) asked for.
pub fn is_short_help(e: &clap::Error, argv: &[OsString]) -> bool {
    e.kind() == ErrorKind::DisplayHelp && !argv.iter().skip(1).any(|a| a == "--help")
}

/// Whether `argv` names one of `cmd`'s subcommands (whose `-h` is clap's).
fn names_a_subcommand(cmd: &Command, argv: &[OsString]) -> bool {
    argv.iter()
        .skip(1)
        .any(|a| a.to_str().is_some_and(|a| cmd.find_subcommand(a).is_some()))
}

/// The short summary of `cmd`, with one `example` command line.
pub fn summary(cmd: &Command, example: &str) -> String {
    let name = cmd.get_name().to_string();
    let mut out = String::new();
    if let Some(about) = cmd.get_about() {
        out.push_str(&wrap(&about.to_string(), "", ""));
    }
    out.push('\n');
    let usage = cmd.clone().render_usage().to_string();
    out.push_str(usage.trim_end());
    out.push_str("\n\nExample:\n");
    for line in example.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!(
        "\nOptions (`{name} --help` says what each does, `man {name}` says more):\n"
    ));
    for (heading, flags) in by_heading(cmd) {
        out.push_str(&wrap(&flags.join(", "), &format!("  {heading}: "), "    "));
    }
    out
}

/// The flags' names, grouped by help heading in the order they appear.
fn by_heading(cmd: &Command) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for a in cmd.get_arguments() {
        let id = a.get_id().as_str();
        if a.is_hide_set() || id == "help" || id == "version" {
            continue;
        }
        let name = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("-{s}/--{l}"),
            (None, Some(l)) => format!("--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, None) => continue, // positional: in the usage line
        };
        let heading = a.get_help_heading().unwrap_or("General").to_string();
        match groups.iter_mut().find(|(h, _)| *h == heading) {
            Some((_, v)) => v.push(name),
            None => groups.push((heading, vec![name])),
        }
    }
    let mut help = vec!["-h".to_string(), "--help".to_string()];
    if cmd.get_version().is_some() {
        help.push("-V/--version".into());
    }
    groups.push(("Help".into(), help));
    groups
}

/// `text` wrapped at [`WIDTH`] between words, the first line after
/// `first`, the rest after `rest`.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let width = |prefix: &str| WIDTH.saturating_sub(prefix.chars().count());
    let mut out = String::new();
    for (i, l) in crate::wrap::wrap(text, width(first), width(rest))
        .iter()
        .enumerate()
    {
        let line = format!("{}{l}", if i == 0 { first } else { rest });
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn cmd() -> Command {
        Command::new("tool")
            .about("Does one job")
            .arg(Arg::new("url"))
            .arg(Arg::new("rate").short('r').long("rate"))
            .arg(
                Arg::new("ssh")
                    .long("ssh")
                    .help_heading("Target")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("secret").long("secret").hide(true))
    }

    #[test]
    fn dash_h_is_short_and_dash_dash_help_is_clap_s() {
        let argv = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        let text = matches(cmd(), &argv(&["tool", "-h"]), "tool -r 2 http://x").unwrap_err();
        assert!(
            text.starts_with("Does one job\n\nUsage: tool [OPTIONS] [url]\n"),
            "{text}"
        );
        assert!(text.contains("Example:\n  tool -r 2 http://x\n"), "{text}");
        assert!(
            text.contains("  General: -r/--rate\n  Target: --ssh\n  Help: -h, --help\n"),
            "{text}"
        );
        assert!(!text.contains("secret"), "{text}");
        let e = cmd()
            .try_get_matches_from(argv(&["tool", "--help"]))
            .unwrap_err();
        assert!(!is_short_help(&e, &argv(&["tool", "--help"])));
        assert!(matches(cmd(), &argv(&["tool", "-r", "2"]), "").is_ok());
    }

    #[test]
    fn long_lists_wrap_between_words_within_the_width() {
        let w = wrap(
            &["--a-long-flag-name"; 12].join(", "),
            "  Heading: ",
            "    ",
        );
        assert!(w.lines().count() > 1, "{w}");
        assert!(w.lines().all(|l| l.chars().count() <= WIDTH), "{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("    --")), "{w}");
    }
}
