//! The server kinds wait-ready knows a health path for (`--server KIND`):
//! one enum for wait-ready's flag, sweep's flag (its names) and the
//! messages of both tools that say which to give. Records name the kind
//! in their own vocabulary (`records::ServerKind`, which also keeps a kind
//! this version does not know).

/// Known servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "args", derive(clap::ValueEnum))]
pub enum ServerKind {
    Sglang,
    Vllm,
    #[cfg_attr(
        feature = "args",
        value(name = "llama.cpp", alias = "llama-cpp", alias = "llamacpp")
    )]
    LlamaCpp,
    Openai,
    #[cfg_attr(feature = "args", value(name = "llm-sim"))]
    LlmSim,
}

impl ServerKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [ServerKind; 5] = [
        ServerKind::Sglang,
        ServerKind::Vllm,
        ServerKind::LlamaCpp,
        ServerKind::Openai,
        ServerKind::LlmSim,
    ];

    /// The name `--server` takes and records use (`server.kind`).
    pub const fn name(self) -> &'static str {
        match self {
            ServerKind::Sglang => "sglang",
            ServerKind::Vllm => "vllm",
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Openai => "openai",
            ServerKind::LlmSim => "llm-sim",
        }
    }
}

/// Each kind's name as `--server` takes it.
pub const NAMES: [&str; 5] = [
    ServerKind::ALL[0].name(),
    ServerKind::ALL[1].name(),
    ServerKind::ALL[2].name(),
    ServerKind::ALL[3].name(),
    ServerKind::ALL[4].name(),
];

/// `sglang, vllm, llama.cpp, openai, llm-sim`, for a message.
pub fn list() -> String {
    NAMES.join(", ")
}

#[cfg(all(test, feature = "args"))]
mod tests {
    use clap::ValueEnum;

    /// The names clap takes are the names records and messages use.
    #[test]
    fn the_flag_takes_the_kinds_names() {
        let names: Vec<String> = super::ServerKind::value_variants()
            .iter()
            .map(|k| k.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(names, super::NAMES);
    }
}
