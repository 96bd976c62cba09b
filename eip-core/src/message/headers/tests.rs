use super::*;
use proptest::prelude::*;

proptest! {
    /// The names' summary never hides a header: after any inserts and removes, every
    /// look-up answers what a plain map answers.
    #[test]
    fn look_ups_agree_with_a_plain_map(
        changes in proptest::collection::vec(("[a-e]{0,3}", any::<bool>()), 0..40),
        asked in proptest::collection::vec("[a-e]{0,3}", 0..20),
    ) {
        let mut headers = Headers::new();
        let mut model = BTreeMap::new();
        for (i, (name, insert)) in changes.iter().enumerate() {
            if *insert {
                headers.insert(name.clone(), i as i64);
                model.insert(name.clone(), i as i64);
            } else {
                prop_assert_eq!(
                    headers.remove(name).and_then(|v| v.as_int()),
                    model.remove(name)
                );
            }
        }
        for name in changes.iter().map(|(n, _)| n).chain(&asked) {
            prop_assert_eq!(
                headers.get(name).and_then(|v| v.as_int()),
                model.get(name).copied()
            );
        }
        prop_assert_eq!(headers.len(), model.len());
    }
}

#[test]
fn empty_headers_allocate_no_map() {
    let h = Headers::new();
    assert!(h.map.is_none());
    assert_eq!(h.len(), 0);
    assert_eq!(h.get("x"), None);
}

#[test]
fn write_to_shared_headers_copies_only_the_writer() {
    let mut a = Headers::new();
    a.insert("k", "v");
    let mut b = a.clone();
    assert!(a.shares_storage_with(&b));
    b.insert("k", 2_i64);
    assert!(!a.shares_storage_with(&b));
    assert_eq!(a.get("k"), Some(&HeaderValue::Str("v".into())));
    assert_eq!(b.get("k"), Some(&HeaderValue::Int(2)));
}

#[test]
fn removing_an_absent_header_does_not_copy() {
    let mut a: Headers = [("k", "v")].into_iter().collect();
    let mut b = a.clone();
    assert_eq!(b.remove("missing"), None);
    assert!(a.shares_storage_with(&b));
    assert_eq!(a.remove("k"), Some(HeaderValue::Str("v".into())));
    assert!(b.contains("k"));
}

#[test]
fn overlaid_headers_share_the_map_and_hide_its_values() {
    let base: Headers = [("a", "1"), ("m", "2"), ("z", "3")].into_iter().collect();
    let over = base.overlaid([
        ("z".into(), HeaderValue::Int(9)),
        ("b".into(), HeaderValue::Int(4)),
    ]);
    assert_eq!(
        over.map.as_ref().map(SharedMap::as_ptr),
        base.map.as_ref().map(SharedMap::as_ptr)
    );
    assert_eq!(over.get("z"), Some(&HeaderValue::Int(9)));
    assert_eq!(over.get("m"), Some(&HeaderValue::Str("2".into())));
    assert_eq!(over.len(), 4);
    let names: Vec<&str> = over.iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["a", "b", "m", "z"]);
    let flat: Headers = [
        ("a", HeaderValue::from("1")),
        ("b", HeaderValue::Int(4)),
        ("m", HeaderValue::from("2")),
        ("z", HeaderValue::Int(9)),
    ]
    .into_iter()
    .collect();
    assert_eq!(over, flat);
    assert_eq!(
        base.get("z"),
        Some(&HeaderValue::Str("3".into())),
        "the base unchanged"
    );
}

#[test]
fn a_change_to_overlaid_headers_folds_them_into_a_map_of_their_own() {
    let base: Headers = [("a", "1"), ("z", "3")].into_iter().collect();
    let mut over = base.overlaid([("z".into(), HeaderValue::Int(9))]);
    assert_eq!(over.remove("z"), Some(HeaderValue::Int(9)));
    assert_eq!(over.get("z"), None, "the base's value is gone too");
    over.insert("b", 2_i64);
    assert_eq!(over.len(), 2);
    assert_eq!(base.len(), 2);
    assert_eq!(base.get("z"), Some(&HeaderValue::Str("3".into())));
    let twice = base.overlaid([
        ("k".into(), HeaderValue::Int(1)),
        ("k".into(), HeaderValue::Int(2)),
    ]);
    assert_eq!(
        twice.get("k"),
        Some(&HeaderValue::Int(2)),
        "the later value"
    );
    assert_eq!(twice.len(), 3);
}

#[test]
fn typed_access_reports_wrong_type() {
    let h: Headers = [(names::PRIORITY, "high")].into_iter().collect();
    assert_eq!(
        h.int(names::PRIORITY),
        Err(HeaderError::WrongType {
            name: names::PRIORITY,
            expected: "integer",
            found: "string"
        })
    );
}

#[test]
fn headers_kept_forever_are_shared_by_copies_and_copied_on_change() {
    let forever = Headers::from_iter([("hop-budget", 3)]).forever();
    let copy = forever.clone();
    assert!(copy.shares_storage_with(&forever));
    assert!(matches!(copy.map, Some(SharedMap::Forever(_))));
    assert_eq!(copy.get("hop-budget"), Some(&HeaderValue::Int(3)));

    let mut changed = copy.clone();
    changed.insert("subject", "x");
    assert!(!changed.shares_storage_with(&forever));
    assert_eq!(changed.len(), 2);
    assert_eq!(forever.len(), 1, "the map kept forever is never changed");
    let mut removed = copy;
    assert_eq!(removed.remove("hop-budget"), Some(HeaderValue::Int(3)));
    assert!(removed.is_empty() && forever.len() == 1);
    assert_eq!(Headers::new().forever().len(), 0);
}

#[test]
fn headers_stay_three_words() {
    assert_eq!(std::mem::size_of::<Headers>(), 24);
}
