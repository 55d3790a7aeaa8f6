//! llm-sim flags that the tests of several tools start servers with, so
//! each is written once.

/// SGLang's speculative flags as SGLang accepts them: EAGLE, topk 1,
/// `steps` draft steps.
pub fn eagle(steps: &str) -> [&str; 6] {
    [
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-steps",
        steps,
    ]
}

/// `eagle(steps)`, then `extra`.
pub fn eagle_with<'a>(steps: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = eagle(steps).to_vec();
    v.extend_from_slice(extra);
    v
}
