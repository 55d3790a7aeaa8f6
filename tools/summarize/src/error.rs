//! summarize's errors, one enum per concern (as hyperfine's `src/error.rs`):
//! each message is the one line summarize prints, each variant has its exit
//! code, so no caller tells errors apart by their text.

use sweepkit::exit;

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
}
