//! The vllm personality reads vLLM's dotted JSON flags as vLLM 0.32 does:
//! each command line below goes through the real
//! `vllm.utils.argparse_utils.FlexibleArgumentParser.parse_args` (the
//! vLLM venv of `make real-peer`) and through llm-sim's `flexible::vllm_argv`,
//! and both must end with the same `--speculative-config` object. The
//! first line is the sweep's own form, which llm-sim once refused
//! (`--speculative-config.method eagle` beside the per-batch schedule).
//! Needs `make real-peer` (its manifest's `vllm`); one Python start, about
//! 15 s.

use serde_json::Value;

const LINES: [&str; 5] = [
    "--speculative-config.method eagle --port 8000 \
     --speculative-config.num_speculative_tokens 4 \
     --speculative-config.num_speculative_tokens_per_batch_size [[1,1,4],[2,64,1]]",
    "--speculative_config.num_speculative_tokens=2 --speculative_config.model=d",
    r#"--speculative-config {"method":"ngram","prompt_lookup_max":5} --speculative-config.num_speculative_tokens 3"#,
    "--speculative-config.method eagle --speculative-config.draft_tensor_parallel_size 1k",
    "--speculative-config.num_speculative_tokens_per_batch_size [[1,4,3]] \
     --speculative-config.num_speculative_tokens_per_batch_size [[5,8,1]]",
];

/// What vLLM's parser makes of each line: `--speculative-config` as JSON.
const VLLM: &str = r#"
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
out = []
for line in json.loads(sys.stdin.read()):
    p = FlexibleArgumentParser()
    p.add_argument("--speculative-config")
    p.add_argument("--port")
    out.append(json.loads(p.parse_args(line).speculative_config))
print(json.dumps(out))
"#;

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// llm-sim's reading: the last `--speculative-config` value, as JSON.
fn sim_reading(line: &str) -> Value {
    let mut argv = vec!["llm-sim".to_string(), "--personality".into(), "vllm".into()];
    argv.extend(words(line));
    let out = llm_sim::flexible::vllm_argv(argv);
    let at = out
        .iter()
        .rposition(|w| w == "--speculative-config")
        .expect("a --speculative-config word");
    serde_json::from_str(&out[at + 1]).unwrap()
}

#[test]
fn dotted_speculative_config_reads_as_vllms_own_parser_reads_it() {
    let p = testkit::realpeer::Peers::load(&["vllm"]);
    let python = p.get("vllm").with_file_name("python");
    let lines: Vec<Vec<String>> = LINES.iter().map(|l| words(l)).collect();
    let mut c = std::process::Command::new(python);
    c.args(["-c", VLLM]);
    let r = testkit::run(c, &serde_json::to_string(&lines).unwrap());
    r.expect_code(0);
    let vllm: Vec<Value> = serde_json::from_str(r.stdout().lines().last().unwrap()).unwrap();
    assert_eq!(vllm.len(), LINES.len());
    for (line, want) in LINES.iter().zip(&vllm) {
        assert_eq!(&sim_reading(line), want, "{line}");
    }
}
