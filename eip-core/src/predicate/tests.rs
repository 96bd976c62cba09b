use proptest::prelude::*;

use super::*;
use crate::channel::Selector;

fn p(expr: &str) -> Predicate {
    Predicate::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn json(payload: &str) -> Message {
    Message::new(payload.to_owned())
}

fn err(expr: &str) -> PredicateError {
    match Predicate::parse(expr) {
        Ok(p) => panic!("{expr} parsed as {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn comparisons_with_literals_follow_their_operator() {
    let m = json(r#"{"price": 120, "kind": "buy", "ok": true, "none": null, "ratio": 0.5}"#);
    for (expr, want) in [
        ("$.price > 100", true),
        ("$.price >= 120", true),
        ("$.price < 120", false),
        ("$.price <= 120.0", true),
        ("$.price == 120", true),
        ("$.price != 120", false),
        ("$.price == 120.0", true),
        ("$.ratio < 1", true),
        (r#"$.kind == "buy""#, true),
        ("$.kind == 'buy'", true),
        (r#"$.kind != "sell""#, true),
        (r#"$.kind < "c""#, true),
        ("$.ok == true", true),
        ("$.ok != false", true),
        ("$.none == null", true),
        ("$.none != null", false),
        (r#"$.price == "120""#, false),
        (r#"$.price != "120""#, true),
        (r#"$.price > "1""#, false),
    ] {
        assert_eq!(p(expr).matches(&m), want, "{expr}");
    }
}

#[test]
fn not_binds_tighter_than_and_which_binds_tighter_than_or() {
    let m = json("{}");
    for (expr, want) in [
        ("true or false and false", true),
        ("(true or false) and false", false),
        ("not true and false", false),
        ("not (true and false)", true),
        ("false or not false", true),
        ("not not true", true),
        ("false and true or true", true),
        ("false and (true or true)", false),
    ] {
        assert_eq!(p(expr).matches(&m), want, "{expr}");
    }
}

#[test]
fn existence_means_a_non_empty_result() {
    let m = Message::builder(r#"{"a": {"b": null}, "list": []}"#)
        .header("desk", "fx")
        .subject("trades.nyse")
        .build();
    for (expr, want) in [
        ("exists($.a.b)", true),
        ("$.a.b", true),
        ("exists($.a.c)", false),
        ("$.list[*]", false),
        ("$.list", true),
        (r#"exists(header("desk"))"#, true),
        (r#"header("desk")"#, true),
        (r#"exists(header("nope"))"#, false),
        ("exists(subject)", true),
    ] {
        assert_eq!(p(expr).matches(&m), want, "{expr}");
    }
    assert!(!p("exists(subject)").matches(&json("{}")));
}

#[test]
fn missing_values_and_non_json_payloads_fail_every_test() {
    let not_json = Message::builder("not json").header("n", 3_i64).build();
    let empty = json("{}");
    for expr in [
        "$.price > 1",
        "$.price != 1",
        "$.price == null",
        "exists($.price)",
        "$",
        r#"$.kind =~ ".*""#,
        r#"header("missing") != "x""#,
        r##"subject matches "#""##,
    ] {
        assert!(!p(expr).matches(&not_json), "{expr} on a non-JSON payload");
        if expr != "$" {
            assert!(!p(expr).matches(&empty), "{expr} on {{}}");
        }
        assert!(
            p(&format!("not ({expr})")).matches(&not_json),
            "not ({expr})"
        );
    }
    assert!(
        p(r#"header("n") == 3"#).matches(&not_json),
        "headers still work"
    );
}

#[test]
fn a_multi_valued_path_passes_when_any_value_does() {
    let m = json(r#"{"items": [{"p": 5, "k": "a"}, {"p": 500, "k": "b"}]}"#);
    assert!(p("$.items[*].p > 100").matches(&m));
    assert!(!p("$.items[*].p > 1000").matches(&m));
    assert!(p(r#"$.items[*].k == "b""#).matches(&m));
    assert!(p(r#"$.items[*].k != "a""#).matches(&m), "any value differs");
    assert!(p("$..p < 10").matches(&m));
    assert!(p("$.items[?@.p > 100 && @.k == 'b'].k").matches(&m));
    assert!(
        !p(r#"$.items == "a""#).matches(&m),
        "an array equals no literal"
    );
    let lines = json(r#"{"lines": [{"shipped": 2, "ordered": 2}, {"shipped": 1, "ordered": 3}]}"#);
    assert!(p("$.lines[?@.shipped < @.ordered]").matches(&lines));
    assert!(!p("$.lines[?@.shipped > @.ordered]").matches(&lines));
}

#[test]
fn header_tests_compare_typed_values() {
    let m = Message::builder("{}")
        .header("type", "order.created")
        .header("priority", 7_i64)
        .header("weight", 2.5)
        .header("urgent", true)
        .header("raw", bytes::Bytes::from_static(b"abc"))
        .build();
    for (expr, want) in [
        (r#"header("type") == "order.created""#, true),
        (r#"header("type") =~ "^order\.""#, true),
        (r#"header("type") =~ "^created""#, false),
        (r#"header("priority") > 5"#, true),
        (r#"header("priority") == 7.0"#, true),
        (r#"header("priority") == "7""#, false),
        (r#"header("weight") < 3"#, true),
        (r#"header("urgent") == true"#, true),
        (r#"header("raw") == "abc""#, true),
        (r#"header("raw") =~ "b""#, true),
        (r#"header("priority") =~ "7""#, false),
        (r#"header("type") matches "order.*""#, true),
    ] {
        assert_eq!(p(expr).matches(&m), want, "{expr}");
    }
}

#[test]
fn subject_matches_a_topic_pattern() {
    let stock = p(r#"subject matches "stock.*.nyse""#);
    let on = |s: &str| Message::builder("x").subject(s).build();
    assert!(stock.matches(&on("stock.ibm.nyse")));
    assert!(!stock.matches(&on("stock.ibm.lse")));
    assert!(!stock.matches(&on("stock.nyse")));
    assert!(p(r#"subject matches "stock.#""#).matches(&on("stock")));
    assert!(p(r#"subject == "stock""#).matches(&on("stock")));
}

#[test]
fn regex_on_a_json_path_applies_to_strings_only() {
    let m = json(r#"{"sku": "A-123", "n": 123}"#);
    assert!(p(r#"$.sku =~ "^A-[0-9]+$""#).matches(&m));
    assert!(!p(r#"$.n =~ "123""#).matches(&m));
}

#[test]
fn programmatic_predicates_combine_and_print_as_expressions_that_parse_back() {
    let m = Message::builder(r#"{"price": 150}"#)
        .header("desk", "fx")
        .header("n", 2_i64)
        .subject("trades.fx")
        .build();
    let built = [
        Predicate::header_equals("desk", "fx"),
        Predicate::header_equals("n", 2_i64),
        Predicate::header_equals("odd \"name\"", "a\\b\n"),
        Predicate::header_exists("desk"),
        Predicate::header_matches("desk", "^f").unwrap(),
        Predicate::subject_matches("trades.*").unwrap(),
        Predicate::json_path_exists("$.price").unwrap(),
        Predicate::header_equals("desk", "fx").and(p("$.price > 100")),
        Predicate::header_equals("desk", "eq").or(p("$.price > 100").not()),
        p("true or false").and(p("false")).not(),
        Predicate::header_matches("desk", r#"^f\w"?$"#).unwrap(),
    ];
    let want = [
        true, true, false, true, true, true, true, true, false, true, true,
    ];
    for (pred, want) in built.iter().zip(want) {
        assert_eq!(pred.matches(&m), want, "{pred}");
        let again = Predicate::parse(pred.as_str()).unwrap_or_else(|e| panic!("{pred}: {e}"));
        assert_eq!(again.matches(&m), want, "{pred} parsed back");
    }
    assert_eq!(
        built[7].to_string(),
        r#"(header("desk") == "fx") and ($.price > 100)"#
    );
    assert_eq!(
        format!("{:?}", built[3]),
        r#"Predicate("exists(header(\"desk\"))")"#
    );
    let from_str: Predicate = "$.price == 150".parse().unwrap();
    assert_eq!(from_str.to_string(), "$.price == 150");
}

#[test]
fn a_predicate_is_a_selector() {
    let selector: Selector = p(r#"header("type") == "order""#).into();
    assert!(selector.matches(&Message::builder("x").header("type", "order").build()));
    assert!(!selector.matches(&Message::new("x")));
    assert_eq!(
        format!("{selector:?}"),
        r#"Selector(header("type") == "order")"#
    );
}

#[test]
fn payload_is_parsed_once_across_predicates() {
    let m = json(r#"{"a": 1, "b": {"c": [1, 2, 3]}}"#);
    let predicates = [p("$.a == 1"), p("exists($.b.c)"), p("$.b.c[*] > 2")];
    assert!(!m.is_json_parsed());
    assert!(predicates[0].matches(&m));
    let parsed: *const serde_json::Value = m.json_value().unwrap();
    for pred in &predicates {
        assert!(pred.matches(&m));
        assert!(std::ptr::eq(parsed, m.json_value().unwrap()));
    }
}

#[test]
fn syntax_errors_give_the_byte_where_they_are() {
    for (expr, offset) in [
        ("", 0),
        ("   ", 3),
        ("$.a ==", 6),
        ("$.a == 1 and", 12),
        ("$.a == 1 $.b", 9),
        ("($.a == 1", 9),
        ("$.a == 1)", 8),
        ("100 < $.a", 0),
        (r#""x" == $.a"#, 0),
        ("$.a AND $.b", 4),
        ("$.a and AND", 8),
        ("exists $.a", 7),
        ("exists(1)", 7),
        ("header(desk) == 1", 7),
        (r#"header("desk" == 1"#, 14),
        ("$.a == nope", 7),
        ("$.a < true", 4),
        ("$.a >= null", 4),
        ("subject matches 1", 16),
        ("$.a == 1 || $.b", 9),
        ("$.a !", 4),
        ("not", 3),
        ("foo", 0),
    ] {
        assert_eq!(err(expr).offset, offset, "{expr:?}: {}", err(expr));
    }
}

#[test]
fn bad_paths_regexes_and_patterns_report_inside_the_expression() {
    let e = err(r#"header("a") == 1 or $.a[?@.b ==] > 1"#);
    assert!(e.offset > 20, "{e}");
    assert!(
        matches!(&e.kind, PredicateErrorKind::JsonPath { path, reason } if path == "$.a[?@.b ==]" && !reason.is_empty()),
        "{e}"
    );
    let e = err("$.a.-b == 1");
    assert_eq!(e.offset, 4, "{e}");
    let e = err(r#"$.a == 1 and header("x") =~ "(unclosed""#);
    assert_eq!(e.offset, 28);
    assert!(matches!(e.kind, PredicateErrorKind::Regex(_)), "{e}");
    let e = err(r#"subject matches "a.b*.c""#);
    assert_eq!(e.offset, 16);
    assert!(matches!(e.kind, PredicateErrorKind::TopicPattern(_)), "{e}");
    let e = err("$.items[?length(@.*) < 3] or true");
    assert!(
        matches!(&e.kind, PredicateErrorKind::FunctionType { function, .. } if function == "length"),
        "{e}"
    );
    assert_eq!(e.offset, 9, "{e}");
    let e = err("$.items[?search(@.sku, 'A(')] or true");
    assert!(matches!(e.kind, PredicateErrorKind::IRegexp { .. }), "{e}");
    assert_eq!(e.offset, 23, "{e}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(matches!(err(&deep).kind, PredicateErrorKind::TooDeep(_)));
    let nots = format!("{}true", "not ".repeat(10_000));
    assert!(matches!(err(&nots).kind, PredicateErrorKind::TooDeep(_)));
    let fine = format!(
        "{}true{}",
        "(".repeat(parser::MAX_DEPTH),
        ")".repeat(parser::MAX_DEPTH)
    );
    assert!(p(&fine).matches(&json("{}")));
    let deep_path = format!("$.a{}", "[?@".repeat(500));
    assert!(Predicate::parse(&deep_path).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_never_panic_the_parser(s in "\\PC*") {
        let _ = Predicate::parse(&s);
    }

    #[test]
    fn predicate_shaped_strings_never_panic_and_evaluate_safely(
        parts in proptest::collection::vec(prop_oneof![
            Just("$"), Just(".a"), Just("["), Just("]"), Just("?"), Just("@"), Just("("),
            Just(")"), Just(" "), Just("'"), Just("\""), Just("=="), Just("!="), Just("<"),
            Just(">="), Just("=~"), Just("&&"), Just("and"), Just("or"), Just("not"),
            Just("exists"), Just("header"), Just("subject"), Just("matches"), Just("1"),
            Just("-2.5e3"), Just("true"), Just("null"), Just("\\"), Just("*"), Just(".."),
            Just(":"), Just(","), Just("match"), Just("length"), Just("é"),
        ], 0..24),
    ) {
        let s: String = parts.concat();
        if let Ok(pred) = Predicate::parse(&s) {
            let m = Message::builder(r#"{"a": [1, {"a": "x"}], "b": null}"#)
                .header("a", "x")
                .subject("a.b")
                .build();
            let _ = pred.matches(&m);
            let _ = pred.matches(&Message::new("nope"));
            let again = Predicate::parse(pred.as_str());
            prop_assert!(again.is_ok());
        }
    }

    #[test]
    fn filter_paths_evaluate_without_panicking(
        parts in proptest::collection::vec(prop_oneof![
            Just("@"), Just("@.a"), Just("@[0]"), Just("@.*"), Just("$.a"), Just("@..a"),
            Just("1"), Just("-1.5"), Just("'x'"), Just("true"), Just("null"), Just("=="),
            Just("!="), Just("<"), Just(">="), Just("&&"), Just("||"), Just("!"), Just("("),
            Just(")"), Just("length(@)"), Just("count(@.*)"), Just("value(@..a)"),
            Just("in(@, [1, 2])"), Just("@[1:-1:-1]"), Just("@[?@ > 0]"),
        ], 1..8),
        doc in prop_oneof![
            Just(r#"{"a": [1, {"a": "x"}, [0, 1, 2]], "b": null}"#),
            Just(r#"[1, -2, "x", {"a": {"a": [true]}}, [], {}]"#),
            Just("3"),
        ],
    ) {
        let path = format!("$..[?{}]", parts.join(" "));
        if let Ok(pred) = Predicate::parse(&path) {
            let _ = pred.matches(&Message::new(doc));
        }
    }
}
