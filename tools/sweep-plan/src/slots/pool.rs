//! A pool's slots as sweep.sh runs them: each slot's `{port}` read from
//! its origin (the dry run of its target, read for every slot before the
//! first config starts), the words of its bench stage (its machine's
//! activity log and lock under `RESULTS.fleet/`), and how many configs
//! and benches run at once, for the progress line's ETA.

use crate::host::{cksum, Host};
use crate::slots::layout::{self, SlotError};
use crate::{origin, preflight};

/// Where pool host `id` of results file `results` keeps its origin.
pub fn origin_file(results: &str, id: &str) -> String {
    format!("{results}.fleet/origin-{id}.jsonl")
}

/// The port the target of origin file `file` listens on, as its dry run
/// read it: `None` when there is no origin yet, `Some(None)` when the
/// target named none.
pub fn origin_port(file: &str) -> Option<Option<u16>> {
    let text = std::fs::read_to_string(file).ok()?;
    let o = origin::find(&text)?;
    let swap = o.upstream.as_ref().and_then(|u| origin::swap_of(u).ok());
    Some(
        swap.and_then(|s| preflight::target_port(&s))
            .map(|(p, _)| p),
    )
}

/// Fill each slot's `{port}` from its origin where read, after checking
/// that no two slots of a machine share a port.
pub fn fill_ports(hosts: &mut [Host], results: &str) -> Result<(), SlotError> {
    let port = |h: &Host| origin_port(&origin_file(results, &h.id));
    layout::read_ports(hosts, port)?;
    for h in hosts.iter_mut().filter(|h| h.url.contains("{port}")) {
        if let Some(Some(p)) = port(h) {
            h.url = h.url.replace("{port}", &p.to_string());
        }
    }
    Ok(())
}

/// The words of slot `h`'s bench stage (`sweep-plan slot-bench ... --`,
/// before loadgen's); none for a host that is no slot.
pub fn bench_words(h: &Host, results: &str, together: bool) -> Vec<String> {
    let Some(slot) = &h.slot else {
        return Vec::new();
    };
    let m = cksum(h.machine().as_bytes());
    let mut w: Vec<String> = ["slot-bench", "--activity"].map(String::from).into();
    w.push(format!("{results}.fleet/activity-{m}.jsonl"));
    if !together {
        w.extend(["--lock".into(), format!("{results}.fleet/bench-{m}.lock")]);
    }
    w.extend([
        "--machine".into(),
        h.machine().into(),
        "--slot".into(),
        slot.clone(),
    ]);
    if let Some(g) = &h.gpus {
        w.extend(["--gpus".into(), g.clone()]);
    }
    w.push("--".into());
    w
}

/// How many configs run at once (every host and slot) and how many
/// benches (a machine's slots take turns unless `together`).
pub fn lanes(hosts: &[Host], together: bool) -> (usize, usize) {
    let mut machines: Vec<&str> = Vec::new();
    let mut benches = 0;
    for h in hosts {
        match (&h.slot, together) {
            (Some(_), false) if machines.contains(&h.machine()) => {}
            (Some(_), false) => machines.push(h.machine()),
            _ => {}
        }
        if h.slot.is_none() || together {
            benches += 1;
        }
    }
    (hosts.len(), benches + machines.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::{parse, Templates};
    use crate::slots::layout::Split;

    fn slots(text: &str, gpus: Option<&str>) -> Vec<Host> {
        let t = Templates {
            url: "http://127.0.0.1:{port}",
            target: Some("s-{slot}"),
        };
        let sp = gpus.map(|gpus| Split { gpus, per: 1 });
        parse(text, Some("p"), &t, sp.as_ref()).unwrap()
    }

    #[test]
    fn ports_come_from_the_origins_once_read() {
        let dir = testkit::temp_dir("slot-ports");
        let results = dir.join("r.jsonl").to_string_lossy().into_owned();
        std::fs::create_dir_all(format!("{results}.fleet")).unwrap();
        let mut h = slots("-", Some("0,1"));
        let origin = |port: u16| {
            format!(
                r#"{{"type":"origin","schema":2,"config":{{"k":"1"}},"provenance":{{"tool":"t","version":"v","started_at":"","finished_at":""}},"upstream":{{"type":"swap","schema":2,"config":{{}},"provenance":{{"tool":"t","version":"v","started_at":"","finished_at":""}},"target":{{"manager":"process","unit":"s","port":{port}}},"changes":[],"exec_start":["x"],"stop":{{"result":"","duration_s":0}},"start":{{"started_at":""}},"method":"dry-run"}}}}"#
            ) + "\n"
        };
        fill_ports(&mut h, &results).unwrap();
        assert_eq!(h[0].url, "http://127.0.0.1:{port}", "no origin yet");
        std::fs::write(origin_file(&results, &h[0].id), origin(8001)).unwrap();
        std::fs::write(origin_file(&results, &h[1].id), origin(8001)).unwrap();
        let e = fill_ports(&mut h, &results).unwrap_err().to_string();
        assert!(e.contains("both use port 8001"), "{e}");
        std::fs::write(origin_file(&results, &h[1].id), origin(8002)).unwrap();
        fill_ports(&mut h, &results).unwrap();
        assert_eq!(h[1].url, "http://127.0.0.1:8002");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_slots_bench_words_and_the_lanes() {
        let h = slots("-\nroot@g", Some("0,1"));
        let w = bench_words(&h[1], "r", false);
        let m = cksum(b"local");
        assert_eq!(
            w,
            [
                "slot-bench".to_string(),
                "--activity".into(),
                format!("r.fleet/activity-{m}.jsonl"),
                "--lock".into(),
                format!("r.fleet/bench-{m}.lock"),
                "--machine".into(),
                "local".into(),
                "--slot".into(),
                "1".into(),
                "--gpus".into(),
                "1".into(),
                "--".into(),
            ]
        );
        assert!(!bench_words(&h[1], "r", true).contains(&"--lock".to_string()));
        assert_eq!(lanes(&h, false), (4, 2));
        assert_eq!(lanes(&h, true), (4, 4));
        let plain = slots("- port=1 exec=a\n- port=2 exec=b", None);
        assert!(bench_words(&plain[0], "r", false).is_empty());
    }
}
