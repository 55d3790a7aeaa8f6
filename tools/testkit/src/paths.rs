//! Where a test finds things: the workspace's built binaries, the
//! repository (fixtures, scripts, man pages), and fresh temporary
//! directories under the target dir.

use std::path::PathBuf;

/// Path of a workspace binary (`llm-sim`, `wait-ready`, ...). Tests run from
/// `target/<profile>/deps/`; binaries live one level up.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} not built; run `cargo build --workspace` (or `make build`) first",
        path.display()
    );
    path
}

/// The repository root (for fixtures and scripts).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// A fresh temporary directory under the target dir, removed by the caller
/// (kept on purpose: a failing test's files stay there to be read).
pub fn temp_dir(tag: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let base = exe.parent().unwrap().join("testkit-tmp");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(&format!("{tag}-"))
        .tempdir_in(&base)
        .unwrap()
        .keep()
}
