//! The fields summarize reads from the records it keeps as JSON (a bench
//! record's metrics are looked up by path), typed once, with the record
//! contract's vocabularies (`load.mode`, `method`, `spec.source`). Each is
//! read leniently: absent, `null` or of another type reads as `None`, so a
//! record of an older or newer tool still counts as far as it goes.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use sweepkit::records::{LoadMode, SpecSource, SwapMethod};

/// One field read leniently: `None` when absent or not a `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Lenient(serde_json::from_value(v).ok()))
    }
}

/// The top-level fields summarize reads, of any record type.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Head {
    /// The record's `type` tag.
    #[serde(rename = "type")]
    pub record_type: Lenient<String>,
    pub schema: Lenient<u64>,
    /// A bench record of a level cut short.
    pub partial: Lenient<bool>,
    /// A failure record's stage, kind and reason, as written (a kind this
    /// version does not know is still shown).
    pub stage: Lenient<String>,
    pub kind: Lenient<String>,
    pub reason: Lenient<String>,
    /// A swap record's method.
    pub method: Lenient<SwapMethod>,
    /// A ready record's outcome, as written.
    pub outcome: Lenient<String>,
    pub load: Lenient<LoadHead>,
    pub spec: Lenient<SpecHead>,
    pub provenance: Lenient<ProvenanceHead>,
    /// What a record knows of its server; a schedule's `server` (its
    /// server's name, a string) reads as absent.
    pub server: Lenient<ServerHead>,
    /// A failure record's host (others carry it under `server`).
    pub host: Lenient<HostHead>,
    /// A failure record's class, as written.
    pub class: Lenient<String>,
    pub exit_code: Lenient<i64>,
    pub log_tail: Lenient<Vec<Lenient<String>>>,
    /// A swap record's new command line.
    pub exec_start: Lenient<Vec<Lenient<String>>>,
    /// A schedule record's server flags.
    pub flags: Lenient<Vec<Lenient<String>>>,
    /// The record this one's tool read from stdin, and so on up the chain.
    pub upstream: Lenient<Box<Head>>,
}

/// Who wrote the record, when.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ProvenanceHead {
    pub tool: Lenient<String>,
    pub version: Lenient<String>,
    pub started_at: Lenient<String>,
    pub finished_at: Lenient<String>,
}

/// What a record knows of the server (kind and host as written).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct ServerHead {
    pub kind: Lenient<String>,
    pub version: Lenient<String>,
    pub model: Lenient<String>,
    pub simulated: Lenient<bool>,
    pub argv: Lenient<Vec<Lenient<String>>>,
    pub host: Lenient<HostHead>,
}

/// The machine a record ran on.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct HostHead {
    pub name: Lenient<String>,
    pub exec_prefix: Lenient<String>,
    pub hostname: Lenient<String>,
    pub fingerprint: Lenient<String>,
    /// One entry per GPU (only counted here).
    pub gpus: Lenient<Vec<Value>>,
}

/// The strings of a list, skipping items that are not strings.
pub fn words(list: &Lenient<Vec<Lenient<String>>>) -> Vec<&str> {
    list.0
        .iter()
        .flatten()
        .filter_map(|w| w.0.as_deref())
        .collect()
}

/// A number written as a JSON number or as text (`"4"`, as CSV input
/// holds it): `None` when it is neither, or not a `T`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Numeric<T>(pub Option<T>);

impl<'de, T: DeserializeOwned + std::str::FromStr> Deserialize<'de> for Numeric<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let number = match Value::deserialize(d)? {
            n @ Value::Number(_) => serde_json::from_value(n).ok(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(Numeric(number))
    }
}

/// `load`: what decides a bench record's level.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct LoadHead {
    pub mode: Lenient<LoadMode>,
    pub concurrency: Numeric<u64>,
    pub rate_rps: Numeric<f64>,
}

/// `spec`: where the speculative-decoding figures came from.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct SpecHead {
    pub source: Lenient<SpecSource>,
}

impl Head {
    /// The fields of `rec`; all `None` when it is not an object.
    pub fn of(rec: &Value) -> Head {
        Head::deserialize(rec).unwrap_or_default()
    }

    /// The `type` tag, when it is a string.
    pub fn record_type(&self) -> Option<&str> {
        self.record_type.0.as_deref()
    }

    /// `server` when it is an object.
    pub fn server_info(&self) -> Option<&ServerHead> {
        self.server.0.as_ref()
    }

    /// This record and each it carries upstream, in order.
    pub fn chain(&self) -> impl Iterator<Item = &Head> {
        std::iter::successors(Some(self), |h| h.upstream.0.as_deref())
    }

    /// The host: `server.host`, else a failure's own `host`.
    pub fn host(&self) -> Option<&HostHead> {
        let on_server = self.server_info().and_then(|s| s.host.0.as_ref());
        on_server.or(self.host.0.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_of_another_type_read_as_absent() {
        let h = Head::of(&json!({
            "type": "bench", "schema": 1.5, "partial": "yes",
            "load": {"mode": "open"}, "spec": {"source": "gauge"}, "extra": [1]
        }));
        assert_eq!(h.record_type(), Some("bench"));
        assert_eq!((h.schema.0, h.partial.0), (None, None));
        let load = h.load.0.unwrap();
        assert_eq!(load.mode.0, Some(LoadMode::Open));
        assert_eq!(h.spec.0.unwrap().source.0, Some(SpecSource::Gauge));
        assert!(Head::of(&json!([1, 2])).record_type().is_none());
        let s = Head::of(&json!({"type": "swap", "method": "dry-run"}));
        assert_eq!(s.method.0, Some(SwapMethod::DryRun));
    }
}
