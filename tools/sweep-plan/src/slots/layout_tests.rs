//! The slot layout's checks (layout.rs), through the pool as hosts.rs
//! reads it.

use super::layout::*;
use crate::host::Host;
use crate::hosts::{parse, Templates};

fn pool(text: &str, target: &str, split: Option<&Split<'_>>) -> Result<Vec<Host>, String> {
    let t = Templates {
        url: "http://127.0.0.1:{port}",
        target: Some(target),
    };
    parse(text, Some("p"), &t, split).map_err(|e| e.to_string())
}

#[test]
fn gpus_split_each_machine_into_slots_with_their_own_targets() {
    let sp = Split {
        gpus: "0,1,2,3",
        per: 2,
    };
    let h = pool("-\nroot@g\n", "sim-{slot}.spec", Some(&sp)).unwrap();
    let got: Vec<_> = h
        .iter()
        .map(|h| (h.name.as_str(), h.gpus.as_deref(), h.target.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("local slot 0", Some("0,1"), Some("sim-0.spec")),
            ("local slot 1", Some("2,3"), Some("sim-1.spec")),
            ("root@g slot 0", Some("0,1"), Some("sim-0.spec")),
            ("root@g slot 1", Some("2,3"), Some("sim-1.spec")),
        ]
    );
    assert_eq!(h[0].url, "http://127.0.0.1:{port}", "read from the target");
    let ids: std::collections::BTreeSet<_> = h.iter().map(|h| &h.id).collect();
    assert_eq!(ids.len(), 4);
    // The same slot, another layout: the same id (its origin).
    let one = pool("- gpus=5\n", "sim-{slot}.spec", None).unwrap();
    assert_eq!(one[0].id, h[0].id);
}

#[test]
fn clashing_slots_are_refused_in_one_line() {
    let e = |text: &str, target: &str| pool(text, target, None).unwrap_err();
    assert_eq!(
        e("- gpus=0,1\n- gpus=1,2\n", "s-{slot}"),
        "GPU 1 is in local slot 0 and in local slot 1: each GPU serves one slot"
    );
    assert_eq!(
        e("- gpus=0 port=8001\n- gpus=1 port=8001\n", "s-{slot}"),
        "local slot 0 and local slot 1 both use port 8001: give each slot its own port"
    );
    assert!(e("- gpus=0\n- gpus=1\n", "sim.spec")
        .starts_with("local slot 0 and local slot 1 both swap sim.spec: give each slot"));
    assert!(e("- gpus=0\n- slot=1\n", "s-{slot}").starts_with("local slot 1 names no GPUs"));
    assert!(e("- slot=0\n- slot=0 exec=x\n", "s").contains("the same slot twice"));
    assert_eq!(
        e("- gpus=0 port=x\n", "s"),
        "--hosts p line 1: port=x: not a port number"
    );
    // Slots of two machines may share numbers, GPUs and ports.
    assert!(pool("- gpus=0 port=1\nh gpus=0 port=1\n", "s-{slot}", None).is_ok());
    let sp = |gpus, per| Split { gpus, per };
    let e = |text: &str, s: Split<'_>| pool(text, "s-{slot}", Some(&s)).unwrap_err();
    assert!(e("-", sp("0,1", 4)).contains("fewer than one slot's --gpus-per-config 4"));
    assert!(e("-", sp("0,1,2", 2)).contains("3 GPUs do not split into slots of 2"));
    assert!(e("-", sp("0,0", 1)).contains("GPU '0' is listed twice"));
    assert!(e("- gpus=1", sp("0", 1)).contains("line 1: --gpus splits each host"));
}

#[test]
fn a_port_read_from_the_targets_is_checked_too() {
    let h = pool("- gpus=0\n- gpus=1\n", "s-{slot}", None).unwrap();
    assert_eq!(read_ports(&h, |_| None), Ok(()), "not read yet");
    assert_eq!(
        read_ports(&h, |h| Some(h.slot.as_deref().map(|_| 9)))
            .unwrap_err()
            .to_string(),
        "local slot 0 and local slot 1 both use port 9: give each slot its own port"
    );
    assert!(read_ports(&h, |_| Some(None))
        .unwrap_err()
        .to_string()
        .contains("give port=N"));
    let n = |h: &Host| h.slot.as_deref().and_then(|s| s.parse::<u16>().ok());
    assert_eq!(read_ports(&h, |h| Some(n(h).map(|k| 8000 + k))), Ok(()));
}
