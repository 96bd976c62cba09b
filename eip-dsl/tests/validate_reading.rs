//! Reading a flow file: unknown keys, values of the wrong type, missing and repeated keys, YAML
//! that is not one mapping, reserved keys, positions of quoted values; and hostile input, which
//! is refused with a problem and never panics the loader.

use std::path::Path;

use eip_dsl::load::{load_str, parse_str};
use proptest::prelude::*;

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::queues::with_queues;
use support::validate::{fixtures, flow};

// ---------------------------------------------------------------- reading

#[test]
fn an_unknown_key_is_reported_with_the_closest_valid_one() {
    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-lve: 30s}"]);
    assert_eq!(p.message, "unknown key `time-to-lve` in channel `q`");
    assert_eq!(at(&p), (2, 29));
    assert_eq!(help(&p), "did you mean `time-to-live`?");
    assert_eq!(p.key.as_deref(), Some(r#"channels["q"].time-to-lve"#));

    let p = only(&["chanels:", "  q: {kind: point-to-point}"]);
    assert_eq!(p.message, "unknown key `chanels` in the flow file");
    assert_eq!((at(&p), help(&p)), ((1, 1), "did you mean `channels`?"));
}

#[test]
fn an_unknown_key_far_from_any_lists_the_valid_ones() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, xyzzy: 1}",
    ]));
    assert_eq!(p.message, "unknown key `xyzzy` in route 1");
    assert_eq!(at(&p), (6, 25));
    assert!(
        help(&p).starts_with("expected one of `name`, `from`"),
        "{}",
        help(&p)
    );
}

#[test]
fn unknown_keys_are_found_at_every_level() {
    let ps = problems(&with_queues(&[
        "  r: {kind: point-to-point, redelivery: {max-attempt: 3}}",
        "routes:",
        "  - from: in",
        "    choice:",
        "      - {when: '$.a == 1', to: out, then: x}",
        "    recipient-list: {headr: x}",
        "joins:",
        "  - {from: news, to: out, hop: 2}",
        "exchanges:",
        "  mx: {alternat: out, bindings: [{key: a, to: out, ky: b}]}",
    ]));
    let found: Vec<(&str, (u32, u32))> = ps
        .iter()
        .filter(|p| p.message.starts_with("unknown key"))
        .map(|p| (p.message.as_str(), at(p)))
        .collect();
    assert_eq!(
        found,
        [
            (
                "unknown key `max-attempt` in `redelivery` of channel `r`",
                (5, 42)
            ),
            ("unknown key `then` in `choice` clause 1", (9, 37)),
            ("unknown key `headr` in `recipient-list`", (10, 22)),
            ("unknown key `hop` in join 1", (12, 27)),
            ("unknown key `alternat` in exchange `mx`", (14, 8)),
            ("unknown key `ky` in binding 1 of exchange `mx`", (14, 52)),
        ]
    );
}

#[test]
fn a_value_of_the_wrong_type_says_what_was_expected_and_found() {
    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: ten}"]);
    assert_eq!(
        p.message,
        "`capacity` must be a whole number, found a string"
    );
    assert_eq!(at(&p), (2, 39));

    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: 2.5}"]);
    assert_eq!(p.message, "`capacity` must be a whole number, found 2.5");

    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: -1}"]);
    assert_eq!(p.message, "`capacity` must be at least 1, found -1");

    let p = only(&with_queues(&[
        "joins:",
        "  - {from: news, to: out, archival: yes please}",
    ]));
    assert_eq!(
        p.message,
        "`archival` must be `true` or `false`, found a string"
    );
    assert_eq!(at(&p), (6, 37));

    let p = only(&["routes: {from: in}"]);
    assert_eq!(p.message, "`routes` must be a list, found a mapping");
}

#[test]
fn an_unknown_channel_kind_is_a_problem_with_a_suggestion() {
    let p = only(&["channels:", "  q: {kind: point-to-pont}"]);
    assert_eq!(p.message, "`kind` can not be `point-to-pont`");
    assert_eq!(
        (at(&p), help(&p)),
        ((2, 13), "did you mean `point-to-point`?")
    );
}

#[test]
fn a_missing_required_key_is_reported_at_its_entry() {
    let p = only(&["channels:", "  q: {capacity: 5}"]);
    assert_eq!(p.message, "channel `q` has no `kind`");
    assert_eq!(at(&p), (2, 3));
    assert!(help(&p).contains("kind: point-to-point"));

    let p = only(&with_queues(&["routes:", "  - {to: out}"]));
    assert_eq!(p.message, "route 1 has no `from`");
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&["joins:", "  - from: news"]));
    assert_eq!(p.message, "join 1 has no `to`");
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    choice:",
        "      - to: out",
    ]));
    assert_eq!(p.message, "`choice` clause 1 has no `when`");
    assert_eq!(at(&p), (8, 9));
}

#[test]
fn a_key_written_twice_is_reported_with_both_positions() {
    let p = only(&[
        "channels:",
        "  q:",
        "    kind: point-to-point",
        "    capacity: 5",
        "    capacity: 6",
    ]);
    assert_eq!(p.message, "`capacity` is written twice in channel `q`");
    assert_eq!(at(&p), (5, 5));
    assert_eq!(p.labels.len(), 1);
    assert_eq!((p.labels[0].at.line, p.labels[0].at.column), (4, 5));
    assert_eq!(p.labels[0].message, "first written here");
}

#[test]
fn a_yaml_syntax_error_is_one_problem_with_its_position() {
    let p = only(&["channels:", "  q: {kind: point-to-point", "routes: []"]);
    assert!(p.message.starts_with("invalid YAML: "), "{}", p.message);
    let (line, _) = at(&p);
    assert!((2..=3).contains(&line), "{p:?}");
}

#[test]
fn several_documents_are_refused() {
    let p = only(&["channels: {}", "---", "routes: []"]);
    assert!(p.message.starts_with("invalid YAML: "), "{}", p.message);
}

#[test]
fn a_file_that_is_not_a_mapping_is_refused() {
    let p = only(&["- from: in"]);
    assert!(
        p.message.starts_with("a flow file is a mapping"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (1, 1));
}

#[test]
fn a_bridge_and_an_adapter_are_each_declared_in_their_own_section() {
    let ps = problems(&[
        "channels:",
        "  orders: {kind: point-to-point}",
        "adapters:",
        "  rabbit: {kind: rabbitmq-in, to: orders, url: 'amqp://h', queue: q}",
        "bridges:",
        "  files: {kind: file-in, to: orders, dir: in}",
    ]);
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`rabbitmq-in` is a messaging bridge: declare it under `bridges:`",
                (4, 18)
            ),
            (
                "`file-in` is a channel adapter: declare it under `adapters:`",
                (6, 17)
            ),
        ]
    );
}

#[test]
fn a_quoted_value_is_located_at_its_first_character() {
    let spec = parse_str(
        &flow(&[
            "channels:",
            "  q: {kind: point-to-point, invalid: \"bad\", dead-letter: 'dl'}",
        ]),
        "f",
    )
    .expect("reads");
    let q = &spec.channels[0].1;
    let invalid = q.invalid.as_ref().and_then(|v| v.at).expect("position");
    assert_eq!((invalid.line, invalid.column, invalid.len), (2, 39, 3));
    let dead = q.dead_letter.as_ref().and_then(|v| v.at).expect("position");
    assert_eq!((dead.line, dead.column, dead.len), (2, 59, 2));
}

// ---------------------------------------------------------------- hostile input

#[test]
fn deep_nesting_is_refused_with_a_problem() {
    let deep = format!("channels: {}{}", "[".repeat(10_000), "]".repeat(10_000));
    let errors = load_str(&deep, "deep.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
    assert!(
        errors.problems[0].message.starts_with("invalid YAML"),
        "{}",
        errors.problems[0].message
    );

    let mut block = String::new();
    for depth in 0..300 {
        block.push_str(&" ".repeat(depth));
        block.push_str("a:\n");
    }
    let errors = load_str(&block, "deep.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1);
}

#[test]
fn a_billion_laughs_is_refused_with_a_problem() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    text.push_str("channels: *a9\n");
    let errors = load_str(&text, "lol.yaml", Path::new(".")).expect_err("refused");
    assert_eq!(errors.problems.len(), 1, "{}", errors.render());
    assert!(
        errors.problems[0].message.starts_with("invalid YAML"),
        "{}",
        errors.problems[0].message
    );
}

#[test]
fn an_oversized_file_is_refused_without_parsing() {
    let big = "#".repeat(eip_dsl::load::MAX_FLOW_FILE_BYTES + 1);
    let errors = load_str(&big, "big.yaml", Path::new(".")).expect_err("refused");
    assert!(errors.problems[0].message.contains("bytes long"));
}

const VALID: &str = include_str!("fixtures/validate/trades.yaml");

/// Loads `text` and checks the outcome is coherent: it never panics (the property), and a
/// refusal always says something, with positions inside the text.
fn load_never_panics(text: &str) {
    if let Err(errors) = load_str(text, "fuzz.yaml", &fixtures()) {
        assert!(!errors.problems.is_empty());
        for p in &errors.problems {
            if let Some(at) = p.at {
                assert!(at.offset <= text.len(), "{p:?}");
            }
        }
        let _ = errors.render();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_the_loader(text in "\\PC{0,200}") {
        load_never_panics(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        load_never_panics(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn yaml_like_text_never_panics_the_loader(
        text in "([a-z:{}\\[\\],'\"&*!#|>. -]|\n|  |-1|1.5|0x1){0,120}"
    ) {
        load_never_panics(&text);
    }

    #[test]
    fn mutations_of_a_valid_flow_never_panic_the_loader(
        edits in proptest::collection::vec((0u8..4, any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<char>()), 1..6)
    ) {
        let mut lines: Vec<String> = VALID.lines().map(str::to_owned).collect();
        for (op, a, b, c) in edits {
            if lines.is_empty() {
                break;
            }
            let i = a.index(lines.len());
            match op {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let line = lines[i].clone();
                    lines.insert(b.index(lines.len() + 1), line);
                }
                2 => {
                    // Swap two characters of a line.
                    let mut chars: Vec<char> = lines[i].chars().collect();
                    if chars.len() > 1 {
                        let x = b.index(chars.len());
                        let y = (x + 1) % chars.len();
                        chars.swap(x, y);
                        lines[i] = chars.into_iter().collect();
                    }
                }
                _ => {
                    // Replace a character.
                    let mut chars: Vec<char> = lines[i].chars().collect();
                    if !chars.is_empty() {
                        let x = b.index(chars.len());
                        chars[x] = c;
                        lines[i] = chars.into_iter().collect();
                    }
                }
            }
        }
        load_never_panics(&lines.join("\n"));
    }
}
