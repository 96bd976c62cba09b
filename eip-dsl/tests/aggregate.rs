//! The `aggregate` step (the Aggregator) in a flow file: correlation, each completion rule,
//! what a timeout does with an incomplete group, combining by jq, split then aggregate giving
//! back the original, the dry run's note, and the problems `eip validate` reports.

use std::path::Path;
use std::time::Duration;

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::{Flow, InputMessage};
use eip_dsl::load;
use proptest::prelude::*;

mod support {
    pub mod durable_run;
    pub mod one_route;
    pub mod scratch;
}

use support::durable_run::run_durable;
use support::one_route::{drain, flow, problems, run_all};
use support::scratch::Scratch;

fn reading(sensor: &str, value: u64) -> Message {
    Message::new(format!(r#"{{"sensor": "{sensor}", "value": {value}}}"#))
}

fn json(msg: &Message) -> serde_json::Value {
    serde_json::from_slice(msg.payload()).expect("a JSON payload")
}

/// A current-thread runtime with its clock paused: timeouts pass when the test says.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime")
}

#[test]
fn a_group_completes_at_its_size_and_goes_on_as_one_message() {
    let f = flow("      - aggregate: {key: '.sensor', size: 3}");
    let (out, dead) = run_all(
        &f,
        vec![
            reading("s1", 1),
            reading("s2", 10),
            reading("s1", 2),
            reading("s1", 3),
        ],
    );
    assert!(dead.is_empty());
    assert_eq!(out.len(), 1, "s2's group is not complete");
    assert_eq!(
        json(&out[0]),
        serde_json::json!([
            {"sensor": "s1", "value": 1},
            {"sensor": "s1", "value": 2},
            {"sensor": "s1", "value": 3}
        ])
    );
    assert_eq!(out[0].correlation_id().expect("readable"), Some("s1"));
    let stats = f.routes()[0].stats();
    assert_eq!((stats.taken, stats.passed), (4, 1));
}

#[test]
fn by_default_messages_are_correlated_by_their_correlation_id() {
    let f = flow("      - aggregate: 2");
    let tagged = |id: &str, n: u64| Message::builder(format!("{n}")).correlation_id(id).build();
    let (out, _) = run_all(&f, vec![tagged("a", 1), tagged("b", 2), tagged("a", 3)]);
    assert_eq!(out.len(), 1);
    assert_eq!(json(&out[0]), serde_json::json!([1, 3]));
}

#[test]
fn a_split_then_an_aggregate_of_all_parts_gives_back_the_records() {
    let f = flow("      - split: json-lines\n      - aggregate: {all-parts: true}");
    let (out, dead) = run_all(&f, vec![Message::new("{\"n\": 1}\n{\"n\": 2}\n{\"n\": 3}")]);
    assert!(dead.is_empty());
    assert_eq!(out.len(), 1);
    assert_eq!(
        json(&out[0]),
        serde_json::json!([{"n": 1}, {"n": 2}, {"n": 3}])
    );
}

#[test]
fn a_timeout_releases_what_the_group_has_without_another_message() {
    let f = flow("      - aggregate: {key: '.sensor', size: 10, timeout: 5s}");
    paused().block_on(async {
        let route = &f.routes()[0];
        route.handle(reading("s1", 1)).await.expect("held");
        route.handle(reading("s1", 2)).await.expect("held");
        tokio::time::sleep(Duration::from_millis(4_900)).await;
        assert!(drain(&f, "out").await.is_empty(), "not yet");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let out = drain(&f, "out").await;
        assert_eq!(out.len(), 1);
        assert_eq!(json(&out[0]).as_array().map(Vec::len), Some(2));
    });
}

#[test]
fn a_timed_out_group_can_go_to_the_dead_letters_as_incomplete() {
    let f =
        flow("      - aggregate: {key: '.sensor', size: 10, timeout: 1s, on-timeout: dead-letter}");
    paused().block_on(async {
        let route = &f.routes()[0];
        route.handle(reading("s1", 1)).await.expect("held");
        route.handle(reading("s1", 2)).await.expect("held");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(drain(&f, "out").await.is_empty());
        let dead = drain(&f, "dead-letters").await;
        assert_eq!(dead.len(), 2, "each message of the group");
        for msg in &dead {
            let death = msg.death().expect("readable").expect("a death record");
            assert_eq!(death.reason, DeathReason::Incomplete);
            let error = death.error.unwrap_or_default();
            assert!(error.contains("group `s1`"), "{error}");
        }
    });
}

#[test]
fn complete_when_tests_the_group_and_combine_makes_the_payload() {
    let f = flow(
        "      - aggregate:
          key: '.sensor'
          complete-when: 'any(.[]; .value >= 100)'
          combine: '{sensor: .[0].sensor, total: (map(.value) | add)}'",
    );
    let (out, _) = run_all(
        &f,
        vec![reading("s1", 1), reading("s1", 2), reading("s1", 100)],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        json(&out[0]),
        serde_json::json!({"sensor": "s1", "total": 103})
    );
}

#[test]
fn a_message_without_a_key_is_invalid_and_a_repeated_part_is_a_duplicate() {
    let f = flow("      - aggregate: {key: '.sensor', size: 2}");
    let (out, dead) = run_all(&f, vec![Message::new(r#"{"value": 1}"#)]);
    assert!(out.is_empty());
    let death = dead[0].death().expect("readable").expect("a death record");
    assert_eq!(death.reason, DeathReason::Invalid);

    let f = flow("      - aggregate: {all-parts: true}");
    let part = |n: u64| {
        Message::builder(format!("{n}"))
            .correlation_id("file-1")
            .header("sequence-number", n as i64)
            .header("sequence-size", 2)
            .build()
    };
    let (out, _) = run_all(&f, vec![part(1), part(1), part(2)]);
    assert_eq!(out.len(), 1);
    assert_eq!(json(&out[0]), serde_json::json!([1, 2]));
    assert_eq!(f.routes()[0].stats().duplicates, 1);
}

#[test]
fn the_dry_run_says_which_group_holds_the_message() {
    let f: Flow = flow("      - aggregate: {key: '.sensor', size: 3}");
    let input = InputMessage::parse(r#"{"to": "orders", "payload": {"sensor": "s1", "value": 1}}"#)
        .expect("an input line");
    let report = f.dry_run_steps(&input).expect("a report");
    assert_eq!(report.steps[0].does, "aggregate by .sensor: 3 messages");
    assert!(report.steps[0].out.is_empty(), "held");
    assert_eq!(report.steps[0].notes, ["held in group s1, 1 of 3"]);
    assert_eq!(report.stored, ["orders"]);
}

#[test]
fn problems_are_reported_with_help() {
    let text = problems("      - aggregate: {key: '.sensor'}");
    assert!(text.contains("no rule completes a group"), "{text}");

    let text = problems("      - aggregate: {size: 0}");
    assert!(text.contains("size"), "{text}");

    let text = problems("      - aggregate: {size: 2, on-timeout: drop}");
    assert!(text.contains("`on-timeout` can not be `drop`"), "{text}");

    let text = problems("      - aggregate: {size: 2, combine: 'map(.value'}");
    assert!(text.contains("invalid jq"), "{text}");

    let text = problems("      - aggregate: {sise: 2}");
    assert!(text.contains("did you mean `size`?"), "{text}");

    let broker = "
channels:
  orders: {kind: point-to-point, store: {rabbitmq: {url: 'amqp://127.0.0.1:5672'}}}
  out: {kind: point-to-point}
routes:
  - from: orders
    steps:
      - aggregate: 10
    to: out
";
    let text = match load::load_str(broker, "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("an aggregate on a broker's channel validated"),
        Err(errors) => errors.render(),
    };
    assert!(text.contains("kept in a broker"), "{text}");
}

const DURABLE: &str = "
channels:
  orders: {kind: point-to-point, durable: true}
  out: {kind: point-to-point, durable: true}
routes:
  - name: batch
    from: orders
    steps:
      - aggregate: {key: '.sensor', size: 3, timeout: 1s}
    to: out
";

#[test]
fn on_a_durable_route_a_group_survives_a_restart_and_its_timeout_still_counts() {
    let scratch = Scratch::new("aggregate-durable");
    let data = scratch.0.join("data");
    let out = run_durable(
        DURABLE,
        &data,
        "orders",
        vec![reading("s1", 1), reading("s1", 2)],
        Duration::ZERO,
    );
    assert!(out.is_empty(), "held");
    // A new process: the group is read back, and the third message completes it.
    let out = run_durable(
        DURABLE,
        &data,
        "orders",
        vec![reading("s1", 3), reading("s2", 1)],
        Duration::ZERO,
    );
    assert_eq!(out.len(), 1);
    let values: Vec<u64> = json(&out[0])
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|v| v["value"].as_u64())
        .collect();
    assert_eq!(values, [1, 2, 3]);
    // s2's group was held across this restart too; its timeout releases it without a message.
    let out = run_durable(
        DURABLE,
        &data,
        "orders",
        Vec::new(),
        Duration::from_millis(1500),
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        json(&out[0]),
        serde_json::json!([{"sensor": "s2", "value": 1}])
    );
    // Nothing is held any more.
    let out = run_durable(
        DURABLE,
        &data,
        "orders",
        Vec::new(),
        Duration::from_millis(1500),
    );
    assert!(out.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever records a file of JSON lines holds, splitting it and aggregating every part
    /// gives them back, in order.
    #[test]
    fn split_then_aggregate_is_the_identity(records in prop::collection::vec(any::<(u32, bool)>(), 1..40)) {
        let values: Vec<serde_json::Value> = records
            .iter()
            .map(|(n, flag)| serde_json::json!({"n": n, "flag": flag}))
            .collect();
        let lines: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let f = flow("      - split: json-lines\n      - aggregate: {all-parts: true}");
        let (out, dead) = run_all(&f, vec![Message::new(lines.join("\n"))]);
        prop_assert!(dead.is_empty());
        prop_assert_eq!(out.len(), 1);
        prop_assert_eq!(json(&out[0]), serde_json::Value::Array(values));
    }
}
