//! The `split` step: a message's payload becomes its parts, by a format.

use eip_core::Message;
use eip_dsl::compile::{Flow, InputMessage};

mod support {
    pub mod one_route;
}

use support::one_route::{flow, problems, run_all};

/// Hands `payload` to the route; the original, and what reached `out` and `dead-letters`.
fn run(flow: &Flow, payload: &str) -> (Message, Vec<Message>, Vec<Message>) {
    let original = Message::new(payload.to_owned());
    let (parts, dead) = run_all(flow, vec![original.clone()]);
    (original, parts, dead)
}

#[test]
fn lines_become_parts_with_their_sequence() {
    let f = flow("      - split: lines");
    let (original, parts, dead) = run(&f, "a\nb\r\nc");
    let payloads: Vec<&str> = parts.iter().filter_map(|p| p.payload_str()).collect();
    assert_eq!(payloads, ["a", "b", "c"]);
    for (n, part) in parts.iter().enumerate() {
        assert_eq!(part.sequence_number().unwrap(), Some(n as u64 + 1));
        assert_eq!(part.sequence_size().unwrap(), Some(3));
        let correlation = original.id().to_string();
        assert_eq!(part.correlation_id().unwrap(), Some(correlation.as_str()));
        assert_ne!(part.id(), original.id());
    }
    assert!(dead.is_empty());
    assert_eq!(f.routes()[0].stats().passed, 1);
}

#[test]
fn a_malformed_record_is_a_dead_letter_with_its_line_and_the_others_go_on() {
    let f = flow("      - split: json-lines");
    let (_, parts, dead) = run(&f, "{\"n\": 1}\nnot json\n{\"n\": 3}\n");
    assert_eq!(parts.len(), 2);
    assert_eq!(
        parts[1].sequence_number().unwrap(),
        Some(2),
        "numbered among the good"
    );
    assert_eq!(dead.len(), 1);
    let death = dead[0].death().unwrap().unwrap();
    assert_eq!(death.reason.as_str(), "invalid");
    let error = death.error.unwrap();
    assert!(error.starts_with("line 2: not JSON"), "{error}");
    assert_eq!(
        dead[0].payload_str(),
        Some("not json"),
        "the record is kept"
    );
    assert_eq!(f.routes()[0].stats().invalid, 1);
}

#[test]
fn csv_rows_become_json_objects() {
    let f = flow("      - split: {format: csv, delimiter: ';'}");
    let (_, parts, dead) = run(&f, "id;sku\n7;widget\n8\n9;gear\n");
    let rows: Vec<serde_json::Value> = parts
        .iter()
        .map(|p| serde_json::from_slice(p.payload()).unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            serde_json::json!({"id": "7", "sku": "widget"}),
            serde_json::json!({"id": "9", "sku": "gear"}),
        ]
    );
    let error = dead[0].death().unwrap().unwrap().error.unwrap();
    assert!(error.starts_with("line 3: "), "{error}");
}

#[test]
fn the_dry_run_lists_the_parts() {
    let f = flow("      - split: lines");
    let report = f
        .dry_run_steps(&InputMessage::parse(r#"{"to": "orders", "payload": "x\ny"}"#).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["orders", "out", "out"]);
    assert_eq!(report.steps[0].does, "split lines");
    assert_eq!(report.steps[0].out.len(), 2);
    assert_eq!(report.steps[0].out[1].headers["sequence-number"], 2);
}

#[test]
fn a_split_says_how_it_splits_once() {
    let text = problems("      - split: {format: lines, jq: '.items[]'}");
    assert!(
        text.contains("`format` and `jq` contradict each other"),
        "{text}"
    );
    let text = problems("      - split: cvs");
    assert!(text.contains("`format` can not be `cvs`"), "{text}");
    assert!(text.contains("did you mean `csv`?"), "{text}");
    let text = problems("      - split: {format: lines, delimiter: ';'}");
    assert!(text.contains("`delimiter` is for `format: csv`"), "{text}");
    let text = problems("      - split: {format: csv, delimiter: ';;'}");
    assert!(
        text.contains("`delimiter` must be one ASCII character"),
        "{text}"
    );
}

#[test]
fn unmarshal_and_marshal_change_the_whole_payload_s_format() {
    let f = flow(
        "      - unmarshal: xml
      - transform: '[{id: .order.\"@id\", first: .order.line[0]}]'
      - marshal: csv",
    );
    let (original, parts, dead) = run(&f, r#"<order id="7"><line>A</line><line>B</line></order>"#);
    assert!(dead.is_empty(), "{dead:?}");
    assert_eq!(parts.len(), 1);
    assert_eq!(
        parts[0].payload_str(),
        Some("first,id\nA,7\n"),
        "columns by name"
    );
    assert_eq!(parts[0].content_type().unwrap(), Some("text/csv"));
    assert_eq!(
        parts[0].id(),
        original.id(),
        "the same message, in another format"
    );

    let (parts, dead) = {
        let (_, parts, dead) = run(&f, "<order><line>A</order>");
        (parts, dead)
    };
    assert!(parts.is_empty());
    let error = dead[0].death().unwrap().unwrap().error.unwrap();
    assert!(error.starts_with("unmarshal xml: "), "{error}");

    let text = problems("      - unmarshal: yaml");
    assert!(text.contains("`format` can not be `yaml`"), "{text}");
}
