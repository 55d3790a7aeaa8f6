//! Measurements taken beside another GPU slot's work (`sweep` with slots:
//! each bench record's `slot.beside` says what the machine's other slots
//! did during the level). A level measured while another slot loaded its
//! model shares PCIe and host memory bandwidth with the host-to-device
//! copies; one measured beside another bench (`sweep --bench-together`)
//! shares the machine with it. Neither is dropped: each is counted once,
//! in a warning every format carries.

use sweepkit::records::SlotUse;

use crate::input::{Body, Obs};

/// The warnings for the bench records in `obs` taken beside another
/// slot's bench or load.
pub fn warnings(obs: &[Obs]) -> Vec<String> {
    let slots: Vec<SlotUse> = obs
        .iter()
        .filter_map(|o| match &o.body {
            Body::Bench(v) => serde_json::from_value(v.get("slot")?.clone()).ok(),
            Body::Failure(_) => None,
        })
        .collect();
    let of = slots.len();
    let bench = slots.iter().filter(|s| s.beside_bench()).count();
    let load = slots.iter().filter(|s| s.beside_load()).count();
    let mut out = Vec::new();
    if bench > 0 {
        out.push(format!(
            "{bench} of {of} slot measurement(s) ran while another GPU slot of the machine \
             was benchmarking (sweep --bench-together): they share its PCIe, host memory \
             and CPU; sweep without --bench-together measures one slot at a time"
        ));
    }
    if load > 0 {
        out.push(format!(
            "{load} of {of} slot measurement(s) ran while another GPU slot of the machine \
             was loading its model (host-to-device copies share PCIe and host memory \
             bandwidth): check a close pick against a one-slot run"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(slot: serde_json::Value) -> Obs {
        Obs {
            source: "r".into(),
            line: 1,
            config: Default::default(),
            level: None,
            body: Body::Bench(json!({"type": "bench", "slot": slot})),
            simulated: true,
            partial: false,
            host: None,
            schedule: None,
        }
    }

    #[test]
    fn each_kind_of_company_is_counted_once() {
        let beside = |a: &str| {
            json!({"machine": "local", "slot": "0",
                "beside": [{"slot": "1", "activity": ["idle", a]}]})
        };
        let o = [
            obs(beside("loading")),
            obs(beside("loading")),
            obs(beside("benchmarking")),
            obs(beside("idle")),
        ];
        let w = warnings(&o);
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("1 of 4 slot measurement(s) ran while another GPU slot"));
        assert!(w[1].starts_with("2 of 4 slot measurement(s)") && w[1].contains("loading"));
        assert!(warnings(&o[3..]).is_empty());
        assert!(warnings(&[]).is_empty());
    }
}
