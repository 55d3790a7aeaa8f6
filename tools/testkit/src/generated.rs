//! The files generated from a tool's one clap definition and committed:
//! its man page (`man/<name>.1`, clap_mangen plus the hand-written
//! sections) and its shell completions (bash, zsh, fish, by
//! `clap_complete`, in `completions/`). A test fails when they drift,
//! `make man` rewrites them, and `make install` copies them to where each
//! shell looks.
//!
//! hyperfine generates its completions from its clap `Command` with
//! `clap_complete::generate_to` for each `Shell` (its `build.rs`); ripgrep
//! prints them from its flag definitions (`rg --generate complete-bash`,
//! `crates/core/flags/complete/`). Committed files, as here, install
//! without running (or cross-building) the binaries, as man/ does.

use std::path::PathBuf;

use clap_complete::Shell;

/// The shells completions are made for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// `completions/<file>` for `name` in `shell`: `svc-swap.bash`, `_svc-swap`,
/// `svc-swap.fish` (clap_complete's own file names).
pub fn path(shell: Shell, name: &str) -> PathBuf {
    crate::paths::repo_root()
        .join("completions")
        .join(clap_complete::Generator::file_name(&shell, name))
}

/// The completion script for `cmd` in `shell`.
pub fn render(shell: Shell, cmd: &mut clap::Command) -> Vec<u8> {
    let name = cmd.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, name, &mut out);
    out
}

/// Check (or, with `SWEEPKIT_UPDATE_MAN=1`, rewrite) the completions of
/// `cmd` for every shell in [`SHELLS`].
pub fn completions(mut cmd: clap::Command) {
    let name = cmd.get_name().to_string();
    for shell in SHELLS {
        let text = render(shell, &mut cmd);
        check_generated(&path(shell, &name), &text);
    }
}

/// Check (or, with `SWEEPKIT_UPDATE_MAN=1`, rewrite) `man/<name>.1`: the
/// page clap_mangen renders from `cmd`, followed by the hand-written
/// sections in `man/src/<name>.roff` (EXIT STATUS, EXAMPLES, ...); and
/// likewise its shell completions (see [`completions`]).
pub fn check_man_page(cmd: clap::Command) {
    completions(cmd.clone());
    let name = cmd.get_name().to_string();
    let root = crate::paths::repo_root();
    let extra_path = root.join("man/src").join(format!("{name}.roff"));
    let extra = std::fs::read_to_string(&extra_path)
        .unwrap_or_else(|e| panic!("{}: {e} (hand-written sections)", extra_path.display()));
    assert!(
        extra.contains(".SH \"EXIT STATUS\""),
        "{} lacks EXIT STATUS",
        extra_path.display()
    );
    assert!(
        extra.contains(".SH EXAMPLES"),
        "{} lacks EXAMPLES",
        extra_path.display()
    );
    let headings: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_help_heading().map(String::from))
        .collect();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .expect("render man page");
    let page = String::from_utf8(page).expect("UTF-8 man page");
    let page = options_as_subsections(&page, &headings) + &extra;
    let mut seen = std::collections::BTreeSet::new();
    for sh in page.lines().filter_map(|l| l.strip_prefix(".SH ")) {
        assert!(sh != "EXTRA", "{name}(1): an EXTRA section (after_help)");
        assert!(seen.insert(sh), "{name}(1): section {sh} twice");
    }
    check_generated(&root.join("man").join(format!("{name}.1")), page.as_bytes());
}

/// Fail when the generated file at `path` differs from `text`; with
/// `SWEEPKIT_UPDATE_MAN=1` (`make man`) write `text` there instead.
pub fn check_generated(path: &std::path::Path, text: &[u8]) {
    if std::env::var_os("SWEEPKIT_UPDATE_MAN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        return;
    }
    let current = std::fs::read(path).unwrap_or_default();
    assert!(
        current == text,
        "{} is out of date: run `make man` and commit the result",
        path.display()
    );
}

/// clap_mangen gives each help heading a section of its own (`.SH FLEET`),
/// beside the hand-written section of the same name, and `after_help` a
/// section called EXTRA (issue 33: FLEET, DECISION VIEWS twice; the exit
/// codes under EXTRA). The headings become subsections of OPTIONS, and
/// EXTRA goes: the hand-written EXIT STATUS says the same at length.
pub fn options_as_subsections(page: &str, headings: &[String]) -> String {
    let upper: Vec<(String, &String)> = headings.iter().map(|h| (h.to_uppercase(), h)).collect();
    let mut out = String::new();
    let mut skipping = false;
    for line in page.lines() {
        if let Some(name) = line.strip_prefix(".SH ") {
            let name = name.trim_matches('"');
            skipping = name == "EXTRA";
            if let Some((_, h)) = upper.iter().find(|(u, _)| u == name) {
                out.push_str(&format!(".SS \"{h}\"\n"));
                continue;
            }
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_become_subsections_and_extra_goes() {
        let page = ".SH OPTIONS\n.TP\na\n.SH FLEET\n.TP\nb\n.SH \"DECISION VIEWS\"\nc\n\
                    .SH EXTRA\nExit status: 0\n.SH VERSION\nv1\n";
        let h = ["Fleet".to_string(), "Decision views".to_string()];
        assert_eq!(
            options_as_subsections(page, &h),
            ".SH OPTIONS\n.TP\na\n.SS \"Fleet\"\n.TP\nb\n.SS \"Decision views\"\nc\n\
             .SH VERSION\nv1\n"
        );
    }
}
