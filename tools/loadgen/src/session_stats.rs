//! A sessions level's own figures (the record's `load.workload.sessions`):
//! sessions completed or cut, turns not sent, TTFT of first turns apart
//! from later ones (whose history a prefix cache can hold), and the think
//! time kept against the think time asked. Read from the samples' turn
//! ids: a turn's asked think time is its schedule after the previous
//! reply's end, the kept one its send after that end.

use std::collections::HashMap;
use std::time::Instant;

use sweepkit::records::Workload;

use crate::client::Sample;
use crate::per_request::Derived;
use crate::stats::{round3, summarize};

/// Add what the level replayed to `w.sessions`; `derived` is per sample,
/// `turns[k]` the turns session k has in the file.
pub fn fill(w: &mut Workload, samples: &[Sample], derived: &[Option<Derived>], turns: &[usize]) {
    let Some(st) = w.sessions.as_mut() else {
        return;
    };
    let mut done: HashMap<(u32, u32), Instant> = HashMap::new();
    let mut sent_per_session: HashMap<u32, (u32, bool)> = HashMap::new();
    for s in samples {
        let Some(t) = s.turn else { continue };
        done.insert((t.session, t.turn), s.done);
        let e = sent_per_session.entry(t.session).or_insert((0, true));
        e.0 += 1;
        e.1 &= s.error.is_none() && !s.cancelled;
    }
    let (mut first, mut later, mut lag) = (Vec::new(), Vec::new(), Vec::new());
    let (mut asked, mut kept) = (0.0, 0.0);
    for (s, d) in samples.iter().zip(derived) {
        let Some(t) = s.turn else { continue };
        let ttft = d.as_ref().and_then(|d| d.ttft_ms);
        if t.turn == 0 {
            first.extend(ttft);
            continue;
        }
        later.extend(ttft);
        if let Some(prev) = done.get(&(t.session, t.turn - 1)) {
            let a = s.scheduled.saturating_duration_since(*prev).as_secs_f64();
            let k = s.sent.saturating_duration_since(*prev).as_secs_f64();
            asked += a;
            kept += k;
            lag.push((k - a) * 1e3);
        }
    }
    let sent = sent_per_session
        .values()
        .map(|(n, _)| *n as u64)
        .sum::<u64>();
    let complete =
        |k: &u32, (n, ok): &(u32, bool)| *ok && turns.get(*k as usize) == Some(&(*n as usize));
    st.sessions_completed = sent_per_session
        .iter()
        .filter(|(k, v)| complete(k, v))
        .count() as u64;
    st.sessions_cut = sent_per_session.values().filter(|(_, ok)| !ok).count() as u64;
    st.turns_not_sent = st.turns.saturating_sub(sent);
    st.ttft_first_turn_ms = (!first.is_empty()).then(|| summarize(&first));
    st.ttft_later_turns_ms = (!later.is_empty()).then(|| summarize(&later));
    st.think_time_scheduled_s = round3(asked);
    st.think_time_actual_s = round3(kept);
    st.think_lag_ms = (!lag.is_empty()).then(|| summarize(&lag));
}
