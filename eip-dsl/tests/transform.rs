//! The `transform` step (the Message Translator, jq) and a `split` by jq.

use eip_core::Message;
use eip_dsl::compile::{Flow, InputMessage};

mod support {
    pub mod one_route;
}

use support::one_route::{flow, problems, run_all};

/// Hands `msg` to the route; what reached `out` and `dead-letters`.
fn run(flow: &Flow, msg: Message) -> (Vec<Message>, Vec<Message>) {
    run_all(flow, vec![msg])
}

fn json(msg: &Message) -> serde_json::Value {
    serde_json::from_slice(msg.payload()).unwrap()
}

#[test]
fn a_transform_makes_a_new_payload_and_sets_and_removes_headers() {
    let f = flow(
        "      - transform:
          payload: '{id: .id, total: (.lines | map(.price * .qty) | add)}'
          set-headers: {region: '.region', big: '(.lines | length) > 1'}
          remove-headers: [x-debug]",
    );
    let original = Message::builder(
        r#"{"id": 7, "region": "eu", "lines": [{"price": 5, "qty": 3}, {"price": 1, "qty": 2}]}"#,
    )
    .header("x-debug", "on")
    .header("kept", 1)
    .build();
    let (out, dead) = run(&f, original.clone());
    assert!(dead.is_empty());
    assert_eq!(json(&out[0]), serde_json::json!({"id": 7, "total": 17}));
    assert_eq!(out[0].id(), original.id(), "the same message, changed");
    let headers = out[0].headers();
    assert_eq!(headers.get("region").and_then(|v| v.as_str()), Some("eu"));
    assert_eq!(
        headers.get("big").map(|v| v.to_string()).as_deref(),
        Some("true")
    );
    assert!(headers.get("x-debug").is_none());
    assert_eq!(headers.get("kept").and_then(|v| v.as_int()), Some(1));
}

#[test]
fn a_jq_error_makes_the_message_invalid_with_the_reason() {
    let f = flow("      - transform: '.lines | map(.price) | add'");
    let (out, dead) = run(&f, Message::new(r#"{"lines": 3}"#));
    assert!(out.is_empty());
    let death = dead[0].death().unwrap().unwrap();
    assert_eq!(death.reason.as_str(), "invalid");
    assert!(death.error.unwrap().contains("jq"), "says it was jq");
    assert_eq!(
        json(&dead[0]),
        serde_json::json!({"lines": 3}),
        "as received"
    );

    let (_, dead) = run(&f, Message::new("not json"));
    let error = dead[0].death().unwrap().unwrap().error.unwrap();
    assert!(error.contains("not JSON"), "{error}");
    assert_eq!(f.routes()[0].stats().invalid, 2);
}

#[test]
fn a_jq_program_that_does_not_compile_is_refused_inside_it() {
    let text = problems("      - transform: '{id: .id'");
    assert!(text.contains("invalid jq"), "{text}");
    assert!(
        text.contains("key: routes[0].steps[0].transform.payload"),
        "{text}"
    );
    let text = problems("      - transform: 'nosuchfn(.a)'");
    assert!(text.contains("nosuchfn"), "{text}");
    assert!(
        text.contains("flow.yaml:8:21"),
        "points at the call: {text}"
    );
    let text = problems("      - transform: {set-headers: {a: 3}}");
    assert!(
        text.contains("header `a` must be set by a jq program"),
        "{text}"
    );
    let text = problems("      - transform: {remove-headers: []}");
    assert!(text.contains("the transform changes nothing"), "{text}");
}

#[test]
fn a_split_by_jq_makes_a_part_per_output() {
    let f = flow("      - split: {jq: '.items[]'}");
    let original = Message::new(r#"{"items": [{"sku": "a"}, {"sku": "b"}, 3]}"#);
    let (out, dead) = run(&f, original.clone());
    assert!(dead.is_empty());
    let payloads: Vec<serde_json::Value> = out.iter().map(json).collect();
    assert_eq!(
        payloads,
        [
            serde_json::json!({"sku": "a"}),
            serde_json::json!({"sku": "b"}),
            serde_json::json!(3)
        ]
    );
    assert_eq!(out[2].sequence_number().unwrap(), Some(3));
    assert_eq!(out[0].sequence_size().unwrap(), Some(3));
    let correlation = original.id().to_string();
    assert_eq!(out[1].correlation_id().unwrap(), Some(correlation.as_str()));

    let (out, dead) = run(&f, Message::new(r#"{"items": 5}"#));
    assert!(out.is_empty());
    assert_eq!(
        dead.len(),
        1,
        "a program that fails: the message is invalid"
    );
}

#[test]
fn the_dry_run_shows_what_the_transform_made() {
    let f = flow("      - transform: '{total: .n * 2}'");
    let report = f
        .dry_run_steps(&InputMessage::parse(r#"{"to": "orders", "payload": {"n": 21}}"#).unwrap())
        .unwrap();
    assert_eq!(report.steps[0].does, "transform {total: .n * 2}");
    assert_eq!(
        report.steps[0].out[0].payload,
        serde_json::json!({"total": 42})
    );
    assert_eq!(report.stored, ["orders", "out"]);
}
