//! Once ready: the files svc-swap copied for a flag (the swap record's
//! `files`, e.g. SGLang's `--speculative-adaptive-config`) and any
//! `--expect-file PATH=SHA256` are still on the far side with that SHA-256,
//! read there with `sha256sum` through the same transport as the probes'
//! commands. A missing or changed file is a config mismatch (exit 13): the
//! server may have read other content than the one the sweep measured.

use std::time::Duration;

use sweepkit::exit::Exit;
use sweepkit::transport::{Local, Transport};

use crate::cli::usage;
use crate::watch::Place;

/// A far file and the SHA-256 it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileExpect {
    pub path: String,
    pub sha256: String,
}

impl FileExpect {
    /// `--expect-file PATH=SHA256`.
    pub fn parse(s: &str) -> Result<FileExpect, Exit> {
        let (p, h) = s
            .rsplit_once('=')
            .ok_or_else(|| usage(format!("--expect-file '{s}': want PATH=SHA256")))?;
        let h = h.trim().to_ascii_lowercase();
        if !p.starts_with('/') {
            return Err(usage(format!("--expect-file '{s}': PATH must be absolute")));
        }
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(usage(format!(
                "--expect-file '{s}': SHA256 must be 64 hex digits"
            )));
        }
        Ok(FileExpect {
            path: p.to_string(),
            sha256: h,
        })
    }
}

/// What is wrong with each file (empty: all as expected). The path is a
/// positional argument of `sha256sum`, never shell text.
pub fn check(place: &Place, files: &[FileExpect]) -> Vec<String> {
    let local = Local::new();
    let t: &dyn Transport = match place {
        Place::Local => &local,
        Place::Remote(t) => t.as_ref(),
    };
    let mut out = Vec::new();
    for f in files {
        let argv = ["sha256sum", "--", &f.path].map(String::from);
        let got = match t.run_idempotent(&argv, None, Duration::from_secs(30)) {
            Ok(o) if o.success() => o.stdout_str().split_whitespace().next().map(String::from),
            Ok(o) => {
                let e = o.stderr_str();
                out.push(format!(
                    "file {}: {}",
                    f.path,
                    e.lines().last().unwrap_or("unreadable").trim()
                ));
                continue;
            }
            Err(e) => {
                out.push(format!("file {}: sha256sum failed: {e}", f.path));
                continue;
            }
        };
        match got {
            Some(h) if h == f.sha256 => {}
            Some(h) => out.push(format!("file {} has sha256 {h}, want {}", f.path, f.sha256)),
            None => out.push(format!("file {}: sha256sum printed nothing", f.path)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_file_parses_and_checks_locally() {
        assert!(FileExpect::parse("rel=abc").is_err());
        assert!(FileExpect::parse("/a=abc").is_err());
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a b.json");
        std::fs::write(&p, "{}").unwrap();
        let sha = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        let ok = FileExpect::parse(&format!("{}={sha}", p.display())).unwrap();
        assert!(check(&Place::Local, std::slice::from_ref(&ok)).is_empty());
        std::fs::write(&p, "{ }").unwrap();
        let bad = check(&Place::Local, std::slice::from_ref(&ok));
        assert!(bad[0].contains("want 44136fa3"), "{bad:?}");
        std::fs::remove_file(&p).unwrap();
        let gone = check(&Place::Local, &[ok]);
        assert!(gone[0].contains("No such file"), "{gone:?}");
    }
}
