//! summarize's errors, one enum per concern (as hyperfine's `src/error.rs`):
//! each message is the one line summarize prints, each variant has its exit
//! code, so no caller tells errors apart by their text.

use sweepkit::exit;

use crate::metric::MetricError;

/// Why a flag's value does not parse: clap's value parsers return it, and
/// clap prints it after the flag's name as a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagValueError {
    /// The shared `--slo` syntax's own message (`sweepkit::slo::parse`).
    #[error("{0}")]
    Slo(String),
    #[error(
        "{metric}; summarize compares a level's figure, e.g. p99_{term} \
         (loadgen's per-request form)"
    )]
    SloMetric { metric: MetricError, term: String },
    #[error("\"{0}\": expected LEVEL:WEIGHT, e.g. c=16:0.5")]
    WeightTerm(String),
    #[error("\"{0}\": expected a level like c=16 or rate=4")]
    WeightLevel(String),
    #[error("\"{0}\": weight must be a number >= 0")]
    Weight(String),
    #[error("level {0} given twice")]
    LevelTwice(String),
    #[error("weights must not all be zero")]
    AllZero,
    #[error("\"{0}\": expected KEY=VALUE, e.g. speculative-num-steps=0")]
    KeyValue(String),
    #[error("\"{0}\": empty KEY")]
    EmptyKey(String),
    #[error("\"{0}\": expected a percentage like 2%")]
    Percent(String),
    #[error("\"{0}\": must be between 0% and 100%")]
    PercentRange(String),
}

/// Why a config's speculative depth cannot be read (`--schedule`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DepthError {
    #[error("speculative-config is not a JSON object: {0}")]
    NotAnObject(String),
    #[error("speculative-config without num_speculative_tokens")]
    NoTokens,
    #[error("{key} is not a whole number: {value}")]
    NotWhole { key: &'static str, value: String },
}

/// Why the results cannot be decided on as the flags ask (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    #[error("--baseline {key}={value}: no config has it (values of {key}: {have})")]
    NoSuchBaseline {
        key: String,
        value: String,
        /// The values the input has for `key`, or `none`.
        have: String,
    },
    #[error("--weights names {level}, which no record has (levels: {})", have.join(", "))]
    NoSuchWeightLevel { level: String, have: Vec<String> },
}

impl AnalysisError {
    /// The exit code summarize ends with.
    pub fn exit_code(&self) -> u8 {
        match self {
            AnalysisError::NoSuchBaseline { .. } | AnalysisError::NoSuchWeightLevel { .. } => {
                exit::USAGE
            }
        }
    }
}

/// Why results cannot be summarized as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsError {
    /// A single pick over hosts that differ (exit 55).
    #[error(
        "results come from hosts of different hardware or server version \
         ({list}): one pick \
         would compare the hardware, not the configs; give --per-host for \
         one summary per host, or --pool-hosts to rank them together"
    )]
    MixedHardware { list: String },
}

impl HostsError {
    /// The exit code summarize ends with (the shared table in sweepkit::exit).
    pub fn exit_code(&self) -> u8 {
        match self {
            HostsError::MixedHardware { .. } => exit::MIXED_HARDWARE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_is_one_line_with_its_exit_code() {
        let e = AnalysisError::NoSuchWeightLevel {
            level: "c=64".into(),
            have: vec!["c=1".into(), "c=16".into()],
        };
        assert_eq!(
            e.to_string(),
            "--weights names c=64, which no record has (levels: c=1, c=16)"
        );
        assert_eq!(e.exit_code(), exit::USAGE);
        let e = HostsError::MixedHardware {
            list: "a; b".into(),
        };
        assert!(!e.to_string().contains('\n'));
        assert_eq!(e.exit_code(), exit::MIXED_HARDWARE);
    }

    #[test]
    fn flag_and_depth_errors_say_what_was_wrong() {
        let e = FlagValueError::SloMetric {
            metric: MetricError::Unknown("ttft".into()),
            term: "ttft<=200".into(),
        };
        assert!(e
            .to_string()
            .starts_with("unknown metric \"ttft\": give a dotted path"));
        assert!(e
            .to_string()
            .ends_with("e.g. p99_ttft<=200 (loadgen's per-request form)"));
        assert_eq!(
            FlagValueError::Percent("x".into()).to_string(),
            "\"x\": expected a percentage like 2%"
        );
        let e = DepthError::NotWhole {
            key: "speculative-num-steps",
            value: "x".into(),
        };
        assert_eq!(
            e.to_string(),
            "speculative-num-steps is not a whole number: x"
        );
        assert_eq!(
            DepthError::NoTokens.to_string(),
            "speculative-config without num_speculative_tokens"
        );
    }
}
