//! README's `ExecStartPost=` drop-in, run as written against a real systemd
//! booted in a throw-away container (testkit::nspawn): `systemctl start`
//! returns only once the model is ready, through a port that stays closed
//! while the model loads and with nothing watched. Skips (passes with a
//! note) only when systemd-nspawn is missing. Needs `cargo build -p llm-sim`.

use std::time::{Duration, Instant};

use testkit::nspawn::{self, Container};

/// The README's drop-in block: the ```ini fence that starts with the
/// drop-in's path, up to the closing fence.
fn readme_drop_in() -> (String, String) {
    let readme = std::fs::read_to_string(testkit::repo_root().join("README.md")).unwrap();
    let start = readme
        .find("```ini\n# /etc/systemd/system/my-model.service.d/")
        .expect("README has the ExecStartPost drop-in block");
    let body = &readme[start + "```ini\n".len()..];
    let body = &body[..body.find("```").expect("closing fence")];
    let path = body
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("# ")
        .to_string();
    (path, body.to_string())
}

#[test]
fn readme_exec_start_post_holds_start_until_ready() {
    let (path, drop_in) = readme_drop_in();
    assert!(
        drop_in.contains("ExecStartPost=/usr/local/bin/wait-ready"),
        "{drop_in}"
    );
    if let Some(why) = nspawn::unavailable() {
        testkit::skip(&why);
        return;
    }
    let bin = testkit::bin("llm-sim");
    let dir = bin.parent().unwrap();
    // The README says /usr/local/bin: put the built tools there.
    let c = Container::boot(&[(dir, "/usr/local/bin")]).expect("boot container");
    c.write_file(
        "/etc/systemd/system/my-model.service",
        "[Service]\nExecStart=/usr/local/bin/llm-sim --host 127.0.0.1 --port 30000 \
         --load-time 3s --warmup-time 500ms\n",
    );
    c.write_file(&path, &drop_in);
    c.sh("systemctl daemon-reload");
    let t0 = Instant::now();
    let o = c.run(&["systemctl", "start", "my-model.service"]);
    let took = t0.elapsed();
    let journal = c.sh("journalctl -u my-model -o cat --no-pager; true");
    assert!(
        o.status.success(),
        "start failed: {}\n{journal}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        took >= Duration::from_secs(3),
        "start returned before the model loaded ({took:?}):\n{journal}"
    );
    // Ready the moment `systemctl start` returned, no polling here.
    let h = c.run(&[
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "http://127.0.0.1:30000/health",
    ]);
    assert_eq!(String::from_utf8_lossy(&h.stdout), "200", "{journal}");
    assert!(journal.contains("wait-ready: ready after"), "{journal}");
    let state = c.sh("systemctl show -P ActiveState my-model.service");
    assert_eq!(state.trim(), "active");
}
