use super::depth::check as check_nesting;
use super::*;

#[test]
fn nesting_counts_brackets_outside_strings_and_comments() {
    assert!(check_nesting(r#""((((((((" | [1]"#, 2).is_ok());
    assert!(check_nesting("# (((((((\n[1]", 2).is_ok());
    assert!(check_nesting(r#""a\("b\(1)")" "#, 2).is_ok());
    let err = check_nesting("[[[1]]]", 2).unwrap_err();
    assert_eq!((err.offset(), err.kind()), (2, &JqErrorKind::TooDeep(2)));
}

#[test]
fn expressions_nested_past_the_bound_are_refused_not_overflowed() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let err = Jq::compile(&deep).unwrap_err();
    assert_eq!(err.offset(), MAX_DEPTH);
    assert_eq!(err.kind(), &JqErrorKind::TooDeep(MAX_DEPTH));
}

#[test]
fn long_operator_chains_are_refused_but_wide_objects_are_not() {
    let chain = format!("1{}", " + 1".repeat(10_000));
    assert_eq!(
        Jq::compile(&chain).unwrap_err().kind(),
        &JqErrorKind::TooDeep(MAX_DEPTH)
    );
    let fields: Vec<String> = (0..200).map(|i| format!("f{i}: .a")).collect();
    let wide = Jq::compile(&format!("{{{}}}", fields.join(", "))).unwrap();
    assert!(wide.one(&Message::new(r#"{"a": 1}"#)).is_ok());
    let args = format!("[{}]", "limit(1; 1); ".repeat(300) + "1");
    assert!(
        Jq::compile(&args).is_err(),
        "parsed, not too deep: `;` resets the count"
    );
    assert!(!matches!(
        Jq::compile(&args).unwrap_err().kind(),
        JqErrorKind::TooDeep(_)
    ));
}

#[test]
fn headers_and_id_are_bound_to_their_own_names() {
    let msg = Message::builder("{}").header("desk", "fx").build();
    let jq = Jq::compile("[$headers.desk, $id]").unwrap();
    let out = jq.one(&msg).unwrap();
    assert_eq!(out, serde_json::json!(["fx", msg.id().to_string()]));
}

#[test]
fn a_compiled_expression_is_shared_between_threads() {
    fn shared<T: Clone + Send + Sync + 'static>() {}
    shared::<Jq>();
}
