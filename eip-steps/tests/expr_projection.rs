//! A jq program reads only the parts of the payload it needs, and that changes nothing: every
//! program gives the same outputs and the same errors as with the whole payload built, on every
//! payload, JSON or not.
#![cfg(feature = "jq")]

use std::sync::LazyLock;

use eip_core::Message;
use eip_steps::expr::{Jq, RunError};
use eip_steps::translate::Translate;
use proptest::prelude::*;
use serde_json::Value;

/// Programs over the keys the payloads below use (`a`, `b`, `k`, `v`, `items`, ...): paths,
/// optional access, iteration, the standard library, bindings, folds, errors, definitions,
/// recursion, and the constructs that read everything.
const PROGRAMS: &[&str] = &[
    ".",
    ".a",
    ".a.b",
    ".a?",
    ".a.b?",
    ".[]?",
    ".[0]?",
    ".[-1]?",
    ".[1:]?",
    ".[:2]?",
    ".a[0].b?",
    ".a[]?",
    ".a[]?.b?",
    ".a.b.c",
    r#".["a"]"#,
    r#"."a b""#,
    r#".["a\u0062"]"#,
    r#".[.k]?"#,
    "{id: .id, total: (.items | map(.price * .qty) | add), customer: .customer.name}",
    ".items | map(.price)",
    ".items[] | select(.qty > 1) | .sku",
    "[.items[]? | .name?]",
    ".items | length",
    "reduce .items[] as $i (0; . + $i.qty)",
    "reduce .[]? as $x (.; .a?)",
    "reduce range(3) as $i (.; .a?)",
    "foreach .items[]? as $i (0; . + 1; [., $i.sku?])",
    "foreach (.a, .b) as $x ({}; .; [., $x])",
    "if .a then .b else .c end",
    "if .a then .b end",
    "if .a? then .b? elif .c? then 1 else . end",
    ".a // .b",
    r#".a // "x""#,
    ".a and .b",
    "(.a or .b) | not",
    "try .a.b catch .",
    "try error(.a) catch .",
    "try error catch .",
    "(.a | error)? // 1",
    "try (.a | .[0]) catch .",
    "try ([.a] | .x) catch .",
    "try (.a[] | .x) catch .",
    "try (.a[1:] | .b) catch .",
    "try (.a | .b | .c) catch .",
    "try (.[] | .a) catch .",
    r#""\(.a) and \(.b.c?)""#,
    r#"@base64 "x\(.a)y""#,
    "@base64?",
    ".a | @json",
    "$headers",
    "$headers.desk",
    "[$id | length, .a]",
    "..",
    "[..]",
    "[.. | numbers]",
    "keys?",
    "keys_unsorted?",
    "del(.a)?",
    "to_entries?",
    "to_entries? | map(.key)",
    "with_entries(.value |= tostring)?",
    r#"has("a")?"#,
    r#".a | has("b")?"#,
    "length",
    ".a | length",
    "[paths]",
    r#"[paths(type == "number")]"#,
    r#"getpath(["a", "b"])?"#,
    "tojson",
    ".a | tojson",
    "tostring",
    "type",
    ".a | type",
    "[.[]? | type]",
    "not",
    "select(.a?)",
    "values",
    "map_values(1)?",
    ".a |= 1",
    ".a += 1",
    ".a //= 3",
    ".a = .b",
    ".[]? |= 2",
    "walk(.)",
    "first(.[]?)",
    "first?",
    "last?",
    "[limit(2; .[]?)]",
    "any?",
    "all?",
    "add?",
    "min?",
    "sort?",
    "unique?",
    "isempty(.[]?)",
    ".a == .b",
    ".a + .b",
    "-.a?",
    "[.a, .b] | .[1]",
    "{a: .x} | .a",
    "{a: .x, b: .y} | .b",
    "{(.k): .v}?",
    "{a, b}",
    r#"{"a b"}"#,
    "{$id} | .id | length",
    ". as $x | $x.a",
    ". as {a: $x, b: [$y, $z]} | [$x, $y, $z]",
    ". as [$a] | $a",
    ". as {$a, $b} | $b",
    ".a as $v | .b | [$v, .]",
    "[.[]? as [$p] | $p]",
    ".a as [$x, {b: $y}] | $y",
    "label $out | .[]? | if . == 2 then break $out else . end",
    "def f: .a; f",
    "def f(g): g | .b; f(.a)",
    "def f($x): $x.b; f(.a)",
    "def f($x): [$x, .c]; f(.a, .b)",
    "def f(g): def h: g; h | .x; f(.a)",
    "def f: def g: .a; g | .b; f",
    "def map(f): 1; map(.x)",
    "def add: .a; add",
    "def r: if type == \"object\" then .a | r else . end; r",
    "def fac: if . <= 1 then 1 else . * (. - 1 | fac) end; .n | numbers | select(. < 20) | fac",
    "def rec: .a? // empty | (., rec); [rec]",
    "def f(g): g | if type == \"object\" then f(.a) else . end; f(.b)",
    ".a as $v | def f: $v.b; f",
    ".a as $v | def f(g): g; f($v.c)",
    "recurse | .a?",
    "[recurse(.[]?) | numbers]",
    "map(.a?)?",
    "map(select(.qty? > 1) | .sku?)?",
    "[.[]? | .a? // 0]",
    "[.items[]?.qty] | add",
    "(.items // []) | map(.price?)",
    ".a[1:3]?",
    ".a[1:3][0]?",
    ".a[1:][]?",
    "[.a[1:][]? | .b?]",
    "path(.a.b)",
    "[.a, .b] | length",
    "[.a[]?] | length",
    "{x: .a} | keys",
    "[.[]?] | .[0]",
    r#"ascii_downcase?"#,
    r#"test("a")?"#,
    "fromjson?",
    "splits(\", \")?",
    "[recurse(.a?; . != null)]",
];

/// Payloads with the keys the programs read, and those they do not.
const PAYLOADS: &[&str] = &[
    "null",
    "1",
    r#""text""#,
    "true",
    "[]",
    "{}",
    "[1, 2, 3]",
    r#"[{"a": 1}, {"a": 2, "b": 3}]"#,
    r#"{"a": 1, "b": 2}"#,
    r#"{"a": {"b": {"c": 1}}, "d": [1, 2]}"#,
    r#"{"a": [{"b": 1}, {"b": 2}, 3], "c": "x"}"#,
    r#"{"a": [1, 2, 3, 4], "b": {"x": 1}}"#,
    r#"{"a": "s", "b": null, "c": false}"#,
    r#"{"a": 1, "a": 2, "b": {"a": 3, "a": 4}}"#,
    r#"{"a": {"b": 1}, "a": {"c": 2}}"#,
    r#"{"ab": 1, "a b": 2, "k": "ab", "v": 5}"#,
    r#"{"a\u0062": 1, "a": "\u00e9\n"}"#,
    r#"{"n": 5, "a": {"a": {"a": 7}}}"#,
    r#"{"id": "o-1", "customer": {"name": "Ada", "email": "ada@example.com"}, "items": [{"sku": "S1", "name": "W", "price": 2.5, "qty": 2}, {"sku": "S2", "price": 1, "qty": 1}], "note": "x"}"#,
    r#"{"items": [{"price": 1, "qty": 3, "sku": "A"}, {"price": 2, "qty": 1, "sku": "B"}]}"#,
    r#"{"items": {"x": {"price": 1, "qty": 2}}}"#,
    r#"{"items": "none", "a": [[1], [2, [3]]]}"#,
    r#"[[1, 2], {"a": 1}, null, "s"]"#,
    r#"{"x": 1e300, "y": -0.0, "z": 12345678901234567890123, "a": 1.5}"#,
    // Not JSON, in a part no program reads and in parts they do.
    "",
    "{",
    r#"{"a": 1,}"#,
    r#"{"a": 1} x"#,
    r#"{"zz": 1e400, "a": 1}"#,
    r#"{"zz": [1, 2, tru], "a": 1}"#,
    r#"{"zz": "\q", "a": 1}"#,
    r#"{"zz": "\ud800", "a": 1}"#,
    r#"{"zz": 01, "a": 1}"#,
    r#"{"a": 1, "zz": {"y": }}"#,
    "[1, 2",
    "nul",
];

fn message(payload: impl Into<bytes::Bytes>) -> Message {
    Message::builder(payload.into())
        .header("desk", "fx")
        .build()
}

fn outputs(jq: &Jq, msg: &Message) -> Result<Vec<Value>, RunError> {
    jq.all(msg)
}

/// The program on the message both ways; equal outputs and errors, or a message saying where.
fn same_both_ways(jq: &Jq, msg: &Message) -> Result<(), String> {
    let projected = outputs(jq, msg);
    let whole = jq.all_reading_everything(msg);
    if projected == whole {
        Ok(())
    } else {
        Err(format!(
            "program {:?} on {:?}:\n projected {projected:?}\n whole     {whole:?}",
            jq.source(),
            String::from_utf8_lossy(msg.payload())
        ))
    }
}

/// [`PROGRAMS`], compiled once.
fn programs() -> &'static [Jq] {
    static COMPILED: LazyLock<Vec<Jq>> = LazyLock::new(|| {
        PROGRAMS
            .iter()
            .map(|source| match Jq::compile(source) {
                Ok(jq) => jq,
                Err(e) => panic!("{source:?} does not compile: {e}"),
            })
            .collect()
    });
    &COMPILED
}

#[test]
fn every_program_gives_the_same_outputs_and_errors_as_with_the_whole_payload() {
    let mut failures = Vec::new();
    for jq in programs() {
        for payload in PAYLOADS {
            if let Err(failure) = same_both_ways(jq, &message(*payload)) {
                failures.push(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_payload_that_is_not_json_is_refused_where_it_goes_wrong_even_in_a_part_not_read() {
    let jq = Jq::compile(".a").unwrap();
    assert!(!jq.reads_whole_payload());
    // The column serde_json gives where the whole payload is read.
    let cases: [(&[u8], usize); 5] = [
        (br#"{"zz": 1e400, "a": 1}"#, 12),
        (b"{\"zz\": \"\xff\", \"a\": 1}", 9),
        (br#"{"a": 1, "zz": [1, 2"#, 20),
        (br#"{"a": 1} 2"#, 10),
        (br#"{"zz": {"y" 1}, "a": 1}"#, 13),
    ];
    for (payload, column) in cases {
        let msg = message(payload.to_vec());
        let err = jq.one(&msg).unwrap_err();
        assert_eq!(
            Err(err.clone()),
            jq.all_reading_everything(&msg).map(|_| ())
        );
        assert!(
            matches!(err, RunError::NotJson { line: 1, column: c, .. } if c == column),
            "{:?}: {err:?}",
            String::from_utf8_lossy(payload)
        );
    }
    let deep = format!(
        r#"{{"zz": {}1{}, "a": 1}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let err = jq.one(&message(deep.clone())).unwrap_err();
    assert!(err.to_string().contains("recursion limit"), "{err}");
    assert_eq!(
        jq.all(&message(deep.clone())),
        jq.all_reading_everything(&message(deep))
    );
}

#[test]
fn programs_that_can_read_anything_read_the_whole_payload() {
    for source in [
        ".",
        "..",
        "keys",
        "to_entries",
        "paths",
        "length",
        r#"has("a")"#,
        "del(.a)",
        "with_entries(.)",
        "tojson",
        r#"getpath(["a"])"#,
        "def f: .; f | keys",
        ". as $x | $x",
        ".a = 1",
        ".[.k]",
        "@base64",
        "tostring",
        ". == {}",
        "def r: ., (.[]? | r); r",
    ] {
        let jq = Jq::compile(source).unwrap();
        assert!(jq.reads_whole_payload(), "{source}");
    }
    for source in [
        ".a",
        ".items | map(.price * .qty) | add",
        "{id, name: .customer.name}",
        "$headers.desk",
        "1",
        ".a as $x | $x.b",
        "reduce .items[] as $i (0; . + $i.qty)",
        "select(.a) | .b",
        ".a | length",
        "def r: .a | r; r",
        "(.a, .b) | keys",
    ] {
        let jq = Jq::compile(source).unwrap();
        assert!(!jq.reads_whole_payload(), "{source}");
    }
}

#[test]
fn a_translator_reads_what_any_of_its_expressions_reads() {
    let translate = Translate::builder()
        .payload(Jq::compile("{id}").unwrap())
        .set_header("name", Jq::compile(".customer.name").unwrap())
        .set_header("count", Jq::compile(".items | length").unwrap())
        .build();
    let payload = r#"{"id": 7, "customer": {"name": "Ada", "x": 1}, "items": [1, 2], "z": 0}"#;
    let out = translate.apply(message(payload)).unwrap();
    assert_eq!(out.payload_str(), Some(r#"{"id":7}"#));
    assert_eq!(
        out.headers().get("name"),
        Some(&eip_core::message::HeaderValue::Str("Ada".into()))
    );
    assert_eq!(
        out.headers().get("count"),
        Some(&eip_core::message::HeaderValue::Int(2))
    );
}

/// JSON over a few keys the programs name, so that they find something.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("c".to_owned()),
        Just("k".to_owned()),
        Just("v".to_owned()),
        Just("n".to_owned()),
        Just("x".to_owned()),
        Just("items".to_owned()),
        Just("price".to_owned()),
        Just("qty".to_owned()),
        "[a-z]{1,3}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![Just("a".to_owned()), Just("ab".to_owned()), ".{0,4}"].prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// A JSON text with, sometimes, a key given twice or a byte changed (most often no longer JSON).
fn payload() -> impl Strategy<Value = Vec<u8>> {
    (
        json_value(),
        0u8..8,
        any::<prop::sample::Index>(),
        any::<u8>(),
    )
        .prop_map(|(value, how, at, byte)| {
            let mut text = serde_json::to_vec(&value).unwrap_or_default();
            match how {
                0 if !text.is_empty() => {
                    let i = at.index(text.len());
                    text[i] = byte;
                }
                1 if text.first() == Some(&b'{') && text.len() > 2 => {
                    text.splice(1..1, br#""a": [1, {"b": 2}], "#.iter().copied());
                }
                _ => {}
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_payload_gives_the_same_results_projected_or_whole(text in payload()) {
        let msg = message(text);
        for jq in programs() {
            if let Err(failure) = same_both_ways(jq, &msg) {
                return Err(TestCaseError::fail(failure));
            }
        }
    }
}
