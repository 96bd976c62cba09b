//! The Routing Slip (`routing-slip`) in a route: the steps a message's header names, in that
//! order, a step that waits, an unknown step, the dry run, and what `eip validate` refuses.
//! Times are measured on tokio's paused clock, which moves only when every task waits.

mod support {
    pub mod paused_flow;
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use std::time::Duration;

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::InputMessage;
use support::paused_flow::{dead_letters, drain, flow, paused};
use support::problems::{at, help, only};
use support::queues::with_queues;
use tokio::time::Instant;

const SLIP: &str = "
routes:
  - from: orders
    steps:
      - routing-slip:
          header: slip
          steps:
            price: {transform: '. + {total: (.qty * .price)}'}
            audit: {wire-tap: small}
            double: {transform: '.qty *= 2'}
            wait: {delay: 3s}
    to: big
";

fn slipped(slip: &str, payload: &str) -> Message {
    Message::builder(payload.to_owned())
        .header("slip", slip)
        .build()
}

#[test]
fn a_routing_slip_runs_the_steps_its_header_names_in_that_order() {
    let flow = flow(SLIP);
    paused().block_on(async {
        let route = &flow.routes()[0];
        let order = r#"{"qty": 2, "price": 5}"#;
        route
            .handle(slipped("double, price, audit", order))
            .await
            .unwrap();
        route.handle(slipped("audit,price", order)).await.unwrap();
        route.handle(slipped("double,double", order)).await.unwrap();
        route.handle(Message::new(order)).await.unwrap();
        route.handle(slipped(" ", order)).await.unwrap();
        let json = |s: &String| serde_json::from_str::<serde_json::Value>(s).unwrap();
        let big: Vec<serde_json::Value> = drain(&flow, "big").await.iter().map(json).collect();
        assert_eq!(
            big,
            [
                serde_json::json!({"qty": 4, "price": 5, "total": 20}),
                serde_json::json!({"qty": 2, "price": 5, "total": 10}),
                serde_json::json!({"qty": 8, "price": 5}),
                serde_json::json!({"qty": 2, "price": 5}),
                serde_json::json!({"qty": 2, "price": 5}),
            ]
        );
        // The tap took each message as it was at its place in the slip.
        let taps: Vec<serde_json::Value> = drain(&flow, "small").await.iter().map(json).collect();
        assert_eq!(
            taps,
            [
                serde_json::json!({"qty": 4, "price": 5, "total": 20}),
                serde_json::json!({"qty": 2, "price": 5}),
            ]
        );
    });
}

#[test]
fn a_routing_slip_waits_in_a_step_that_waits() {
    let flow = flow(SLIP);
    paused().block_on(async {
        let route = &flow.routes()[0];
        let started = Instant::now();
        route.handle(slipped("wait, wait", "{}")).await.unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(6));
        let started = Instant::now();
        route.handle(slipped("audit", "{}")).await.unwrap();
        assert_eq!(started.elapsed(), Duration::ZERO);
    });
}

#[test]
fn a_slip_naming_an_unknown_step_makes_the_message_invalid() {
    let flow = flow(SLIP);
    paused().block_on(async {
        let route = &flow.routes()[0];
        route
            .handle(slipped("price, ship", r#"{"qty": 1, "price": 1}"#))
            .await
            .unwrap();
        let number = Message::builder("{}").header("slip", 7i64).build();
        route.handle(number).await.unwrap();
        assert!(drain(&flow, "big").await.is_empty(), "nothing went on");
        let dead = dead_letters(&flow).await;
        assert_eq!(
            dead,
            [
                (
                    DeathReason::Invalid,
                    "routing slip `slip` names `ship`, which is not one of its steps (price, \
                     audit, double, wait)"
                        .to_owned()
                ),
                (
                    DeathReason::Invalid,
                    "routing slip header `slip` holds a value of type integer, not \
                     comma-separated names"
                        .to_owned()
                ),
            ]
        );
    });
}

#[test]
fn the_dry_run_follows_the_slip() {
    let flow = flow(SLIP);
    let input = r#"{"to": "orders", "headers": {"slip": "audit, double"}, "payload": {"qty": 1}}"#;
    let report = flow
        .dry_run_steps(&InputMessage::parse(input).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["big", "orders", "small"]);
    assert_eq!(
        report.steps[0].does,
        "routing-slip slip of price, audit, double, wait"
    );
    assert_eq!(
        report.steps[0].out[0].payload,
        serde_json::json!({"qty": 2})
    );
}

#[test]
fn bad_routing_slips_are_refused_where_they_are_written() {
    let slip = |inner: &str| {
        let lines = [
            "routes:".to_owned(),
            "  - from: in".to_owned(),
            "    steps:".to_owned(),
            "      - routing-slip:".to_owned(),
            "          header: slip".to_owned(),
            "          steps:".to_owned(),
            format!("            {inner}"),
            "    to: out".to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let with: Vec<&str> = with_queues(&lines);
        let p = only(&with);
        (p.message.clone(), at(&p), help(&p).to_owned())
    };
    let (message, place, hint) = slip("price: {transfrom: '.x'}");
    assert_eq!(message, "unknown step `transfrom`");
    assert_eq!(place, (11, 21));
    assert!(hint.contains("`transform`"), "{hint}");

    let (message, place, _) = slip("price: {transform: '.x |'}");
    assert!(message.starts_with("invalid jq:"), "{message}");
    assert_eq!(place.0, 11);

    let (message, _, _) = slip("inner: {routing-slip: {header: x, steps: {a: {delay: 1s}}}}");
    assert_eq!(message, "a routing slip's step can not be a routing slip");

    let (message, _, hint) = slip("once: {dedupe: '.id'}");
    assert!(message.contains("can not be `dedupe`"), "{message}");
    assert!(hint.contains("route's `steps:`"), "{hint}");

    let (message, _, _) = slip("'a,b': {delay: 1s}");
    assert!(message.contains("names are comma-separated"), "{message}");

    let (message, _, _) = slip("audit: {wire-tap: in}");
    assert_eq!(
        message,
        "the step sends to `in`, the channel its route consumes"
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - routing-slip: {steps: {a: {delay: 1s}}}",
        "    to: out",
    ]));
    assert!(p.message.ends_with("has no `header`"), "{}", p.message);
}
