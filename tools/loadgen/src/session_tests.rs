//! Unit tests of session.rs and session_chat.rs: both kinds of file, and
//! each bad input named by its line.

use super::*;
use crate::session_plan::parse;

fn err(text: &str) -> String {
    parse(text, 4).unwrap_err().to_string()
}

#[test]
fn a_session_trace_groups_turns_by_id() {
    let f = parse(
        "{\"session_id\":\"a\",\"timestamp\":0,\"text_input\":\"hi\",\"output_length\":3}\n\
         {\"session_id\":\"b\",\"timestamp\":50,\"input_length\":6,\"hash_ids\":[1,2]}\n\
         {\"session_id\":\"a\",\"delay\":1500,\"text_input\":\"more\"}\n\
         {\"session_id\":\"a\",\"timestamp\":9000,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n\
         {\"session_id\":\"b\",\"text_input\":\"then\"}\n",
        4,
    )
    .unwrap();
    assert_eq!(f.source, "trace");
    assert!(f.timed());
    assert_eq!(f.turns(), 5);
    let a = &f.sessions[0];
    assert_eq!((a.id.as_str(), a.start_ms), ("a", Some(0.0)));
    let gaps: Vec<Gap> = a.turns.iter().map(|t| t.gap).collect();
    assert_eq!(
        gaps,
        [Gap::First, Gap::Think(Some(1500.0)), Gap::At(9000.0)]
    );
    assert_eq!(a.turns[0].output_tokens, Some(3));
    assert_eq!(a.turns[2].line, 4);
    assert_eq!(f.sessions[1].turns[1].gap, Gap::Think(None));
}

#[test]
fn conversations_keep_user_turns_and_size_them_by_the_recorded_reply() {
    let sharegpt = r#"[{"id":"c1","conversations":[
        {"from":"system","value":"be brief"},
        {"from":"human","value":"one"},{"from":"gpt","value":"a recorded reply of some length"},
        {"from":"human","value":"two"}]}]"#;
    let f = parse(sharegpt, 4).unwrap();
    assert_eq!(f.source, "conversations");
    assert!(!f.timed());
    let s = &f.sessions[0];
    assert_eq!(s.id, "c1");
    assert_eq!(s.system.len(), 1);
    assert_eq!(s.turns.len(), 2);
    assert_eq!(s.turns[0].input, UserInput::Text("one".into()));
    assert_eq!(s.turns[0].output_tokens, Some(8));
    assert_eq!(s.turns[1].gap, Gap::Think(None));
    let jsonl = "{\"timestamp\":10,\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}\n";
    let f = parse(jsonl, 4).unwrap();
    assert_eq!(f.sessions[0].start_ms, Some(10.0));
    assert_eq!(f.sessions[0].id, "1");
}

#[test]
fn bad_sessions_name_the_line() {
    let t = |s: &str| err(s);
    let no_user = t("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"}]}");
    assert_eq!(no_user, "line 1: no user turn");
    let order = t("\n{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},\
                   {\"role\":\"user\",\"content\":\"b\"}]}");
    assert!(
        order.starts_with("line 2: turns out of order: message 2 is user after user"),
        "{order}"
    );
    let back = t(
        "{\"session_id\":1,\"timestamp\":500,\"text_input\":\"a\"}\n\
                  {\"session_id\":1,\"timestamp\":400,\"text_input\":\"b\"}",
    );
    assert!(
        back.starts_with("line 2: turns out of order: timestamp 400 ms goes back"),
        "{back}"
    );
    let neg = t("{\"session_id\":1,\"text_input\":\"a\"}\n{\"session_id\":1,\"delay\":-5,\"text_input\":\"b\"}");
    assert_eq!(neg, "line 2: \"delay\" -5 ms is negative");
    let first_delay = t("{\"session_id\":1,\"delay\":5,\"text_input\":\"a\"}");
    assert!(
        first_delay.contains("first turn has a \"delay\""),
        "{first_delay}"
    );
    let nothing = t("{\"session_id\":1,\"timestamp\":0}");
    assert!(nothing.starts_with("line 1: no user turn"), "{nothing}");
    let mixed = t("{\"session_id\":1,\"text_input\":\"a\"}\n{\"text_input\":\"b\"}");
    assert!(mixed.starts_with("line 2: no \"session_id\""), "{mixed}");
    let arr = t("[{\"conversations\":[{\"from\":\"gpt\",\"value\":\"x\"}]}]");
    assert!(arr.contains("conversation 1: turns out of order"), "{arr}");
    assert!(
        t("{\"session_id\":1,\"input_length\":9,\"hash_ids\":[1]}").contains("needs 3 hash_ids")
    );
    assert!(t("\n\n").contains("no sessions"));
}
