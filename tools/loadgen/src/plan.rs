//! The plan: the flags read and validated once, before the first request,
//! into what each step needs (setup's server and prompts, each level's
//! bounds and record fields). Later steps never see `Args`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::cli::{Args, Endpoint};
use crate::level::Shape;
use crate::per_request::{parse_slo, Slo};
use crate::trace_prompts::TracePlan;
use crate::upstream_record::Upstream;
use crate::url_check::{check_against_target, is_loopback_url, tunnelled_via};

/// What the flags ask for, validated.
pub struct Plan {
    pub base_url: String,
    pub shapes: Vec<Shape>,
    pub slo: Option<Slo>,
    pub extra: Option<serde_json::Map<String, Value>>,
    pub started: SystemTime,
    pub endpoint_path: &'static str,
    pub level: LevelPlan,
    /// `--find-capacity`: search the concurrency instead of `shapes`.
    pub capacity: Option<crate::capacity::CapacityPlan>,
    /// `--trace`: the requests and their times, checked before any is sent.
    pub trace: Option<TracePlan>,
    /// `--sessions`: the sessions, checked before any turn is sent.
    pub sessions: Option<crate::session_plan::SessionsPlan>,
}

/// What the level loop needs from the flags, and nothing else.
#[derive(Debug, Clone)]
pub struct LevelPlan {
    /// Requests before each level's measurement (not counted).
    pub warmup: u64,
    /// `--requests`: measured requests per level (None: the default).
    pub requests: Option<u64>,
    /// `--duration`: measure for this long instead of a count.
    pub duration: Option<Duration>,
    /// Runs of each level in a row.
    pub repeat: u32,
    pub level_timeout: Duration,
    pub seed: u64,
    pub stream: bool,
    pub ignore_eos: bool,
    pub temperature: Option<f64>,
    pub max_tokens: u64,
    /// `--slo` as given, for the record's `load.slo`.
    pub slo_text: Option<String>,
    /// Scrape /metrics and /server_info for speculative decoding.
    pub scrape: bool,
    /// No progress bar or level lines on stderr.
    pub quiet: bool,
    pub client_threads: u32,
    pub requests_out: Option<PathBuf>,
    /// `--label`: the run's name, written into each bench record.
    pub label: Option<String>,
    /// `--model` was given: setup asked the server nothing yet.
    pub model_given: bool,
    /// `--until-stable`, when given.
    pub until_stable: Option<UntilStable>,
    /// `--cancel-rate` with `--cancel-after`.
    pub cancel: Option<crate::level::Cancel>,
}

/// `--until-stable PCT` and its bounds.
#[derive(Debug, Clone, Copy)]
pub struct UntilStable {
    /// Target half-width, percent of the mean.
    pub pct: f64,
    /// `--min-requests` (None: the level's default count, at least 20).
    pub min_requests: Option<u64>,
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow!(msg))
}

impl Plan {
    pub fn from_args(a: &Args, up: &Upstream) -> Result<Plan, Exit> {
        let base_url = base_url(a, up)?;
        let sessions = match &a.sessions {
            None => None,
            Some(p) => Some(crate::session_plan::load(p, a.block_size, a.think_time)?),
        };
        let shapes = match &sessions {
            Some(sp) => session_shapes(a, sp)?,
            None => shapes(a)?,
        };
        let trace = match &a.trace {
            None => None,
            Some(p) => Some(crate::trace_prompts::load(
                p,
                a.block_size,
                a.trace_start,
                a.trace_end,
            )?),
        };
        if a.requests == Some(0) {
            return Err(usage("--requests: must be above 0".into()));
        }
        if a.duration.is_some_and(|d| d.is_zero()) {
            return Err(usage("--duration: must be above 0".into()));
        }
        if a.max_tokens == 0 {
            return Err(usage("--max-tokens: must be above 0".into()));
        }
        let slo = match &a.slo {
            None => None,
            Some(s) => Some(parse_slo(s).map_err(|e| usage(format!("--slo: {e}")))?),
        };
        let extra = match &a.extra_body {
            None => None,
            Some(s) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(m)) => Some(m),
                Ok(_) => return Err(usage("--extra-body: not a JSON object".into())),
                Err(e) => return Err(usage(format!("--extra-body: not JSON: {e}"))),
            },
        };
        let endpoint_path = match a.endpoint {
            Endpoint::Completions => "/v1/completions",
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Generate => "/generate",
        };
        Ok(Plan {
            base_url,
            shapes,
            slo,
            extra,
            started: SystemTime::now(),
            endpoint_path,
            level: LevelPlan::from_args(a, until_stable(a)?),
            capacity: capacity(a)?,
            trace,
            sessions,
        })
    }
}

/// `--find-capacity TERMS` with its start (one --concurrency), limit and
/// budget.
fn capacity(a: &Args) -> Result<Option<crate::capacity::CapacityPlan>, Exit> {
    let Some(text) = &a.find_capacity else {
        return Ok(None);
    };
    let terms =
        crate::capacity::parse_terms(text).map_err(|e| usage(format!("--find-capacity: {e}")))?;
    let start = match a.concurrency.as_deref() {
        None => 1,
        Some([c]) => *c,
        Some(_) => {
            return Err(usage(
                "--find-capacity: give one --concurrency, the level it starts from".into(),
            ))
        }
    };
    if a.repeat > 1 {
        return Err(usage(
            "--find-capacity: --repeat is not supported; each level is run once".into(),
        ));
    }
    if start > a.max_concurrency {
        return Err(usage(format!(
            "--find-capacity: the start --concurrency {start} is above --max-concurrency {}",
            a.max_concurrency
        )));
    }
    Ok(Some(crate::capacity::CapacityPlan {
        text: text.trim().to_string(),
        terms,
        start,
        max: a.max_concurrency,
        budget: a.level_budget,
    }))
}

impl LevelPlan {
    fn from_args(a: &Args, until_stable: Option<UntilStable>) -> LevelPlan {
        LevelPlan {
            // A trace replays from its first line: a warm-up request would
            // fill the prefix cache before the trace's own first use.
            // Sessions likewise: their first turns are the cold ones.
            warmup: if a.trace.is_some() || a.sessions.is_some() {
                0
            } else {
                a.warmup
            },
            requests: a.requests,
            duration: a.duration,
            repeat: a.repeat,
            level_timeout: a.level_timeout,
            seed: a.seed,
            stream: !a.no_stream,
            ignore_eos: a.ignore_eos,
            temperature: a.temperature,
            max_tokens: a.max_tokens,
            slo_text: a.slo.clone(),
            scrape: !a.no_scrape,
            quiet: a.quiet,
            client_threads: a.client_threads,
            requests_out: a.requests_out.clone(),
            label: a.label.clone(),
            model_given: a.model.is_some(),
            until_stable,
            cancel: a.cancel_rate.map(|rate| crate::level::Cancel {
                rate,
                after: a.cancel_after.unwrap_or_default(),
                seed: a.seed,
            }),
        }
    }
}

/// The server's base URL: given, or the upstream record's (refused when
/// that was probed through a tunnel and means another machine).
fn base_url(a: &Args, up: &Upstream) -> Result<String, Exit> {
    let given = a.base_url.clone().or_else(|| a.url.clone());
    let from_upstream = up.server.as_ref().and_then(|s| s.base_url.clone());
    if given.is_none() {
        if let (Some(url), Some(via)) = (&from_upstream, tunnelled_via(up)) {
            if is_loopback_url(url) {
                return Err(usage(format!(
                    "the ready record's {url} was probed through a tunnel ({via}); \
                     from here it would be this machine: give --url with an address \
                     that reaches the server from here (e.g. after ssh -L)"
                )));
            }
        }
    }
    if let Some(url) = &given {
        check_against_target(url, up);
    }
    let base_url = given
        .or(from_upstream)
        .ok_or_else(|| usage("no server URL: give URL or --url, or pipe a ready record".into()))?;
    if !base_url.starts_with("http://") {
        return Err(usage(format!(
            "URL '{base_url}': only http:// is supported"
        )));
    }
    // The OpenAI API base (`.../v1`, as client libraries take it) is the
    // server root plus /v1: the endpoints are the root's.
    let base_url = sweepkit::api::root_of(&base_url).unwrap_or(&base_url);
    Ok(base_url.trim_end_matches('/').to_string())
}

/// `--until-stable PCT` (`5` or `5%`) with `--min-requests` and the cap.
fn until_stable(a: &Args) -> Result<Option<UntilStable>, Exit> {
    let Some(text) = &a.until_stable else {
        return Ok(None);
    };
    let pct = text
        .trim()
        .strip_suffix('%')
        .unwrap_or(text.trim())
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
        .ok_or_else(|| {
            usage(format!(
                "--until-stable '{text}': expected a percentage above 0 and below 100 \
                 (e.g. 5 or 5%)"
            ))
        })?;
    if a.min_requests == Some(0) {
        return Err(usage("--min-requests: must be above 0".into()));
    }
    if let (Some(min), Some(max)) = (a.min_requests, a.requests) {
        if max < min {
            return Err(usage(format!(
                "--max-requests {max} is below --min-requests {min}"
            )));
        }
    }
    Ok(Some(UntilStable {
        pct,
        min_requests: a.min_requests,
    }))
}

/// A sessions level per `--concurrency` (live sessions, closed loop; one
/// of concurrency 1 for a file without start times), else one per
/// `--speed`, each session starting at its recorded time.
fn session_shapes(a: &Args, sp: &crate::session_plan::SessionsPlan) -> Result<Vec<Shape>, Exit> {
    let timed = sp.file.timed();
    if a.concurrency.is_some() || !timed {
        if a.speed.as_ref().is_some_and(|s| s.len() > 1) {
            return Err(usage(
                "--speed: one value with closed-loop sessions (it scales their think \
                 times); give several only to replay timed sessions without --concurrency"
                    .into(),
            ));
        }
        let cs = a.concurrency.clone().unwrap_or_else(|| vec![1]);
        return Ok(cs
            .into_iter()
            .map(|concurrency| Shape::Closed { concurrency })
            .collect());
    }
    let speeds = a.speed.clone().unwrap_or_else(|| vec![1.0]);
    Ok(speeds
        .into_iter()
        .map(|speed| Shape::Trace {
            speed,
            max_inflight: a.max_inflight,
        })
        .collect())
}

/// One shape per level: a trace replay per speed, an open loop per rate,
/// else closed per concurrency.
fn shapes(a: &Args) -> Result<Vec<Shape>, Exit> {
    if a.max_inflight == 0 {
        return Err(usage("--max-inflight: must be above 0".into()));
    }
    if a.trace.is_some() {
        if let (Some(s), Some(e)) = (a.trace_start, a.trace_end) {
            if e <= s {
                return Err(usage("--trace-end: must be after --trace-start".into()));
            }
        }
        let speeds = a.speed.clone().unwrap_or_else(|| vec![1.0]);
        return Ok(speeds
            .into_iter()
            .map(|speed| Shape::Trace {
                speed,
                max_inflight: a.max_inflight,
            })
            .collect());
    }
    Ok(match (&a.rate, &a.concurrency) {
        (Some(rates), _) => {
            if !(a.burstiness > 0.0 && a.burstiness.is_finite()) {
                return Err(usage(format!(
                    "--burstiness {}: must be above 0",
                    a.burstiness
                )));
            }
            rates
                .iter()
                .map(|&rate| Shape::Open {
                    rate,
                    burstiness: a.burstiness,
                    max_inflight: a.max_inflight,
                })
                .collect()
        }
        (None, Some(cs)) => cs
            .iter()
            .map(|&c| Shape::Closed { concurrency: c })
            .collect(),
        (None, None) => vec![Shape::Closed { concurrency: 1 }],
    })
}
