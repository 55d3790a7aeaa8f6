//! `sweep --validate-on`'s replays (records with a `validation` object,
//! `sweepkit::records::VALIDATION_FIELD`): set apart by input/, never a
//! cell, and reported after the table, one line each:
//! "validated on FILE: the pick (k=3): goodput X req/s under TERMS, N of M
//! within". N and M are loadgen's: M every request the replay sent
//! (completed, failed, cancelled), N its `throughput.slo_attainment` of M.

use serde_json::{json, Value};

use crate::wording::num;

/// The lines for every validation record, in file order.
pub fn text(records: &[Value]) -> String {
    records.iter().map(|r| line(r) + "\n").collect()
}

/// The validations for `--format json` (each summary record's
/// `validations`): what was replayed, against which config, what came of
/// it, and the line the text shows.
pub fn json(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .map(|r| {
            let v = &r[sweepkit::records::VALIDATION_FIELD];
            let (within, total) = counts(r);
            let t = &r["throughput"];
            json!({
                "of": v["of"],
                "trace": v["trace"],
                "slo": v["slo"],
                "config": r["config"],
                "failed": r["type"] == "failure",
                "reason": r.get("reason"),
                "requests": total,
                "completed": r["counts"]["completed"],
                "within_slo": within,
                "requests_per_s": t.get("requests_per_s"),
                "goodput_req_per_s": t.get("goodput_req_per_s"),
                "line": line(r),
            })
        })
        .collect()
}

/// The HTML report's section: one item per validation.
pub fn html(records: &[Value]) -> String {
    if records.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("<section id=\"validations\"><h2>Validated on the trace</h2>\n<ul>\n");
    for r in records {
        out += &format!(
            "<li class=\"validation\">{}</li>\n",
            crate::plot::chart::esc(&line(r))
        );
    }
    out + "</ul></section>\n"
}

/// (requests within the SLO when loadgen judged one, every request sent):
/// M is every request the replay sent (completed, failed, cancelled), N
/// its `throughput.slo_attainment` of M.
fn counts(r: &Value) -> (Option<u64>, u64) {
    let c = &r["counts"];
    let total: u64 = ["completed", "failed", "cancelled"]
        .iter()
        .filter_map(|k| c[*k].as_u64())
        .sum();
    let t = &r["throughput"];
    let within = t["goodput_req_per_s"]
        .as_f64()
        .and(t["slo_attainment"].as_f64());
    (within.map(|a| (a * total as f64).round() as u64), total)
}

/// One record's line.
fn line(r: &Value) -> String {
    let v = &r[sweepkit::records::VALIDATION_FIELD];
    let file = v["trace"].as_str().unwrap_or("?");
    let of = match v["of"].as_str() {
        Some("schedule") => "the schedule".to_string(),
        _ => "the pick".to_string(),
    };
    let config = config_label(r);
    let head = format!("validated on {file}: {of}{config}");
    if r["type"] == "failure" {
        let why = r["reason"].as_str().unwrap_or("no reason given");
        return format!("{head}: the replay failed ({why})");
    }
    let (within, total) = counts(r);
    let t = &r["throughput"];
    match (v["slo"].as_str(), t["goodput_req_per_s"].as_f64(), within) {
        (Some(slo), Some(g), Some(within)) => format!(
            "{head}: goodput {} req/s under {slo}, {within} of {total} within",
            num(g)
        ),
        _ => format!(
            "{head}: {} req/s, {} of {total} completed (no --slo: no goodput)",
            num(t["requests_per_s"].as_f64().unwrap_or(0.0)),
            r["counts"]["completed"].as_u64().unwrap_or(0)
        ),
    }
}

/// " (k=3)": the config the replay ran against, when its record says.
fn config_label(r: &Value) -> String {
    let Some(map) = r["config"].as_object().filter(|m| !m.is_empty()) else {
        return String::new();
    };
    let kv: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), String::from)
            )
        })
        .collect();
    format!(" ({})", kv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pick_and_a_schedule_each_get_their_line() {
        let pick = serde_json::json!({
            "type": "bench", "config": {"k": "3"},
            "counts": {"completed": 39, "failed": 1, "cancelled": 0},
            "throughput": {"requests_per_s": 4.0, "goodput_req_per_s": 3.5, "slo_attainment": 0.9},
            "validation": {"of": "pick", "trace": "t.jsonl", "slo": "ttft_ms<=500"}
        });
        let sched = serde_json::json!({
            "type": "failure", "config": {"schedule": "vllm"}, "reason": "server died",
            "validation": {"of": "schedule", "trace": "t.jsonl", "slo": null}
        });
        let plain = serde_json::json!({
            "type": "bench", "config": {},
            "counts": {"completed": 10, "failed": 0},
            "throughput": {"requests_per_s": 2.0},
            "validation": {"of": "pick", "trace": "t.jsonl", "slo": null}
        });
        assert_eq!(
            text(&[pick, sched, plain]),
            "validated on t.jsonl: the pick (k=3): goodput 3.50 req/s under ttft_ms<=500, 36 of 40 within\n\
             validated on t.jsonl: the schedule (schedule=vllm): the replay failed (server died)\n\
             validated on t.jsonl: the pick: 2 req/s, 10 of 10 completed (no --slo: no goodput)\n"
        );
    }

    #[test]
    fn json_and_html_carry_the_same_validations() {
        let pick = serde_json::json!({
            "type": "bench", "config": {"k": "<3>"},
            "counts": {"completed": 39, "failed": 1, "cancelled": 0},
            "throughput": {"requests_per_s": 4.0, "goodput_req_per_s": 3.5, "slo_attainment": 0.9},
            "validation": {"of": "pick", "trace": "t.jsonl", "slo": "ttft_ms<=500"}
        });
        let j = json(std::slice::from_ref(&pick));
        assert_eq!(j[0]["config"]["k"], "<3>");
        assert_eq!(
            (j[0]["requests"].as_u64(), j[0]["within_slo"].as_u64()),
            (Some(40), Some(36))
        );
        assert_eq!(j[0]["goodput_req_per_s"], 3.5);
        assert_eq!(j[0]["failed"], false);
        assert_eq!(j[0]["line"], line(&pick));
        let h = html(&[pick]);
        assert!(h.contains("<section id=\"validations\">"), "{h}");
        assert!(
            h.contains("the pick (k=&lt;3&gt;): goodput 3.50 req/s"),
            "{h}"
        );
        assert_eq!(html(&[]), "");
    }
}
