//! Message History in a flow: with `history: true` every channel, route and route step a
//! message goes through adds itself to its `history` header, in order, in a running flow and
//! in the dry run alike; without it, nothing is recorded.

use std::path::Path;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_core::message::HistoryKind;
use eip_dsl::builder::{FlowBuilder, channel, route};
use eip_dsl::compile::{self, Flow, InputMessage, PathReport};
use eip_dsl::load;

const FLOW: &str = "
history: true
channels:
  orders: {kind: point-to-point}
  audit: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
routes:
  - name: triage
    from: orders
    steps:
      - wire-tap: audit
      - filter: {when: '$.total > 0', discard: small}
    choice:
      - when: '$.total > 100'
        to: big
    otherwise: small
";

fn flow(text: &str) -> Flow {
    match load::load_str(text, "flow.yaml", Path::new(".")) {
        Ok(plan) => compile::compile(&plan).unwrap(),
        Err(errors) => panic!("{}", errors.render()),
    }
}

fn queue(flow: &Flow, name: &str) -> eip_core::channel::PointToPoint {
    match flow.channels().iter().find(|c| c.name() == name) {
        Some(Channel::PointToPoint(c)) => c.clone(),
        _ => panic!("no queue {name}"),
    }
}

fn path(channel: &str, names: &[&str]) -> PathReport {
    PathReport {
        channel: channel.to_owned(),
        path: names.iter().map(|n| n.to_string()).collect(),
    }
}

#[test]
fn the_dry_run_shows_the_way_each_stored_copy_came() {
    let flow = flow(FLOW);
    let report = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": {"total": 500}}"#).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["audit", "big", "orders"]);
    assert_eq!(
        report.history,
        [
            path("audit", &["orders", "triage", "audit"]),
            path(
                "big",
                &[
                    "orders",
                    "triage",
                    "triage/1 wire-tap",
                    "triage/2 filter",
                    "big"
                ]
            ),
            path("orders", &["orders"]),
        ]
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["history"][1]["path"][2], "triage/1 wire-tap");
}

#[tokio::test]
async fn a_running_flow_records_channels_routes_and_steps_in_order() {
    let flow = flow(FLOW);
    let before = eip_core::message::now_millis();
    queue(&flow, "orders")
        .send(Message::new(r#"{"total": 7}"#))
        .await
        .unwrap();
    let taken = queue(&flow, "orders").receiver().recv().await.unwrap();
    flow.routes()[0]
        .handle(taken.message().clone())
        .await
        .unwrap();
    taken.ack();

    let small = queue(&flow, "small").receiver().recv().await.unwrap();
    let history = small.message().history().unwrap();
    let names: Vec<&str> = history.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "orders",
            "triage",
            "triage/1 wire-tap",
            "triage/2 filter",
            "small"
        ]
    );
    let kinds: Vec<HistoryKind> = history.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            HistoryKind::Channel,
            HistoryKind::Route,
            HistoryKind::Step,
            HistoryKind::Step,
            HistoryKind::Channel
        ]
    );
    assert!(history.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(history[0].at >= before);
    small.ack();

    let tapped = queue(&flow, "audit").receiver().recv().await.unwrap();
    let names: Vec<String> = tapped
        .message()
        .history()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        ["orders", "triage", "audit"],
        "the tap's copy went its own way"
    );
    tapped.ack();
}

#[tokio::test]
async fn without_history_nothing_is_recorded() {
    let flow = flow(&FLOW.replace("history: true", "history: false"));
    queue(&flow, "orders")
        .send(Message::new(r#"{"total": 500}"#))
        .await
        .unwrap();
    let taken = queue(&flow, "orders").receiver().recv().await.unwrap();
    flow.routes()[0]
        .handle(taken.message().clone())
        .await
        .unwrap();
    taken.ack();
    let big = queue(&flow, "big").receiver().recv().await.unwrap();
    assert!(big.message().headers().is_empty());
    big.ack();
    let report = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": {"total": 500}}"#).unwrap())
        .unwrap();
    assert!(report.history.is_empty());
    assert!(
        serde_json::to_value(&report)
            .unwrap()
            .get("history")
            .is_none()
    );
}

#[test]
fn history_must_be_true_or_false() {
    let text = match load::load_str(
        &FLOW.replace("history: true", "history: yes please"),
        "flow.yaml",
        Path::new("."),
    ) {
        Ok(_) => panic!("validated"),
        Err(errors) => errors.render(),
    };
    assert!(text.contains("history"), "{text}");
    assert!(text.contains("true"), "{text}");
}

#[test]
fn the_builder_switches_history_on_as_the_file_does() {
    let built = FlowBuilder::new()
        .message_history(true)
        .channel("in", channel::point_to_point())
        .channel("out", channel::point_to_point())
        .route(route::from("in").name("copy").to("out"))
        .compile(".")
        .unwrap();
    let report = built
        .dry_run(&InputMessage::parse(r#"{"to": "in", "payload": 1}"#).unwrap())
        .unwrap();
    assert_eq!(
        report.history,
        [path("in", &["in"]), path("out", &["in", "copy", "out"])]
    );
}
