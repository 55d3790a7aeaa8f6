//! One builder for sweep's words: the target (`--spec`, `--url`,
//! `--server`, `--results`), the grid (`--param`/`--values`, levels) and
//! the options handed through to a stage (`--load-arg`, `--swap-arg`), so
//! each test says only what sets its sweep apart.

use std::path::Path;
use std::process::{Command, Output};

use super::{sweep, sweep_behind, SpecFile};

/// sweep's command line, word by word, in the order the calls give.
#[derive(Clone, Debug, Default)]
pub struct SweepArgs(Vec<String>);

impl SweepArgs {
    pub fn new() -> SweepArgs {
        SweepArgs::default()
    }

    /// `--spec SPEC --url URL --server SERVER --results` the spec's results
    /// file (`SpecFile::results`).
    pub fn on_spec(spec: &SpecFile, url: &str, server: &str) -> SweepArgs {
        SweepArgs::new()
            .args(&["--spec", spec.s(), "--url", url, "--server", server])
            .results(&spec.results())
    }

    pub fn arg(mut self, word: &str) -> SweepArgs {
        self.0.push(word.to_string());
        self
    }

    pub fn args(mut self, words: &[&str]) -> SweepArgs {
        self.0.extend(words.iter().map(|w| w.to_string()));
        self
    }

    /// `--results PATH`.
    pub fn results(self, path: &Path) -> SweepArgs {
        self.args(&["--results", path.to_str().unwrap()])
    }

    /// `--param KEY --values VALUES`.
    pub fn param(self, key: &str, values: &str) -> SweepArgs {
        self.args(&["--param", key, "--values", values])
    }

    /// `--param-new KEY --values VALUES`: a flag the launch line lacks,
    /// which sweep adds (a `--param` it lacks is refused as a typo).
    pub fn param_new(self, key: &str, values: &str) -> SweepArgs {
        self.args(&["--param-new", key, "--values", values])
    }

    /// `--concurrency LEVELS`.
    pub fn levels(self, levels: &str) -> SweepArgs {
        self.args(&["--concurrency", levels])
    }

    /// Each word as a `--load-arg` (loadgen's options).
    pub fn load(self, words: &[&str]) -> SweepArgs {
        self.each("--load-arg", words)
    }

    /// Each word as a `--swap-arg` (svc-swap's options).
    pub fn swap(self, words: &[&str]) -> SweepArgs {
        self.each("--swap-arg", words)
    }

    /// A short level: `-n N --max-tokens M` to loadgen.
    pub fn quick(self, n: &str, max_tokens: &str) -> SweepArgs {
        self.load(&["-n", n, "--max-tokens", max_tokens])
    }

    /// `--swap-arg --wait --swap-arg 20s`: a unit's stop and start may
    /// take a while inside a container.
    pub fn swap_wait(self) -> SweepArgs {
        self.swap(&["--wait", "20s"])
    }

    /// These words, then `more`'s.
    pub fn extend(mut self, more: SweepArgs) -> SweepArgs {
        self.0.extend(more.0);
        self
    }

    fn each(mut self, flag: &str, words: &[&str]) -> SweepArgs {
        for w in words {
            self.0.extend([flag.to_string(), w.to_string()]);
        }
        self
    }

    pub fn words(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }

    /// `bash scripts/sweep.sh --bin-dir ... WORDS`.
    pub fn cmd(&self) -> Command {
        sweep(&self.words())
    }

    /// The same, run behind `prefix` (e.g. `nsenter -t PID -n --`).
    pub fn behind(&self, prefix: &[&str]) -> Command {
        sweep_behind(prefix, &self.words())
    }

    /// Run the sweep to its end.
    pub fn output(&self) -> Output {
        self.cmd().output().unwrap()
    }

    /// Run the sweep to its end; it must exit `code` (the dump says why not).
    pub fn expect(&self, code: i32) -> Output {
        let out = self.output();
        assert_eq!(out.status.code(), Some(code), "{}", super::dump(&out));
        out
    }
}
