//! Tests of `compose/yaml.rs`: locating a service's command and rewriting
//! only its text.

use super::*;

fn v(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

const FILE: &str = "# héllo: the file's own comment\nx-base: &base\n  image: foo\nservices:\n  flow:\n    image: x   # pinned\n    command: [\"/bin/sim\", '--port', \"18\", --x]  # keep\n  block:\n    command:\n      - /bin/sim   # c1\n      - \"--port\"\n      # own line\n      - '8'\n  str:\n    command: /bin/sim --port 8 --y \"a b\"\n  merged:\n    <<: *base\n  anchored:\n    command: &cmd [a, b]\n  alias:\n    command: *cmd\n  none:\n    image: foo\n  interp:\n    command: [\"/bin/sim\", \"--model\", \"${MODEL}\"]\n  dollars:\n    command: [\"/bin/sim\", \"--x\", \"a$$b\"]\n";

fn swap(svc: &str, new: &[&str]) -> String {
    let l = locate(FILE, svc).unwrap();
    rewrite(FILE, &l, &v(new))
}

/// Only the lines of the command change.
fn changed(a: &str, b: &str) -> Vec<String> {
    let d = similar::TextDiff::from_lines(a, b);
    d.iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| format!("{}{}", c.tag(), c.value()))
        .collect()
}

#[test]
fn flow_list_keeps_unchanged_items_and_the_comment() {
    let l = locate(FILE, "flow").unwrap();
    assert_eq!(l.words, v(&["/bin/sim", "--port", "18", "--x"]));
    assert_eq!(l.line, 7);
    let out = swap("flow", &["/bin/sim", "--port", "19", "--x", "--n", "3"]);
    assert_eq!(
        changed(FILE, &out),
        [
            "-    command: [\"/bin/sim\", '--port', \"18\", --x]  # keep\n",
            "+    command: [\"/bin/sim\", '--port', \"19\", --x, --n, \"3\"]  # keep\n"
        ]
    );
    assert_eq!(locate(&out, "flow").unwrap().words[2], "19");
    // The other services read the same as before.
    assert_eq!(
        locate(&out, "block").unwrap().words,
        locate(FILE, "block").unwrap().words
    );
}

#[test]
fn block_list_edits_lines_and_keeps_comments() {
    let l = locate(FILE, "block").unwrap();
    assert_eq!(l.words, v(&["/bin/sim", "--port", "8"]));
    let out = swap(
        "block",
        &["/bin/sim", "--port", "9", "--speculative-num-steps", "5"],
    );
    assert_eq!(
        changed(FILE, &out),
        [
            "-      - '8'\n",
            "+      - '9'\n",
            "+      - '--speculative-num-steps'\n",
            "+      - '5'\n"
        ]
    );
    assert!(out.contains("# own line") && out.contains("# c1"));
    // An item removed takes its line (and the comment under it) along.
    let out = swap("block", &["/bin/sim", "8"]);
    assert_eq!(locate(&out, "block").unwrap().words, v(&["/bin/sim", "8"]));
    assert!(!out.contains("# own line"), "{out}");
}

#[test]
fn string_form_is_split_like_a_shell_and_rejoined() {
    let l = locate(FILE, "str").unwrap();
    assert_eq!(l.words, v(&["/bin/sim", "--port", "8", "--y", "a b"]));
    let out = swap("str", &["/bin/sim", "--port", "9", "--y", "a b"]);
    assert_eq!(
        changed(FILE, &out),
        [
            "-    command: /bin/sim --port 8 --y \"a b\"\n",
            "+    command: \"/bin/sim --port 9 --y 'a b'\"\n"
        ]
    );
    assert_eq!(locate(&out, "str").unwrap().words[4], "a b");
}

#[test]
fn a_service_key_is_read_where_it_is_written() {
    assert_eq!(service_scalar(FILE, "flow", "image").as_deref(), Some("x"));
    assert_eq!(
        service_scalar(FILE, "merged", "image"),
        None,
        "merged in, not written"
    );
    assert_eq!(service_scalar(FILE, "flow", "command"), None, "a list");
    assert_eq!(service_scalar("a: [", "flow", "image"), None);
}

#[test]
fn refusals_name_the_reason() {
    let e = |s: &str| locate(FILE, s).unwrap_err().to_string();
    assert!(e("merged").contains("merge key"), "{}", e("merged"));
    assert!(e("alias").contains("alias"), "{}", e("alias"));
    assert!(e("anchored").contains("anchored"), "{}", e("anchored"));
    assert!(e("none").contains("no command"), "{}", e("none"));
    assert!(
        e("missing").contains("no service \"missing\""),
        "{}",
        e("missing")
    );
    let e = |text: &str| locate(text, "x").unwrap_err().to_string();
    assert!(e("a: [").contains("not valid YAML"));
    assert!(e("- a\n").contains("top-level mapping"));
}

#[test]
fn dollars_round_trip_as_compose_writes_them() {
    let l = locate(FILE, "dollars").unwrap();
    assert_eq!(l.words[2], "a$b");
    let out = swap("dollars", &["/bin/sim", "--x", "c$d"]);
    assert!(out.contains("\"c$$d\""), "{out}");
    assert_eq!(locate(&out, "dollars").unwrap().words[2], "c$d");
    // A `$` that starts no variable name is Compose's literal `$`.
    let t = "services:\n  s:\n    command: [\"a$\", \"50$-off\", \"$1\"]\n";
    assert_eq!(locate(t, "s").unwrap().words, v(&["a$", "50$-off", "$1"]));
    let t = "services:\n  s:\n    command: run $_X\n";
    assert_eq!(locate(t, "s").unwrap().words, v(&["run", "$_X"]));
}

/// A word with a variable keeps its text through an edit elsewhere, in
/// a list and in a string; a value the user sets with a `$` is literal.
#[test]
fn variables_stay_as_written() {
    let l = locate(FILE, "interp").unwrap();
    assert_eq!(l.words[2], "${MODEL}");
    assert!(interpolates(&l.words[2]) && !interpolates("a$$b") && !interpolates("5$"));
    let mut w = l.words.clone();
    w.extend(["--tag".to_string(), "$HOME".to_string()]);
    let out = rewrite(FILE, &l, &w);
    assert!(
        out.contains(r#"["/bin/sim", "--model", "${MODEL}", "--tag", "$$HOME"]"#),
        "{out}"
    );
    let t = "services:\n  s:\n    command: run --m ${M:-x} --n 1\n";
    let l = locate(t, "s").unwrap();
    assert_eq!(l.words, v(&["run", "--m", "${M:-x}", "--n", "1"]));
    let out = rewrite(t, &l, &v(&["run", "--m", "${M:-x}", "--n", "2"]));
    assert_eq!(
        out,
        "services:\n  s:\n    command: \"run --m '${M:-x}' --n 2\"\n"
    );
    assert_eq!(locate(&out, "s").unwrap().words[2], "${M:-x}");
}

/// A value with shell and YAML metacharacters is one word, written so
/// that it reads back as itself in every form.
#[test]
fn metacharacters_stay_one_literal_word() {
    let nasty = "m; touch PWNED $(touch X) `id` 'q\" \\ $HOME 7% #c: [a, b] {x}";
    for svc in ["flow", "block", "str"] {
        let l = locate(FILE, svc).unwrap();
        let mut words = l.words.clone();
        words.push("--served-model-name".into());
        words.push(nasty.into());
        let out = rewrite(FILE, &l, &words);
        assert_eq!(locate(&out, svc).unwrap().words, words, "{svc}: {out}");
    }
}

#[test]
fn rendered_words_read_back_as_strings() {
    for w in [
        "3", "true", "no", "a: b", "#x", "-", "x y", "it's", "--port", "/p/a.b", "0x1F", "é",
    ] {
        for style in [
            ScalarStyle::Plain,
            ScalarStyle::SingleQuoted,
            ScalarStyle::DoubleQuoted,
        ] {
            let text = format!(
                "services:\n  s:\n    command: [{}]\n",
                render(w, style, true)
            );
            let l = locate(&text, "s").unwrap_or_else(|e| panic!("{w:?} {style:?}: {e}\n{text}"));
            assert_eq!(l.words, [w], "{text}");
            let d = Doc::parse(&text).unwrap();
            let plain_num = d.ev.iter().any(|(e, _)| matches!(e, Event::Scalar(s, ScalarStyle::Plain, ..) if s == w && resolves_to_non_string(w)));
            assert!(!plain_num, "{w} left plain: {text}");
        }
    }
}
