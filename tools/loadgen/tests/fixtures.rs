//! The peers' real response shapes (copied into tests/fixtures/) parse into
//! the same speculative-decoding and token fields.

use loadgen::client::ChunkMark;
use loadgen::per_request::{tokens_per_chunk, ITL_USAGE};
use loadgen::speculative;
use loadgen::sse::{self, Line, LineSplitter};
use sweepkit::records::SpecSource;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn chunks(text: &str) -> (Vec<sse::Chunk>, bool) {
    let mut s = LineSplitter::default();
    let (mut out, mut done) = (Vec::new(), false);
    // Fed in small pieces, as a socket would deliver them.
    for piece in text.as_bytes().chunks(7) {
        s.feed::<()>(piece, |line| {
            match sse::classify(line) {
                Line::Data(d) => out.push(sse::parse_chunk(d).unwrap()),
                Line::Done => done = true,
                Line::Other => {}
            }
            Ok(true)
        })
        .unwrap();
    }
    (out, done)
}

#[test]
fn vllm_metrics_deltas_give_acceptance_and_length() {
    let before = speculative::parse_metrics(&fixture("vllm_metrics_before.txt"));
    let after = speculative::parse_metrics(&fixture("vllm_metrics_after.txt"));
    assert_eq!(before.draft_tokens, 3000.0);
    // The per-position counter must not be summed into the total.
    assert_eq!(before.accepted_tokens, 2000.0);
    let s = speculative::from_deltas(before, after).unwrap();
    assert_eq!(s.source, SpecSource::Metrics);
    assert_eq!(s.draft_tokens, Some(1500));
    assert_eq!(s.accepted_tokens, Some(1200));
    assert_eq!(s.acceptance_rate, Some(0.8));
    assert_eq!(s.drafts, Some(500));
    // vLLM: mean acceptance length = 1 + accepted / drafts.
    assert_eq!(s.accept_length, Some(3.4));
}

#[test]
fn llamacpp_metrics_and_stream_timings_parse() {
    let m = speculative::parse_metrics(&fixture("llamacpp_metrics.txt"));
    assert!(m.present);
    assert_eq!(
        (m.draft_tokens, m.accepted_tokens, m.drafts),
        (604.0, 515.0, 151.0)
    );
    let (cs, done) = chunks(&fixture("llamacpp_stream.txt"));
    assert!(done);
    assert!(
        !cs[0].generated(),
        "role chunk with null content is not a token"
    );
    assert!(cs[1].generated());
    let last = cs.last().unwrap();
    assert_eq!(last.usage.unwrap().completion_tokens, Some(665));
    let t = last.timings.unwrap();
    assert_eq!((t.draft_n, t.draft_n_accepted), (Some(604), Some(515)));
    let s = speculative::from_timings(604, 515).unwrap();
    assert_eq!(s.acceptance_rate, Some(0.853));
}

#[test]
fn vllm_stream_with_continuous_usage_gives_tokens_per_chunk() {
    let (cs, done) = chunks(&fixture("vllm_chat_stream.txt"));
    assert!(done);
    assert!(!cs[0].generated(), "empty role chunk");
    assert!(
        cs[1].generated(),
        "reasoning content counts as generated text"
    );
    let marks: Vec<ChunkMark> = cs
        .iter()
        .filter(|c| c.generated())
        .enumerate()
        .map(|(i, c)| ChunkMark {
            at_us: 1000 * i as u32,
            text_len: c.text_len as u32,
            cum_tokens: c.usage.and_then(|u| u.completion_tokens).map(|x| x as u32),
        })
        .collect();
    let (ks, method) = tokens_per_chunk(&marks, 6);
    assert_eq!(method, ITL_USAGE);
    assert_eq!(ks, vec![2.0, 3.0, 1.0]);
    assert_eq!(cs.last().unwrap().usage.unwrap().completion_tokens, Some(6));
}

#[test]
fn sglang_server_info_and_meta_info_parse() {
    let info: serde_json::Value =
        serde_json::from_str(&fixture("sglang_server_info.json")).unwrap();
    assert_eq!(speculative::server_info_accept_length(&info), Some(2.84));
    assert!(speculative::server_speculates(&info));
    let c = sse::parse_chunk(fixture("sglang_generate.json").trim().as_bytes()).unwrap();
    let m = c.meta_info.unwrap();
    assert_eq!(m.spec_verify_ct, Some(3));
    assert_eq!(c.finish_reason.as_deref(), Some("length"));
    // /generate has no usage: the counts come from meta_info.
    assert_eq!(c.usage.unwrap().completion_tokens, Some(7));
    assert_eq!(c.usage.unwrap().prompt_tokens, Some(9));
    let s = speculative::from_sglang(speculative::SglangSums {
        verify_ct: 3,
        completion_tokens: m.completion_tokens.unwrap(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(s.accept_length, Some(2.333));
    assert_eq!(s.source, SpecSource::PerRequest);
}
