//! The test container boots the same few units whatever the host has
//! installed (issue 21: with podman on the host, every nspawn test failed
//! with "container did not boot in 30 s"), and a boot that is held up
//! says which unit held it.
//!
//! The host's own packages cannot be changed by a test, so each test binds
//! its unit files into the container's /etc, where systemd finds them as it
//! finds the host's units under /usr/lib.

use std::path::Path;
use std::time::{Duration, Instant};

use testkit::nspawn::{self, Container};

/// A service that never finishes starting, installed the way a package's
/// is: the first boot's presets enable it for every target it names.
const HANGS_IF_ENABLED: &str = "[Unit]\nDescription=stands in for a host service\n\
    [Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n\
    [Install]\nWantedBy=multi-user.target sysinit.target sockets.target\n";

/// A unit that holds sysinit.target up, as a hung early service would.
const HOLDS_SYSINIT: &str = "[Unit]\nDescription=stands in for a hung early service\n\
    DefaultDependencies=no\n\
    [Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n";
const SYSINIT_WAITS: &str = "[Unit]\nWants=sweepkit-hold.service\nAfter=sweepkit-hold.service\n";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn active(c: &Container, unit: &str) -> String {
    let o = c.run(&["systemctl", "is-active", unit]);
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn host_enabled_service_does_not_start_in_the_container() {
    if let Some(why) = nspawn::unavailable() {
        return testkit::skip(&why);
    }
    let dir = testkit::temp_dir("nspawn-boot");
    let unit = write(&dir, "hangs.service", HANGS_IF_ENABLED);
    let t0 = Instant::now();
    let c = Container::boot(&[(&unit, "/etc/systemd/system/sweepkit-hangs.service")])
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("booted in {:.2} s", t0.elapsed().as_secs_f64());
    assert_eq!(active(&c, "sweepkit-hangs.service"), "inactive");
    // Nothing past sysinit: neither the host's default target nor the
    // units it pulls in (sshd, dbus, the host's network services).
    for u in ["multi-user.target", "sockets.target", "dbus.service"] {
        assert_eq!(active(&c, u), "inactive", "{u} is up in the container");
    }
    let enabled = c.sh("ls -d /etc/systemd/system/*.wants 2>/dev/null; true");
    assert_eq!(enabled, "", "the presets enabled units in the container");
    // The container still does what the tests need: its journal and units.
    c.write_file(
        "/etc/systemd/system/probe.service",
        "[Service]\nType=oneshot\nExecStart=/bin/echo probe-ran\n",
    );
    c.sh("systemctl daemon-reload && systemctl start probe.service");
    let log = c.sh("journalctl -u probe -o cat --no-pager");
    assert!(log.contains("probe-ran"), "journal: {log}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn held_up_boot_names_the_unit_that_held_it() {
    if let Some(why) = nspawn::unavailable() {
        return testkit::skip(&why);
    }
    let dir = testkit::temp_dir("nspawn-boot");
    let unit = write(&dir, "hold.service", HOLDS_SYSINIT);
    let dropin = write(&dir, "hold.conf", SYSINIT_WAITS);
    let t0 = Instant::now();
    let err = match Container::boot_within(
        &[
            (&unit, "/etc/systemd/system/sweepkit-hold.service"),
            (&dropin, "/etc/systemd/system/sysinit.target.d/hold.conf"),
        ],
        Duration::from_secs(5),
    ) {
        Ok(_) => panic!("booted although sysinit.target waits on a unit that never starts"),
        Err(e) => e,
    };
    assert!(t0.elapsed() < Duration::from_secs(25), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("held up by sweepkit-hold.service (start running)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
