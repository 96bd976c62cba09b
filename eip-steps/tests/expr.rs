//! jq expressions: compile errors with their position, what an expression sees of a message,
//! and each way running one can fail.
#![cfg(feature = "jq")]

use eip_core::Message;
use eip_steps::expr::{Jq, JqErrorKind, MAX_OUTPUTS, RunError};
use proptest::prelude::*;
use serde_json::{Value, json};

fn compile_error(source: &str) -> (usize, JqErrorKind) {
    let err = Jq::compile(source).unwrap_err();
    (err.offset(), err.kind().clone())
}

#[test]
fn compile_errors_give_the_byte_where_the_expression_went_wrong() {
    assert_eq!(
        compile_error(".a | foo(1)"),
        (
            5,
            JqErrorKind::Undefined {
                what: "filter",
                name: "foo/1".into()
            }
        )
    );
    assert_eq!(
        compile_error("[.a, $nope]"),
        (
            5,
            JqErrorKind::Undefined {
                what: "variable",
                name: "$nope".into()
            }
        )
    );
    assert_eq!(
        compile_error("{a: (.b | .c}"),
        (
            12,
            JqErrorKind::Unexpected {
                expected: "the end of the `(` at byte 4".into(),
                found: "`}`".into()
            }
        )
    );
    assert_eq!(
        compile_error(".a | [1, 2"),
        (5, JqErrorKind::Unclosed("[".into()))
    );
    let (offset, kind) = compile_error(".a +");
    assert_eq!(offset, 4);
    assert!(
        matches!(&kind, JqErrorKind::Unexpected { found, .. } if found == "end of input"),
        "{kind:?}"
    );
    let (offset, kind) = compile_error("if . then 1");
    assert_eq!(offset, 11);
    assert!(matches!(kind, JqErrorKind::Unexpected { .. }), "{kind:?}");
}

#[test]
fn an_empty_expression_is_an_error_not_the_identity() {
    let err = Jq::compile("").unwrap_err();
    assert_eq!(err.offset(), 0);
    assert_eq!(
        err.to_string(),
        "invalid jq expression at byte 0: expected term, found end of input"
    );
}

#[test]
fn modules_and_the_environment_are_not_reachable() {
    assert_eq!(
        compile_error(r#"import "x" as x; ."#).1,
        JqErrorKind::Import
    );
    assert_eq!(
        compile_error("[1, env.HOME]"),
        (
            4,
            JqErrorKind::Unavailable {
                name: "env",
                why: "the process environment may hold secrets"
            }
        )
    );
    assert!(matches!(
        compile_error("$ENV.HOME").1,
        JqErrorKind::Unavailable { name: "$ENV", .. }
    ));
    let err = Jq::compile("input").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid jq expression at byte 0: `input` is not available: an expression reads one \
         message, its payload is `.`"
    );
}

#[test]
fn the_standard_library_is_there() {
    let msg = Message::new(r#"{"s": "a-b", "xs": [3, 1, 2], "t": 0}"#);
    let jq = Jq::compile(
        r#"[(.s | test("a.b")), (.xs | sort | map(. * 2)), (.s | @base64), (.t | todate), (.xs | add / length | floor)]"#,
    )
    .unwrap();
    assert_eq!(
        jq.one(&msg).unwrap(),
        json!([true, [2, 4, 6], "YS1i", "1970-01-01T00:00:00Z", 2])
    );
}

#[test]
fn huge_numbers_in_expressions_and_payloads_do_not_panic() {
    let msg = Message::new(r#"{"n": 18446744073709551615, "f": 1.5e300}"#);
    let jq =
        Jq::compile("[.n, .n + 1, .f * 1e300, 1e1000, 123456789012345678901234567890]").unwrap();
    let out = jq.one(&msg).unwrap();
    assert_eq!(out[0], json!(18446744073709551615u64));
    assert_eq!(out[2], Value::Null, "not finite: null, as in jq");
    assert_eq!(out[3], Value::Null);
    assert!(out[4].is_f64(), "{out}");
}

#[test]
fn headers_are_an_object_of_typed_values_and_id_is_a_string() {
    let msg = Message::builder("null")
        .header("desk", "fx")
        .header("qty", 3_i64)
        .header("rate", 1.25)
        .header("urgent", true)
        .header("raw", bytes::Bytes::from_static(b"ab\xff"))
        .build();
    let jq = Jq::compile("[$headers, $id]").unwrap();
    assert_eq!(
        jq.one(&msg).unwrap(),
        json!([
            {"desk": "fx", "qty": 3, "rate": 1.25, "urgent": true, "raw": "ab\u{fffd}"},
            msg.id().to_string()
        ])
    );
    let none = Jq::compile("$headers").unwrap();
    assert_eq!(none.one(&Message::new("1")).unwrap(), json!({}));
}

#[test]
fn a_payload_that_is_not_json_is_reported_with_its_position() {
    let jq = Jq::compile(".").unwrap();
    let err = jq.one(&Message::new("{\"a\": 1,\n  oops}")).unwrap_err();
    let RunError::NotJson { line, column, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!((*line, *column), (2, 3));
    assert_eq!(
        err.to_string(),
        "payload is not JSON: key must be a string at line 2 column 3"
    );
    assert!(matches!(
        jq.one(&Message::new("NaN")),
        Err(RunError::NotJson { .. })
    ));
    assert!(matches!(
        jq.one(&Message::new("1 2")),
        Err(RunError::NotJson { .. })
    ));
    assert!(matches!(
        jq.one_payload(&Message::new(vec![0xff, 0xfe])),
        Err(RunError::NotJson { .. })
    ));
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(
        jq.one(&Message::new(deep)),
        Err(RunError::NotJson { .. })
    ));
}

#[test]
fn a_raised_error_carries_its_value() {
    let msg = Message::new(r#"{"code": 7}"#);
    let text = Jq::compile(r#"error("no total")"#).unwrap();
    assert_eq!(text.one(&msg), Err(RunError::Raised("no total".into())));
    assert_eq!(
        text.one(&msg).unwrap_err().to_string(),
        "jq error: no total"
    );
    let object = Jq::compile("error({code})").unwrap();
    assert_eq!(
        object.one(&msg),
        Err(RunError::Raised(r#"{"code":7}"#.into()))
    );
    let caught = Jq::compile(r#"try error("x") catch ("caught: " + .)"#).unwrap();
    assert_eq!(caught.one(&msg).unwrap(), json!("caught: x"));
}

#[test]
fn a_type_error_carries_jaqs_message() {
    let msg = Message::new(r#"{"items": null, "name": "ada"}"#);
    let err = Jq::compile(".items[]").unwrap().all(&msg).unwrap_err();
    assert_eq!(
        err,
        RunError::Failed("cannot use null as iterable (array or object)".into())
    );
    assert_eq!(
        err.to_string(),
        "jq: cannot use null as iterable (array or object)"
    );
    let math = Jq::compile(".name - 1").unwrap().one(&msg).unwrap_err();
    assert!(
        matches!(&math, RunError::Failed(m) if m.starts_with("cannot calculate")),
        "{math}"
    );
    let halt = Jq::compile("halt").unwrap().one(&msg).unwrap_err();
    assert!(matches!(halt, RunError::Failed(_)), "{halt}");
}

#[test]
fn long_values_in_errors_are_shortened() {
    let big = format!(r#"{{"a": "{}"}}"#, "x".repeat(10_000));
    let err = Jq::compile(".a | error")
        .unwrap()
        .one(&Message::new(big))
        .unwrap_err();
    assert!(err.to_string().len() < 300, "{}", err.to_string().len());
    let err = Jq::compile(". - 1")
        .unwrap()
        .one(&Message::new(format!("[{}]", "1,".repeat(5000) + "1")))
        .unwrap_err();
    assert!(err.to_string().len() < 300, "{}", err.to_string().len());
}

#[test]
fn one_wants_exactly_one_output() {
    let msg = Message::new(r#"{"items": [1, 2, 3]}"#);
    let err = Jq::compile(".items[]").unwrap().one(&msg).unwrap_err();
    assert_eq!(err, RunError::Outputs(3));
    assert_eq!(
        err.to_string(),
        "expected exactly one output from jq, got 3"
    );
    assert_eq!(
        Jq::compile("empty").unwrap().one_payload(&msg),
        Err(RunError::Outputs(0))
    );
    assert_eq!(
        Jq::compile(".items[], error(\"late\")").unwrap().one(&msg),
        Err(RunError::Raised("late".into())),
        "an error after the first output is the expression's failure"
    );
}

#[test]
fn all_takes_every_output_in_order_up_to_the_bound() {
    let msg = Message::new(r#"{"items": [{"n": 1}, {"n": 2}]}"#);
    assert_eq!(
        Jq::compile(".items[]").unwrap().all(&msg).unwrap(),
        vec![json!({"n": 1}), json!({"n": 2})]
    );
    assert_eq!(
        Jq::compile("empty").unwrap().all(&msg).unwrap(),
        Vec::<Value>::new()
    );
    assert_eq!(
        Jq::compile("range(1e12)").unwrap().all(&msg),
        Err(RunError::TooManyOutputs(MAX_OUTPUTS))
    );
}

#[test]
fn outputs_that_are_not_json_are_errors() {
    let msg = Message::new("{}");
    let err = Jq::compile("{(1): 2}")
        .unwrap()
        .one_payload(&msg)
        .unwrap_err();
    assert!(
        matches!(&err, RunError::OutputNotJson(m) if m.contains("not a string")),
        "{err}"
    );
}

#[test]
fn one_payload_writes_compact_json_keeping_key_order() {
    let msg = Message::new(r#"{"b": 1, "a": [true, null, "x\"y"], "c": 2.5}"#);
    let out = Jq::compile("{z: .c, b, a}")
        .unwrap()
        .one_payload(&msg)
        .unwrap();
    assert_eq!(&out[..], br#"{"z":2.5,"b":1,"a":[true,null,"x\"y"]}"#);
}

#[test]
fn a_compiled_expression_is_cheap_to_clone_and_keeps_its_source() {
    let jq = Jq::compile(".a").unwrap();
    let copy = jq.clone();
    assert_eq!(copy.source(), ".a");
    assert_eq!(format!("{jq:?}"), r#"Jq(".a")"#);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".*", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn the_identity_gives_back_any_json_payload(value in json_value()) {
        let msg = Message::new(serde_json::to_vec(&value).unwrap());
        let identity = Jq::compile(".").unwrap();
        prop_assert_eq!(&identity.one(&msg).unwrap(), &value);
        let payload = identity.one_payload(&msg).unwrap();
        prop_assert_eq!(&serde_json::from_slice::<Value>(&payload).unwrap(), &value);
    }

    #[test]
    fn compiling_any_text_never_panics(source in "\\PC{0,40}") {
        let _ = Jq::compile(&source);
    }

    #[test]
    fn number_literals_of_any_shape_never_panic(literal in "[0-9][0-9.eE+-]{0,12}") {
        let big = "9".repeat(400);
        let source = format!("[{literal} * 1.5, ({literal} | floor), {big} * 1.5, ({big} | tostring)]");
        if let Ok(jq) = Jq::compile(&source) {
            let _ = jq.one_payload(&Message::new("null"));
        }
    }

    #[test]
    fn compiling_jq_like_text_never_panics(source in "[.\\[\\]{}()|,;:$a-z0-9\" +*/-]{0,30}") {
        if let Ok(jq) = Jq::compile(&source) {
            let _ = jq.all(&Message::new(r#"{"a": [1, {"b": "c"}]}"#));
        }
    }
}
