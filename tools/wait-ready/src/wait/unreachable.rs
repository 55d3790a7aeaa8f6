//! When a target is unreachable rather than a server still loading: a
//! name that does not resolve (`--unresolved-after`), `--unreachable-after`,
//! and a port that never opened by the timeout; and when it answers, but
//! not at the probed path (`--not-found-after`) or not without an API key
//! (HTTP 401/403, at once).

use std::time::{Duration, Instant};

use super::{Plan, State};
use crate::probe::NetError;

/// The unreachable rules (see the man page): a name that has not resolved
/// for `unresolved_after`, then `unreachable_after`'s.
pub(super) fn unreachable(
    plan: &Plan,
    st: &[State],
    watched: bool,
    elapsed: Duration,
    now: Instant,
) -> Option<String> {
    if plan.invert {
        return None;
    }
    unresolved(plan, st, now).or_else(|| unreachable_after(plan, st, watched, elapsed))
}

/// A refused port is a server still loading, but a name that does not
/// resolve is almost always a typo: it is unreachable once it has not
/// resolved for `unresolved_after` (10 s by default), not at `--timeout`.
/// The grace is for Compose and Kubernetes, whose service names appear a
/// little after the container. Over SSH no name is resolved here (the far
/// side resolves it and says only "connect failed", read as refused), so
/// the rule never judges a far-side name by this machine's resolver.
fn unresolved(plan: &Plan, st: &[State], now: Instant) -> Option<String> {
    let grace = plan.unresolved_after?;
    plan.targets.iter().zip(st).find_map(|(t, s)| {
        let since = s.unresolved_since.filter(|_| !s.ok && !s.ever_open)?;
        if now.saturating_duration_since(since) < grace {
            return None;
        }
        let d = s.last.as_ref().map_or("", |p| p.detail.as_str());
        Some(format!(
            "unreachable: {}: {d}; the name has not resolved for {}: check it for a \
             typo, or give --unresolved-after DUR if it appears later (Compose, Kubernetes)",
            t.label,
            humantime::format_duration(grace)
        ))
    })
}

/// `--unreachable-after`: a target that never accepted a connection is
/// unreachable once it has passed, when its name does not resolve or there
/// is no route, or, with nothing watched that could say the server is
/// still loading, when it is refused.
fn unreachable_after(
    plan: &Plan,
    st: &[State],
    watched: bool,
    elapsed: Duration,
) -> Option<String> {
    let grace = plan.unreachable_after?;
    if elapsed < grace {
        return None;
    }
    for (t, s) in plan.targets.iter().zip(st) {
        if s.ok || s.ever_open {
            continue;
        }
        let Some(p) = &s.last else { continue };
        let hard = matches!(p.net, Some(NetError::Dns | NetError::NoRoute));
        let soft = matches!(p.net, Some(NetError::Refused | NetError::ConnectTimeout));
        if hard || (soft && !watched) {
            let hint = if hard {
                ""
            } else {
                "; nothing watched says a server is loading (give --pid, --unit or --log)"
            };
            return Some(format!(
                "unreachable: {}: {} for {}{hint}",
                t.label,
                p.detail,
                humantime::format_duration(grace)
            ));
        }
    }
    None
}

/// At the timeout, with nothing watched: a target whose port never opened
/// is unreachable (exit 12), not a slow load (124). A refused connection
/// meanwhile was a server still starting, as wait4x and
/// `curl --retry-connrefused` assume: SGLang and vLLM keep their port
/// closed while loading (SGLang's engine starts before uvicorn).
pub(super) fn never_opened(plan: &Plan, st: &[State], watched: bool) -> Option<String> {
    if plan.invert || watched {
        return None;
    }
    let (t, s) = plan
        .targets
        .iter()
        .zip(st)
        // No probe finished at all (the first one was still waiting for an
        // answer at the timeout): nothing says the port never opened.
        .find(|(_, s)| !s.ok && !s.ever_open && s.last.is_some())?;
    let d = s.last.as_ref().map_or("no answer", |p| p.detail.as_str());
    Some(format!(
        "unreachable: {}: {d}; the port never opened in {}",
        t.label,
        humantime::format_duration(plan.timeout)
    ))
}

/// A server that answers HTTP 404 or 405 is up and routing: no server
/// loads that way (llama-server answers 503 "Loading model" on every
/// route; vLLM and SGLang keep the port closed, then SGLang's /health
/// answers 503 until warm), so it is the probe's path that is wrong, as
/// `/` is without --server. Judged once it has held `not_found_after`.
pub(super) fn not_found(plan: &Plan, st: &[State], now: Instant) -> Option<String> {
    let grace = plan.not_found_after.filter(|_| !plan.invert)?;
    plan.targets.iter().zip(st).find_map(|(t, s)| {
        let since = s.not_found_since.filter(|_| !s.ok)?;
        if now.saturating_duration_since(since) < grace {
            return None;
        }
        let status = s.last.as_ref().and_then(|p| p.status).unwrap_or(404);
        Some(format!(
            "{}: HTTP {status} (no such path) for {}: the server answers, but not there; \
             give --server KIND ({}) or the health path in the URL \
             (http://HOST:PORT/health)",
            t.label,
            humantime::format_duration(grace),
            sweepkit::server_kind::list()
        ))
    })
}

/// A server that answers HTTP 401 or 403 wants an API key (or refused the
/// one sent): no server loads that way and no wait changes it, so the
/// first such answer decides (issue 46: it used to wait out --timeout).
pub(super) fn key_refused(plan: &Plan, st: &[State]) -> Option<String> {
    if plan.invert {
        return None;
    }
    plan.targets.iter().zip(st).find_map(|(t, s)| {
        let p = s.last.as_ref().filter(|p| !p.pass)?;
        let status = p.status.filter(|c| sweepkit::api::is_key_refusal(*c))?;
        Some(sweepkit::api::key_refused(
            &t.label,
            status,
            plan.req.bearer.is_some(),
            plan.openai,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Expect, StatusSet};
    use crate::cli::Backoff;
    use crate::probe::{Probe, RequestSpec};
    use crate::target::Target;
    use crate::wait::{Run, Schedule};

    fn plan(unresolved_after: Option<Duration>) -> Plan {
        let url = "http://no-such-host.invalid:8000/health";
        Plan {
            targets: vec![Target {
                label: url.into(),
                addr: crate::target::parse_addr(url).unwrap(),
                expect: Expect::status_only(StatusSet::success()),
            }],
            req: RequestSpec::default(),
            timeout: Duration::from_secs(60),
            attempt_timeout: Duration::from_secs(2),
            schedule: Schedule {
                interval: Duration::from_millis(50),
                max_interval: Duration::from_millis(100),
                backoff: Backoff::Exponential,
            },
            unreachable_after: None,
            unresolved_after,
            not_found_after: Some(Duration::from_secs(3)),
            invert: false,
            verbose: false,
            openai: false,
        }
    }

    fn failed(net: NetError, since: Option<Instant>) -> State {
        State {
            last: Some(Probe {
                port_open: false,
                status: None,
                net: Some(net),
                pass: false,
                detail: "name does not resolve (x)".into(),
            }),
            unresolved_since: since,
            ..State::default()
        }
    }

    #[test]
    fn a_name_that_does_not_resolve_is_unreachable_after_its_grace_only() {
        let t0 = Instant::now();
        let p = plan(Some(Duration::from_secs(10)));
        let st = [failed(NetError::Dns, Some(t0))];
        let at = |s: u64| {
            unreachable(
                &p,
                &st,
                true,
                Duration::from_secs(s),
                t0 + Duration::from_secs(s),
            )
        };
        assert_eq!(at(9), None, "within the grace");
        let why = at(10).expect("unreachable after 10 s, watched or not");
        assert!(why.contains("name does not resolve"), "{why}");
        assert!(why.contains("has not resolved for 10s"), "{why}");
        assert!(why.contains("--unresolved-after"), "{why}");
        // 50 s in (past the grace), for plan `p` and probe states `st`.
        let at_50s = |p: &Plan, st: &[State], watched: bool| {
            unreachable(
                p,
                st,
                watched,
                Duration::from_secs(50),
                t0 + Duration::from_secs(50),
            )
        };
        // `never` (None): only --timeout ends it.
        let never = plan(None);
        assert_eq!(at_50s(&never, &st, true), None);
        // A refused port is still a server loading; a port that was open
        // once is not a typo; --invert waits for down, not for a name.
        let refused = [failed(NetError::Refused, None)];
        assert_eq!(at_50s(&p, &refused, false), None);
        let mut opened = failed(NetError::Dns, Some(t0));
        opened.ever_open = true;
        assert_eq!(at_50s(&p, &[opened], true), None);
        let inv = Plan {
            invert: true,
            ..plan(Some(Duration::from_secs(1)))
        };
        assert_eq!(at_50s(&inv, &st, true), None);
    }

    #[test]
    fn a_404_is_the_wrong_path_after_its_grace_and_a_503_never() {
        let t0 = Instant::now();
        let p = plan(None);
        let answered = |status: u16, since: Option<Instant>| State {
            last: Some(Probe {
                port_open: true,
                status: Some(status),
                net: None,
                pass: false,
                detail: format!("HTTP {status}"),
            }),
            not_found_since: since,
            ever_open: true,
            ..State::default()
        };
        let at = |st: &State, s: u64| {
            not_found(&p, std::slice::from_ref(st), t0 + Duration::from_secs(s))
        };
        let nf = answered(404, Some(t0));
        assert_eq!(at(&nf, 2), None, "within the grace");
        let why = at(&nf, 3).expect("the wrong path after 3 s");
        assert!(
            why.contains("HTTP 404 (no such path)") && why.contains("--server KIND"),
            "{why}"
        );
        // A loading llama-server (503 on every route) is never judged.
        assert_eq!(at(&answered(503, None), 60), None);
        let never = Plan {
            not_found_after: None,
            ..plan(None)
        };
        assert_eq!(not_found(&never, &[nf], t0 + Duration::from_secs(60)), None);
    }

    #[test]
    fn a_401_or_403_wants_a_key_at_once_and_says_which_variable() {
        let p = plan(None);
        let answered = |status: u16, pass: bool| State {
            last: Some(Probe {
                port_open: true,
                status: Some(status),
                net: None,
                pass,
                detail: format!("HTTP {status}"),
            }),
            ever_open: true,
            ..State::default()
        };
        let why = key_refused(&p, &[answered(401, false)]).expect("decided");
        assert!(why.contains("HTTP 401 (unauthorized)"), "{why}");
        assert!(why.contains("set SWEEPKIT_API_KEY"), "{why}");
        assert!(!why.contains("OPENAI_API_KEY"), "{why}");
        let openai = Plan {
            openai: true,
            ..plan(None)
        };
        let why = key_refused(&openai, &[answered(403, false)]).unwrap();
        assert!(why.contains("(or OPENAI_API_KEY)"), "{why}");
        // Expected (--expect-status 401), a 503, --invert: not decided.
        assert_eq!(key_refused(&p, &[answered(401, true)]), None);
        assert_eq!(key_refused(&p, &[answered(503, false)]), None);
        let inv = Plan {
            invert: true,
            ..plan(None)
        };
        assert_eq!(key_refused(&inv, &[answered(401, false)]), None);
    }

    #[test]
    fn the_grace_restarts_when_the_name_resolved_in_between() {
        let p = plan(Some(Duration::from_secs(10)));
        let mut r = Run::new(&p);
        let t0 = r.t0;
        let dns = |detail: &str| Probe {
            port_open: false,
            status: None,
            net: Some(NetError::Dns),
            pass: false,
            detail: detail.into(),
        };
        r.launched = t0;
        r.record(vec![(0, dns("a"))], t0);
        r.launched = t0 + Duration::from_secs(5);
        r.record(vec![(0, dns("b"))], r.launched);
        assert_eq!(
            r.st[0].unresolved_since,
            Some(t0),
            "an unbroken run keeps its start"
        );
        // Resolved (refused: a server still loading), then not again.
        r.record(
            vec![(
                0,
                Probe {
                    net: Some(NetError::Refused),
                    ..dns("refused")
                },
            )],
            t0,
        );
        assert_eq!(r.st[0].unresolved_since, None);
        r.launched = t0 + Duration::from_secs(8);
        r.record(vec![(0, dns("c"))], r.launched);
        let now = t0 + Duration::from_secs(12);
        assert_eq!(unresolved(&p, &r.st, now), None, "4 s unresolved, not 12");
    }
}
