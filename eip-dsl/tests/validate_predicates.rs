//! Predicates and topic patterns in a flow file: one that does not parse is reported at the
//! place inside the string where parsing stopped.

use eip_core::predicate::Predicate;

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, help, only};
use support::queues::with_queues;

#[test]
fn a_predicate_that_does_not_parse_points_inside_the_string() {
    // Single quotes: the expression starts one column after the quote.
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, filter: '$.price >> 100', to: out}",
    ]));
    assert!(
        p.message.starts_with("invalid predicate: "),
        "{}",
        p.message
    );
    // `$.price >> 100` fails at byte 9 (the second `>`): column 26 + 9.
    assert_eq!(at(&p), (6, 34));
    assert_eq!(p.key.as_deref(), Some("routes[0].filter"));

    // Plain scalar in block style.
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    filter: $.price >> 100",
        "    to: out",
    ]));
    assert_eq!(at(&p), (7, 22));

    // Escapes in double quotes are followed: `\"` takes two columns for one byte.
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    choice:",
        r#"      - when: "$.side == \"buy\" >> 1""#,
        "        to: out",
    ]));
    // The value starts at column 16; the parser stops at byte `offset` of it, after the
    // string literal, so two backslashes of the file come before that place.
    let offset = Predicate::parse(r#"$.side == "buy" >> 1"#)
        .err()
        .map(|e| e.offset)
        .expect("does not parse");
    assert!(offset > 15, "{offset}");
    assert_eq!(at(&p), (8, 16 + offset as u32 + 2));
    assert_eq!(p.key.as_deref(), Some("routes[0].choice[0].when"));
}

#[test]
fn a_join_filter_is_a_predicate_too() {
    let p = only(&with_queues(&[
        "joins:",
        "  - {from: news, to: out, filter: '$.a =='}",
    ]));
    assert!(
        p.message.starts_with("invalid predicate: expected"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (6, 36 + 6));
}

#[test]
fn a_topic_pattern_that_does_not_parse_points_at_the_word() {
    let p = only(&with_queues(&[
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - {key: \"stock.ny*.ibm\", to: out}",
    ]));
    assert!(
        p.message.contains("word 2 (`ny*`) mixes a wildcard"),
        "{}",
        p.message
    );
    // The key starts at column 16 (after the quote); `ny*` is 6 bytes in.
    assert_eq!(at(&p), (8, 22));
    assert_eq!(p.at.map(|a| a.len), Some(3));
    assert_eq!(p.key.as_deref(), Some(r#"exchanges["mx"].bindings[0].key"#));
}

#[test]
fn an_unquoted_hash_key_is_explained() {
    let p = only(&with_queues(&[
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - key: #",
        "        to: out",
    ]));
    assert_eq!(
        p.message,
        "`key` must be a topic pattern, found nothing (null)"
    );
    assert!(help(&p).contains("quote it"), "{}", help(&p));
}
