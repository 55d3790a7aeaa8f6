//! Partial bench records: a level cut short (Ctrl-C) stays in the results
//! file as `"partial": true`, and `sweep.sh --resume` then appends a
//! complete record for the same config and level. The complete one wins;
//! the partial one is dropped with a note. A partial record with no
//! complete one beside it is all there is: it is kept, and its cell is
//! marked so nobody mistakes it for a full measurement.

use crate::input::{Body, Input, Obs};

fn is_bench(o: &Obs) -> bool {
    matches!(o.body, Body::Bench(_))
}

/// Drop partial bench records that a complete record for the same config
/// and level supersedes; note each one dropped and each one kept.
pub fn resolve(input: &mut Input) {
    let obs = std::mem::take(&mut input.obs);
    let complete_at = |p: &Obs| {
        obs.iter()
            .find(|o| is_bench(o) && !o.partial && o.level == p.level && o.config == p.config)
            .map(Obs::at)
    };
    let mut keep = Vec::with_capacity(obs.len());
    for o in &obs {
        if !(o.partial && is_bench(o)) {
            keep.push(true);
            continue;
        }
        let level = o.level.map(|l| l.label()).unwrap_or_default();
        match complete_at(o) {
            Some(full) => {
                input.notes.push(format!(
                    "{}: partial record for {level} (cut short) ignored: a complete \
                     record for the same config and level is at {full}",
                    o.at()
                ));
                keep.push(false);
            }
            None => {
                input.notes.push(format!(
                    "{}: {level} was cut short (partial) and has no complete record; \
                     its numbers are kept and marked partial",
                    o.at()
                ));
                keep.push(true);
            }
        }
    }
    input.obs = obs
        .into_iter()
        .zip(keep)
        .filter_map(|(o, k)| k.then_some(o))
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::read_source;

    fn bench(k: u32, c: u32, partial: bool, tps: u32) -> String {
        format!(
            r#"{{"type":"bench","config":{{"k":"{k}"}},"load":{{"mode":"closed","concurrency":{c}}},"throughput":{{"output_tok_per_s":{tps}}},"partial":{partial}}}"#
        )
    }

    #[test]
    fn partial_superseded_by_complete_is_dropped_else_kept() {
        let first = [bench(1, 4, true, 10), bench(2, 4, true, 30)].join("\n");
        let resumed = [bench(1, 4, false, 50), bench(1, 8, false, 60)].join("\n");
        let mut input = Input::default();
        read_source("a.jsonl", &first, &mut input).unwrap();
        read_source("b.jsonl", &resumed, &mut input).unwrap();
        resolve(&mut input);
        let kept: Vec<(String, bool)> = input.obs.iter().map(|o| (o.at(), o.partial)).collect();
        assert_eq!(
            kept,
            vec![
                ("a.jsonl: line 2".to_string(), true),
                ("b.jsonl: line 1".to_string(), false),
                ("b.jsonl: line 2".to_string(), false),
            ]
        );
        assert!(
            input.notes[0].starts_with("a.jsonl: line 1: partial record for c=4")
                && input.notes[0].ends_with("is at b.jsonl: line 1"),
            "{:?}",
            input.notes
        );
        assert!(
            input.notes[1].starts_with("a.jsonl: line 2: c=4 was cut short"),
            "{:?}",
            input.notes
        );
    }
}
