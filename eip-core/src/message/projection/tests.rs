use serde_json::json;

use super::*;
use crate::message::JsonNode;
use crate::message::demand::path;

/// [`project`]'s answer as a `Value`.
fn projected(payload: &[u8], demand: &Demand) -> Result<Value, serde_json::Error> {
    project(payload, demand).map(|projection| match projection {
        Projection::Tree(tree) => tree.root().to_value(),
        Projection::Value(value) => value,
    })
}

/// The fast reader's answer as a `Value`.
fn fast(payload: &[u8], demand: &Demand) -> Option<Value> {
    scan::project(payload, demand).map(|tree| tree.root().to_value())
}

#[test]
fn only_the_demanded_parts_are_built() {
    let payload = br#"{"a": {"b": [1, {"c": 2}], "x": "skipped"}, "d": 3, "e": {"f": 4}}"#;
    let demand = path(&["a", "b"]).union(&Demand::field("e", Demand::nothing()));
    let value = projected(payload, &demand).unwrap();
    assert_eq!(value, json!({"a": {"b": [1, {"c": 2}]}, "e": {}}));
}

#[test]
fn items_keep_their_place_and_scalars_on_the_way_read_as_null() {
    let payload = br#"{"a": [10, 11, 12, 13], "b": "text", "c": [1]}"#;
    let demand = Demand::field("a", Demand::item(2, Demand::whole()))
        .union(&path(&["b", "x"]))
        .union(&path(&["c", "x"]));
    let value = projected(payload, &demand).unwrap();
    assert_eq!(value, json!({"a": [null, null, 12], "b": null, "c": []}));
    let each = Demand::field("a", Demand::each(Demand::whole()));
    assert_eq!(
        projected(payload, &each).unwrap(),
        json!({"a": [10, 11, 12, 13]})
    );
}

#[test]
fn a_key_given_twice_keeps_its_last_value() {
    let payload = br#"{"a": {"b": 1}, "z": 0, "a": {"b": 2, "c": 3}}"#;
    let value = projected(payload, &path(&["a", "b"])).unwrap();
    assert_eq!(value, json!({"a": {"b": 2}}));
    let full: Value = serde_json::from_slice(payload).unwrap();
    assert_eq!(full["a"]["b"], value["a"]["b"]);
}

/// Each payload is refused by a full parse; the projection refuses it with the same error
/// even when the bad part is one it skips.
#[test]
fn what_a_full_parse_refuses_the_projection_refuses_alike() {
    let deep = |n: usize| format!(r#"{{"a": 1, "z": {}{}}}"#, "[".repeat(n), "]".repeat(n));
    let bad = [
        r#"{"a": 1, "z": 2} x"#.to_owned(),
        r#"{"a": 1, "z": "\q"}"#.to_owned(),
        r#"{"a": 1, "z": "\ud800"}"#.to_owned(),
        r#"{"a": 1, "z": 1e400}"#.to_owned(),
        r#"{"a": 1, "z": 01}"#.to_owned(),
        r#"{"a": 1, "z": [1,]}"#.to_owned(),
        r#"{"a": 1, "z": {1: 2}}"#.to_owned(),
        r#"{"a": 1, "z": "#.to_owned(),
        "not json at all".to_owned(),
        String::new(),
    ];
    let demand = path(&["a"]);
    for payload in &bad {
        let full = serde_json::from_slice::<Value>(payload.as_bytes()).unwrap_err();
        let projected = projected(payload.as_bytes(), &demand).unwrap_err();
        assert_eq!(full.to_string(), projected.to_string(), "{payload}");
    }
    let mut not_utf8 = br#"{"a": 1, "z": "xx"}"#.to_vec();
    not_utf8[15] = 0xff;
    assert_eq!(
        serde_json::from_slice::<Value>(&not_utf8)
            .unwrap_err()
            .to_string(),
        projected(&not_utf8, &demand).unwrap_err().to_string()
    );
    // Nesting: the same limit for both, also in a part that is skipped.
    let mut refused = 0;
    for n in 120..=130 {
        let payload = deep(n);
        match (
            serde_json::from_slice::<Value>(payload.as_bytes()),
            projected(payload.as_bytes(), &demand),
        ) {
            (Ok(_), Ok(value)) => assert_eq!(value, json!({"a": 1})),
            (Err(full), Err(projected)) => {
                assert_eq!(full.to_string(), projected.to_string());
                refused += 1;
            }
            (full, projected) => panic!("depth {n}: {full:?} against {projected:?}"),
        }
    }
    assert!((1..11).contains(&refused), "the limit lies in 120..=130");
}

#[test]
fn numbers_read_as_a_full_parse_reads_them() {
    let payload = br#"{"a": [0.1, 1e-7, 18446744073709551615, -9223372036854775808, 2.5e300]}"#;
    let full: Value = serde_json::from_slice(payload).unwrap();
    let value = projected(payload, &path(&["a"])).unwrap();
    assert_eq!(value, full);
}

/// An order of the kind the router bench reads, with escapes, non-ASCII text and every
/// kind of number: the fast reader answers it, and answers what the checked reader does.
#[test]
fn the_fast_reader_answers_ordinary_payloads_as_the_checked_one_does() {
    let payload =
        r#" {"id": "ord-1", "kind": "sale", "note": "caf\u00e9 \"quoted\" \\ \/ \b\f\n\r\t",
        "text": "\u20ac, naïve, 😀", "customer": {"tier": "gold", "tags": [],
        "seen": {}}, "items": [{"sku": "A-1", "qty": 2, "price": 9.95}, {"sku": "A-2",
        "qty": -0, "price": 1.5e-7}, {"sku": "B", "qty": 18446744073709551615, "price": 2E+10}],
        "total": -9223372036854775808, "big": 123456789012345678901234567890, "ok": true,
        "no": false, "none": null, "k\u00e9y": 1} "#
            .as_bytes();
    let demands = [
        Demand::whole(),
        Demand::nothing(),
        path(&["kind"]),
        path(&["note"]),
        path(&["customer", "tier"]).union(&path(&["total"])),
        Demand::field("items", Demand::each(path(&["qty"]))),
        Demand::field("items", Demand::item(1, Demand::whole())),
        Demand::each(Demand::whole()),
        path(&["kéy"]).union(&path(&["big"])),
        path(&["ok", "deeper"]),
    ];
    for demand in &demands {
        let fast = fast(payload, demand);
        assert!(fast.is_some(), "the fast reader gave up on {demand:?}");
        assert_eq!(fast, project_checked(payload, demand).ok());
    }
}

/// What serde_json must judge goes to the checked reader, and the result is its answer.
#[test]
fn the_fast_reader_leaves_the_edges_to_serde_json() {
    let edges = [
        r#"{"a": 1, "z": "\ud83d\ude00"}"#.to_owned(),
        r#"{"a": "\ud83d\ude00"}"#.to_owned(),
        r#"{"a": 1, "z": 1e308}"#.to_owned(),
        r#"{"a": 1, "z": 1e-400}"#.to_owned(),
        format!(r#"{{"a": 1, "z": {}}}"#, "9".repeat(320)),
        format!(
            r#"{{"a": 1, "z": {}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        ),
    ];
    let demand = path(&["a"]);
    for payload in &edges {
        assert_eq!(fast(payload.as_bytes(), &demand), None, "{payload}");
        assert_eq!(
            projected(payload.as_bytes(), &demand).map_err(|e| e.to_string()),
            project_checked(payload.as_bytes(), &demand).map_err(|e| e.to_string())
        );
    }
}

mod generated {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::{Demand, project_checked};
    use super::fast;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-c\u{e9}\u{1f600}\"\\\\\n]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..5)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    fn demand() -> impl Strategy<Value = Demand> {
        let leaf = prop_oneof![Just(Demand::whole()), Just(Demand::nothing())];
        leaf.prop_recursive(3, 12, 2, |below| {
            prop_oneof![
                ("[a-c]{1,2}", below.clone()).prop_map(|(name, d)| Demand::field(&name, d)),
                (0usize..3, below.clone()).prop_map(|(i, d)| Demand::item(i, d)),
                below.clone().prop_map(Demand::each),
                (below.clone(), below).prop_map(|(a, b)| a.union(&b)),
            ]
        })
    }

    /// One edit of the text: a byte replaced by, or an insertion of, one that matters to JSON,
    /// or a byte deleted.
    fn edit() -> impl Strategy<Value = (usize, u8, u8)> {
        let bytes = prop::sample::select(b"\"\\{}[],:01e.-+ tnfu\x00\x1f\x80\xc3\xff".to_vec());
        (any::<usize>(), 0u8..3, bytes)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The fast reader answers every well-formed payload of ordinary numbers, and answers
        /// it as the checked reader does; on an edited payload it answers only when the checked
        /// reader gives that same value.
        #[test]
        fn the_fast_reader_answers_only_what_the_checked_reader_answers(
            value in value(),
            pretty in any::<bool>(),
            demand in demand(),
            edits in prop::collection::vec(edit(), 0..3),
        ) {
            let text = if pretty {
                serde_json::to_vec_pretty(&value)
            } else {
                serde_json::to_vec(&value)
            };
            let mut bytes = text.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let checked = project_checked(&bytes, &demand).map_err(|e| e.to_string());
            prop_assert!(checked.is_ok());
            prop_assert_eq!(fast(&bytes, &demand).map(Ok), Some(checked));
            for (at, kind, byte) in &edits {
                let at = at % (bytes.len() + 1);
                match kind {
                    0 if at < bytes.len() => bytes[at] = *byte,
                    1 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, *byte),
                }
            }
            if let Some(fast) = fast(&bytes, &demand) {
                let checked = project_checked(&bytes, &demand).map_err(|e| e.to_string());
                prop_assert_eq!(Ok(fast), checked);
            }
        }
    }
}
