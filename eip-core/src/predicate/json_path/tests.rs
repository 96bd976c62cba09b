//! RFC 9535 by its examples (§2, in data of our own), the type rules of §2.4.3, syntax errors
//! and a property test of the streaming walk against a reference evaluator written from the
//! RFC's nodelist semantics.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::syntax::Step;
use super::{JsonPath, JsonPathQuery, filter, walk};
use crate::predicate::error::PredicateErrorKind;

fn select(path: &str, doc: &Value) -> Vec<Value> {
    match JsonPath::parse(path) {
        Ok(p) => p.select(doc).into_iter().cloned().collect(),
        Err(e) => panic!("{path}: {e}"),
    }
}

fn refused(path: &str) -> (usize, PredicateErrorKind) {
    match JsonPath::parse(path) {
        Ok(_) => panic!("{path} was accepted"),
        Err(e) => (e.offset, e.kind),
    }
}

fn store() -> Value {
    json!({
        "shelf": [
            {"title": "Dune", "year": 1965, "tags": ["sf", "classic"], "isbn": "0-441-17271-7"},
            {"title": "Emma", "year": 1815, "tags": ["classic"]},
            {"title": "Neuromancer", "year": 1984.0, "tags": []},
        ],
        "bike": {"colour": "teal", "price": 399},
        "o": {"j j": {"k.k": 3}},
        "'": {"@": 2},
    })
}

#[test]
fn root_names_and_escapes_select_members() {
    let doc = store();
    assert_eq!(select("$", &doc), std::slice::from_ref(&doc));
    assert_eq!(select("$.bike.colour", &doc), [json!("teal")]);
    assert_eq!(select("$.o['j j']['k.k']", &doc), [json!(3)]);
    assert_eq!(select(r#"$["o"]["j j"]"#, &doc), [json!({"k.k": 3})]);
    assert_eq!(select(r#"$["'"]["@"]"#, &doc), [json!(2)]);
    assert_eq!(select(r"$['\'']['\u0040']", &doc), [json!(2)]);
    let smile = json!({"☺": 1, "𝄞": 2, "a\nb": 3});
    assert_eq!(select(r"$['\u263A']", &smile), [json!(1)]);
    assert_eq!(select(r"$['\uD834\uDD1E']", &smile), [json!(2)]);
    assert_eq!(select(r#"$["a\nb"]"#, &smile), [json!(3)]);
    assert_eq!(select("$.☺", &smile), [json!(1)]);
    assert!(select("$.missing", &doc).is_empty());
}

#[test]
fn wildcards_indices_and_slices_select_children() {
    let doc = json!({"o": {"a": 1, "b": 2}, "a": [10, 11, 12, 13, 14, 15, 16]});
    assert_eq!(select("$.o[*]", &doc).len(), 2);
    assert_eq!(select("$.o[*, *]", &doc).len(), 4);
    assert_eq!(select("$.a[1]", &doc), [json!(11)]);
    assert_eq!(select("$.a[-2]", &doc), [json!(15)]);
    assert!(select("$.a[7]", &doc).is_empty());
    assert!(select("$.a[-8]", &doc).is_empty());
    assert!(select("$.o[0]", &doc).is_empty());
    assert_eq!(select("$.a[1:3]", &doc), [json!(11), json!(12)]);
    assert_eq!(select("$.a[5:]", &doc), [json!(15), json!(16)]);
    assert_eq!(select("$.a[1:5:2]", &doc), [json!(11), json!(13)]);
    assert_eq!(select("$.a[5:1:-2]", &doc), [json!(15), json!(13)]);
    assert_eq!(select("$.a[::-3]", &doc), [json!(16), json!(13), json!(10)]);
    assert_eq!(select("$.a[-2:]", &doc), [json!(15), json!(16)]);
    assert!(select("$.a[::0]", &doc).is_empty());
    assert!(select("$.o[0:2]", &doc).is_empty());
    assert_eq!(select("$.a[ 0 , -1 ]", &doc), [json!(10), json!(16)]);
    assert_eq!(
        select("$.a[0:2, 5]", &doc),
        [json!(10), json!(11), json!(15)]
    );
    assert_eq!(select("$.a[0, 0]", &doc), [json!(10), json!(10)]);
}

#[test]
fn descendants_come_before_their_children_in_document_order() {
    let doc = json!({"o": {"j": 1, "k": 2}, "a": [5, 3, [{"j": 4}, {"k": 6}]]});
    // serde_json's map keeps members sorted by key: "a" comes before "o".
    assert_eq!(select("$..j", &doc), [json!(4), json!(1)]);
    assert_eq!(select("$..[0]", &doc), [json!(5), json!({"j": 4})]);
    assert_eq!(select("$..*", &doc).len(), 11);
    assert_eq!(select("$.a..[0, 1]", &doc).len(), 4);
    assert_eq!(
        select("$.o..[*, *]", &doc),
        [json!(1), json!(2), json!(1), json!(2)]
    );
}

#[test]
fn null_is_a_value_and_absence_is_nothing() {
    let doc = json!({"a": null, "b": [null], "c": [{}], "null": 1});
    assert_eq!(select("$.a", &doc), [Value::Null]);
    assert!(select("$.a[0]", &doc).is_empty());
    assert!(select("$.a.d", &doc).is_empty());
    assert_eq!(select("$.b[0]", &doc), [Value::Null]);
    assert_eq!(select("$.b[*]", &doc), [Value::Null]);
    assert_eq!(select("$.b[?@]", &doc), [Value::Null]);
    assert_eq!(select("$.b[?@ == null]", &doc), [Value::Null]);
    assert!(select("$.c[?@.d == null]", &doc).is_empty());
    assert_eq!(select("$.null", &doc), [json!(1)]);
}

#[test]
fn comparisons_follow_the_rfc_table() {
    let doc = json!({"obj": {"x": "y"}, "arr": [2, 3], "one": 1, "onef": 1.0});
    let holds = |expr: &str| !select(&format!("$[?{expr}]"), &json!([doc.clone()])).is_empty();
    let doc_path = |e: &str| e.replace('$', "$[0]");
    for (expr, expected) in [
        ("$.absent1 == $.absent2", true),
        ("$.absent1 <= $.absent2", true),
        ("$.absent == 'g'", false),
        ("$.absent1 != $.absent2", false),
        ("$.absent != 'g'", true),
        ("1 <= 2", true),
        ("1 > 2", false),
        ("13 == '13'", false),
        ("'a' <= 'b'", true),
        ("'a' > 'b'", false),
        ("'Z' < 'a'", true),
        ("'é' > 'z'", true),
        ("$.obj == $.arr", false),
        ("$.obj != $.arr", true),
        ("$.obj == $.obj", true),
        ("$.arr == $.arr", true),
        ("$.obj <= $.arr", false),
        ("1 <= $.arr", false),
        ("1 >= $.arr", false),
        ("true <= true", true),
        ("true > true", false),
        ("null == null", true),
        ("$.one == $.onef", true),
        ("$.one == 1e0", true),
        ("1 == -0.0e2 + 1", false),
        ("$.arr == [2, 3]", false),
        ("$.one < 1.5", true),
        ("-0 == 0", true),
    ] {
        match JsonPath::parse(&format!("$[?{}]", doc_path(expr))) {
            Ok(_) => assert_eq!(holds(&doc_path(expr)), expected, "{expr}"),
            // Arithmetic and array literals are not in the grammar.
            Err(_) => assert!(expr.contains('+') || expr.contains('['), "{expr}"),
        }
    }
}

#[test]
fn filters_test_each_child() {
    let doc = json!({
        "a": [3, 5, 1, 2, 4, 6, {"b": "j"}, {"b": "k"}, {"b": {}}, {"b": "kilo"}],
        "o": {"p": 1, "q": 2, "r": 3, "s": 5, "t": {"u": 6}},
        "e": "f",
    });
    assert_eq!(select("$.a[?@.b == 'kilo']", &doc), [json!({"b": "kilo"})]);
    assert_eq!(
        select("$.a[?(@.b == 'kilo')]", &doc),
        [json!({"b": "kilo"})]
    );
    assert_eq!(
        select("$.a[?@ > 3.5]", &doc),
        [json!(5), json!(4), json!(6)]
    );
    assert_eq!(select("$.a[?@.b]", &doc).len(), 4);
    assert_eq!(select("$[?@.*]", &doc).len(), 2);
    assert_eq!(select("$.o[?@ < 3, ?@ < 3]", &doc).len(), 4);
    assert_eq!(
        select("$.a[?@ < 2 || @.b == 'k']", &doc),
        [json!(1), json!({"b": "k"})]
    );
    assert_eq!(select("$.o[?@ > 1 && @ < 4]", &doc), [json!(2), json!(3)]);
    assert_eq!(select("$.o[?@.u || @.x]", &doc), [json!({"u": 6})]);
    assert_eq!(select("$.a[?@.b == $.x]", &doc).len(), 6);
    assert_eq!(select("$.a[?@ == @]", &doc).len(), 10);
    assert_eq!(select("$.a[?!@.b]", &doc).len(), 6);
    assert_eq!(select("$.a[?!(@ > 1 || @.b)]", &doc), [json!(1)]);
    assert_eq!(select("$.a[? @ > 5 ]", &doc), [json!(6)]);
    assert_eq!(select("$.a[?@<2||@>5&&@<7]", &doc), [json!(1), json!(6)]);
    assert_eq!(select("$.a[?(@<2||@>5)&&@<6]", &doc), [json!(1)]);
}

#[test]
fn filters_nest() {
    let doc = json!([[0, 1], [2, 3], [1], "x", {"k": 2}]);
    assert_eq!(
        select("$[?@[?@ > 1]]", &doc),
        [json!([2, 3]), json!({"k": 2})]
    );
    assert_eq!(select("$[?!@[?@ > 1]]", &doc).len(), 3);
    assert_eq!(select("$[?@[?@[?@ == 1]]]", &doc), Vec::<Value>::new());
    assert_eq!(select("$[?count(@[?@ >= 1]) == 2]", &doc), [json!([2, 3])]);
}

#[test]
fn functions_compute_values_and_tests() {
    let doc = json!([
        {"s": "añb", "a": [1, 2], "p": "a.b", "t": "Europe/Paris"},
        {"s": "ab", "a": [], "p": "(", "t": "Asia/Tokyo"},
        {"s": "a\rb", "a": [3], "c": [{"colour": "red"}], "t": "europe/x"},
    ]);
    assert_eq!(select("$[?length(@.s) == 3]", &doc).len(), 2);
    assert_eq!(
        select("$[?length(@.a) > 0].s", &doc),
        [json!("añb"), json!("a\rb")]
    );
    assert_eq!(select("$[?length(@.absent) == 0]", &doc).len(), 0);
    assert_eq!(select("$[?length(1) == 1]", &doc).len(), 0);
    assert_eq!(select("$[?length('ab') == 2]", &doc).len(), 3);
    assert_eq!(select("$[?count(@.*) == 4]", &doc).len(), 3);
    assert_eq!(select("$[?count(@.c.*) == 1]", &doc).len(), 1);
    assert_eq!(select("$[?count(@..*) > 6]", &doc).len(), 1);
    assert_eq!(select("$[?value(@..colour) == 'red']", &doc).len(), 1);
    assert_eq!(select("$[?value(@.a[*]) == 3]", &doc).len(), 1);
    assert_eq!(
        select("$[?match(@.t, 'Europe/.*')].s", &doc),
        [json!("añb")]
    );
    assert_eq!(select("$[?match(@.s, 'a.b')]", &doc).len(), 1);
    assert_eq!(select("$[?search(@.t, '[Pp]ar')]", &doc).len(), 1);
    assert_eq!(select("$[?search(@.t, 'a/')]", &doc).len(), 1);
    assert_eq!(select("$[?!match(@.t, 'Europe/.*')]", &doc).len(), 2);
    assert_eq!(
        select(r"$[?match(@.t, '\\p{Lu}\\p{Ll}+/.*')]", &doc).len(),
        2
    );
    // A pattern from the document compiles when the filter runs; an invalid one is false.
    assert_eq!(select("$[?match(@.s, @.p)]", &doc).len(), 1);
    assert_eq!(select("$[?search(@.s, @.p)]", &doc).len(), 1);
    assert_eq!(select("$[?match(@.s, 1)]", &doc).len(), 0);
}

#[test]
fn ill_typed_functions_are_refused_at_the_function() {
    for (path, function) in [
        ("$[?length(@.*) < 3]", "length"),
        ("$[?count(@..*)]", "count"),
        ("$[?count(1) == 1]", "count"),
        ("$[?value(@..colour)]", "value"),
        ("$[?match(@.t, 'x') == true]", "match"),
        ("$[?length(@.a) ]", "length"),
        ("$[?length(@.a, @.b) == 1]", "length"),
        ("$[?match(@.t) ]", "match"),
        ("$[?search(@..t, 'x')]", "search"),
        ("$[?length(@.a == 1) == 1]", "length"),
        ("$[?count(length(@.a)) > 0]", "count"),
    ] {
        let (offset, kind) = refused(path);
        assert_eq!(offset, 3, "{path}: {kind:?}");
        match kind {
            PredicateErrorKind::FunctionType {
                function: f,
                reason,
            } => {
                assert_eq!(f, function, "{path}");
                assert!(!reason.is_empty());
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    for path in [
        "$[?length(@) < 3]",
        "$[?count(@.*) == 1]",
        "$[?match(@.t, 'Europe/.*')]",
        "$[?value(@..c) == 'red']",
        "$[?length(value(@.*)) > 1]",
        "$[?search(@.a, value(@.p))]",
    ] {
        assert!(JsonPath::parse(path).is_ok(), "{path}");
    }
    let (offset, kind) = refused("$[?nope(@.a)]");
    assert_eq!(offset, 3);
    assert!(
        matches!(kind, PredicateErrorKind::JsonPath { ref reason, .. } if reason.contains("unknown"))
    );
    let (offset, kind) = refused("$[?@.* == 1]");
    assert_eq!(offset, 3);
    assert!(
        matches!(kind, PredicateErrorKind::JsonPath { ref reason, .. } if reason.contains("singular"))
    );
}

#[test]
fn invalid_patterns_are_refused_where_they_are_written() {
    let (offset, kind) = refused(r"$[?match(@.a, 'a\\d')]");
    assert_eq!(offset, 14);
    assert!(matches!(kind, PredicateErrorKind::IRegexp { ref pattern, .. } if pattern == r"a\d"));
    for pattern in ["(?i)a", "a{2,1}", "[b-a]", "a)", r"\1"] {
        let path = format!("$[?search(@, '{}')]", pattern.replace('\\', "\\\\"));
        assert!(
            matches!(refused(&path).1, PredicateErrorKind::IRegexp { .. }),
            "{path}"
        );
    }
}

#[test]
fn invalid_syntax_is_refused_with_its_position() {
    for (path, offset) in [
        ("$[01]", 2),
        ("$[-0]", 2),
        ("$[1:02]", 4),
        ("$.a.", 4),
        ("$.", 2),
        ("$. a", 2),
        ("$..", 3),
        ("$[9007199254740992]", 2),
        ("$[-9007199254740992]", 2),
        ("$['a\u{1}']", 4),
        ("$['a", 2),
        (r#"$['\"']"#, 3),
        (r"$['\x']", 3),
        (r"$['\uD800']", 3),
        (r"$['\uDC00']", 3),
        ("$[?length (@) < 1]", 3),
        ("$[?@.a == 01]", 10),
        ("$[?@.a == 1.]", 12),
        ("$[?true]", 3),
        ("$[?@.a = 1]", 7),
        ("$[]", 2),
        ("$[0,]", 4),
        ("$ ", 1),
        ("a", 0),
        ("$[?@.a == True]", 10),
        ("$[?!!@.a]", 4),
    ] {
        assert_eq!(refused(path).0, offset, "{path}: {:?}", refused(path).1);
    }
    assert!(JsonPath::parse("$[9007199254740991]").is_ok());
    assert!(JsonPath::parse("$ [0] .a ..b").is_ok());
    assert!(JsonPath::parse("$[?@.a == -0]").is_ok());
    assert!(JsonPath::parse("$[?@.a == 1.5E+3]").is_ok());
}

#[test]
fn errors_count_from_the_start_of_the_whole_expression() {
    let err = JsonPathQuery::parse("$.a[?@.b ==]", 10).unwrap_err();
    assert_eq!(err.offset, 10 + 11, "{err}");
    assert!(
        matches!(err.kind, PredicateErrorKind::JsonPath { ref path, .. } if path == "$.a[?@.b ==]")
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("$[?{}@{}]", "(".repeat(10_000), ")".repeat(10_000));
    assert!(matches!(refused(&deep).1, PredicateErrorKind::TooDeep(_)));
    let nested = format!("${}", "[?@".repeat(5_000));
    assert!(matches!(refused(&nested).1, PredicateErrorKind::TooDeep(_)));
}

#[test]
fn the_walk_stops_at_the_first_match() {
    let doc = json!([1, 2, 3, 4]);
    let query = JsonPathQuery::parse("$[?@ > 0]", 0).unwrap();
    let mut seen = 0;
    assert!(query.any(&doc, |v| {
        seen += 1;
        v == &json!(2)
    }));
    assert_eq!(seen, 2);
}

/// RFC 9535 read literally: each segment maps the whole nodelist to the next one.
fn reference<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    steps.iter().fold(vec![root], |nodes, step| {
        nodes
            .into_iter()
            .flat_map(|node| reference_step(step, node, root))
            .collect()
    })
}

fn reference_step<'a>(step: &Step, node: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let children: Vec<&Value> = match node {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) => o.values().collect(),
        _ => Vec::new(),
    };
    match step {
        Step::Name(name) => node
            .get(&**name)
            .filter(|_| node.is_object())
            .into_iter()
            .collect(),
        Step::Index(i) => {
            let Value::Array(a) = node else {
                return Vec::new();
            };
            let i = if *i < 0 { *i + a.len() as i64 } else { *i };
            usize::try_from(i)
                .ok()
                .and_then(|i| a.get(i))
                .into_iter()
                .collect()
        }
        Step::Wildcard => children,
        Step::Slice { start, end, step } => {
            let Value::Array(a) = node else {
                return Vec::new();
            };
            let (len, step) = (a.len() as i64, step.unwrap_or(1));
            let norm = |i: i64| if i >= 0 { i } else { len + i };
            let mut out = Vec::new();
            if step > 0 {
                let lower = norm(start.unwrap_or(0)).clamp(0, len);
                let upper = norm(end.unwrap_or(len)).clamp(0, len);
                let mut i = lower;
                while i < upper {
                    out.push(&a[i as usize]);
                    i += step;
                }
            } else if step < 0 {
                let upper = norm(start.unwrap_or(len - 1)).clamp(-1, len - 1);
                let lower = norm(end.unwrap_or(-len - 1)).clamp(-1, len - 1);
                let mut i = upper;
                while lower < i {
                    out.push(&a[i as usize]);
                    i += step;
                }
            }
            out
        }
        Step::Filter(expr) => children
            .into_iter()
            .filter(|c| filter::holds(expr, *c, root))
            .collect(),
        Step::Union(steps) => steps
            .iter()
            .flat_map(|s| reference_step(s, node, root))
            .collect(),
        Step::Descendant(inner) => {
            let mut out = reference_step(inner, node, root);
            for child in children {
                out.extend(reference_step(step, child, root));
            }
            out
        }
    }
}

fn doc() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        proptest::bool::ANY.prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        "[ab]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            proptest::collection::btree_map("[ab]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn selector() -> impl Strategy<Value = String> {
    let int = || prop_oneof![Just(String::new()), (-6i64..6).prop_map(|i| i.to_string())];
    prop_oneof![
        Just("'a'".to_owned()),
        Just("'b'".to_owned()),
        Just("*".to_owned()),
        (-6i64..6).prop_map(|i| i.to_string()),
        (int(), int(), int()).prop_map(|(a, b, c)| format!("{a}:{b}:{c}")),
        Just("?@.a".to_owned()),
        Just("?@ > 1".to_owned()),
        Just("?@[?@ == 'a']".to_owned()),
        Just("?count(@.*) > 1".to_owned()),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(".a".to_owned()),
        Just(".*".to_owned()),
        Just("..b".to_owned()),
        Just("..*".to_owned()),
        proptest::collection::vec(selector(), 1..3).prop_map(|s| format!("[{}]", s.join(","))),
        proptest::collection::vec(selector(), 1..3).prop_map(|s| format!("..[{}]", s.join(","))),
    ]
}

proptest! {
    #[test]
    fn the_streaming_walk_selects_what_the_rfc_nodelists_select(
        doc in doc(),
        segments in proptest::collection::vec(segment(), 0..4),
    ) {
        let path = format!("${}", segments.concat());
        let query = JsonPathQuery::parse(&path, 0).unwrap();
        let mut walked: Vec<*const Value> = Vec::new();
        walk::any(&doc, &doc, &query.steps, &mut |v| {
            walked.push(v);
            false
        });
        let expected: Vec<*const Value> =
            reference(&query.steps, &doc).into_iter().map(|v| v as *const Value).collect();
        prop_assert_eq!(walked, expected, "{}", path);
    }
}
