//! Compiled flows: what a dry run answers for each kind of step, and that a running flow does
//! the same.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_dsl::compile::{self, DryRunError, Flow, InputMessage, Output, Report, ReportEntry};
use eip_dsl::load;

fn flow(yaml: &str) -> Flow {
    let plan = match load::load_str(yaml, "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    };
    compile::compile(&plan).unwrap()
}

fn route(flow: &Flow, line: &str) -> Result<Report, DryRunError> {
    flow.dry_run(&InputMessage::parse(line).unwrap())
}

fn stored(flow: &Flow, line: &str) -> Vec<String> {
    route(flow, line).unwrap().stored
}

#[test]
fn a_filter_drops_or_discards_and_a_wire_tap_copies_before_it() {
    let f = flow(
        "
channels:
  orders: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
  audit: {kind: point-to-point}
  plain: {kind: point-to-point}
  dropped: {kind: point-to-point}
routes:
  - {from: orders, wire-tap: audit, filter: '$.total > 100', discard: small, to: big}
  - {from: plain, filter: '$.total > 100', to: big}
",
    );
    assert_eq!(
        stored(&f, r#"{"to": "orders", "payload": {"total": 500}}"#),
        ["audit", "big", "orders"]
    );
    assert_eq!(
        stored(&f, r#"{"to": "orders", "payload": {"total": 5}}"#),
        ["audit", "orders", "small"],
        "the tap copies what the filter then discards"
    );
    assert_eq!(
        stored(&f, r#"{"to": "plain", "payload": {"total": 5}}"#),
        ["plain"],
        "without a discard channel the message is dropped (and counted)"
    );
}

#[test]
fn a_recipient_list_from_a_header_dead_letters_what_it_can_not_resolve() {
    let f = flow(
        "
channels:
  in: {kind: point-to-point}
  billing: {kind: point-to-point}
  shipping: {kind: point-to-point}
routes:
  - {from: in, recipient-list: {header: to}}
",
    );
    let report = route(&f, r#"{"to": "in", "headers": {"to": "billing, shiping"}}"#).unwrap();
    assert_eq!(report.stored, ["billing", "dead-letters", "in"]);
    assert_eq!(
        report.dead_letter,
        Some(ReportEntry {
            channel: "dead-letters".into(),
            reason: "no-route".into()
        })
    );
    let none = route(&f, r#"{"to": "in"}"#).unwrap();
    assert_eq!(
        none.stored,
        ["dead-letters", "in"],
        "no header: dead-lettered"
    );
}

#[test]
fn a_route_can_send_to_an_exchange_and_a_channel_dead_letter_channel_is_used() {
    let f = flow(
        "
channels:
  in: {kind: point-to-point, dead-letter: failed}
  failed: {kind: point-to-point}
  nyse: {kind: point-to-point}
  rest: {kind: point-to-point}
routes:
  - from: in
    choice:
      - {when: 'subject matches \"stock.#\"', to: market}
exchanges:
  market:
    bindings:
      - {key: 'stock.*.nyse', to: nyse}
      - {key: 'stock.#', to: [rest]}
",
    );
    assert_eq!(
        stored(&f, r#"{"to": "in", "subject": "stock.ibm.nyse"}"#),
        ["in", "nyse", "rest"],
        "the exchange is not a store; both bindings' targets are"
    );
    let report = route(&f, r#"{"to": "in", "subject": "bond.x"}"#).unwrap();
    assert_eq!(report.stored, ["failed", "in"]);
    assert_eq!(report.dead_letter.unwrap().channel, "failed");
}

#[test]
fn routes_around_an_unguarded_cycle_are_reported_not_followed_forever() {
    let f = flow(
        "
channels:
  a: {kind: point-to-point}
  b: {kind: point-to-point}
routes:
  - {from: a, to: b}
  - {from: b, to: a}
",
    );
    let err = route(&f, r#"{"to": "a"}"#).unwrap_err();
    assert!(matches!(err, DryRunError::Endless(_)), "{err}");
    assert!(err.to_string().contains("a, b"), "{err}");
}

#[test]
fn a_cycle_through_joins_stops_at_loop_detection() {
    let f = flow(
        "
channels:
  a: {kind: publish-subscribe}
  b: {kind: publish-subscribe}
  c: {kind: point-to-point}
routes:
  - {from: b, to: a}
joins:
  - {from: a, to: b}
",
    );
    assert_eq!(
        stored(&f, r#"{"to": "a"}"#),
        ["a", "b"],
        "the route sends it back to a, which has stored it already"
    );
}

#[test]
fn unknown_targets_are_errors_with_a_suggestion() {
    let f = flow("channels:\n  orders: {kind: point-to-point}\n");
    let err = route(&f, r#"{"to": "order"}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown channel or exchange `order`; did you mean `orders`?"
    );
}

/// A running flow puts every message where the dry run said it would.
#[test]
fn a_running_flow_does_what_the_dry_run_says() {
    let yaml = "
channels:
  in: {kind: point-to-point}
  quotes: {kind: publish-subscribe}
  a: {kind: point-to-point}
  b: {kind: point-to-point}
  audit: {kind: point-to-point}
routes:
  - {from: in, wire-tap: audit, choice: [{when: '$.n > 5', to: quotes}], otherwise: b}
  - {from: quotes, to: a}
joins:
  - {from: quotes, to: audit, archival: true}
";
    let lines: Vec<String> = (0..10)
        .map(|n| format!(r#"{{"to": "in", "payload": {{"n": {n}}}}}"#))
        .collect();
    let f = flow(yaml);
    let mut expected: Vec<String> = Vec::new();
    for line in &lines {
        expected.extend(stored(&f, line));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outputs: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = outputs.clone();
    let output: Output = Arc::new(move |channel: &str, _msg| {
        seen.lock().unwrap().push(channel.to_owned());
    });
    let counters = runtime.block_on(async {
        let running = f.start(output);
        for line in &lines {
            let input = InputMessage::parse(line).unwrap();
            f.bus().publish(&input.to, input.message).await.unwrap();
        }
        assert!(
            running.settle(Duration::from_secs(10)).await,
            "the flow drains"
        );
        let counters = running.counters();
        assert!(running.stop(Duration::from_secs(1)).await.is_empty());
        counters
    });
    // Every store of the dry run is a store of the real run: count them per channel.
    let accepted = |name: &str| {
        counters
            .iter()
            .find(|c| c.channel == name)
            .map(|c| c.stats.accepted)
            .unwrap()
    };
    for name in ["in", "quotes", "a", "b", "audit"] {
        let dry = expected.iter().filter(|s| *s == name).count() as u64;
        assert_eq!(accepted(name), dry, "{name}");
    }
    let mut delivered = outputs.lock().unwrap().clone();
    delivered.sort();
    let mut outputs_expected: Vec<String> = expected
        .into_iter()
        .filter(|s| matches!(s.as_str(), "a" | "b" | "audit"))
        .collect();
    outputs_expected.sort();
    assert_eq!(delivered, outputs_expected);
}

/// How many copies each channel of a started flow stored so far: what a point-to-point channel
/// accepted, and for a publish-subscribe channel what each of its subscriptions accepted.
fn stores(flow: &Flow) -> std::collections::BTreeMap<String, u64> {
    flow.channels()
        .iter()
        .map(|channel| {
            let accepted = channel.stats().accepted;
            let copies = match channel {
                eip_core::channel::Channel::PublishSubscribe(c) => {
                    accepted / c.subscriber_count().max(1) as u64
                }
                eip_core::channel::Channel::PointToPoint(_) => accepted,
            };
            (channel.name().to_owned(), copies)
        })
        .collect()
}

/// Sends `lines` into `f` running, one at a time: the channels the dry run says would store
/// each message are, copy for copy, the channels the running flow then stores it on.
fn dry_run_agrees_with_the_running_flow(f: &Flow, lines: &[&str], name: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let running = f.start(Arc::new(|_: &str, _: &eip_core::Message| {}));
        for line in lines {
            let before = stores(f);
            let report = route(f, line).unwrap();
            let input = InputMessage::parse(line).unwrap();
            f.bus().publish(&input.to, input.message).await.unwrap();
            assert!(
                running.settle(Duration::from_secs(10)).await,
                "{name}: drains"
            );
            let mut real: Vec<String> = Vec::new();
            for (channel, n) in stores(f) {
                let new = n - before.get(&channel).copied().unwrap_or(0);
                real.extend(std::iter::repeat_n(channel, new as usize));
            }
            assert!(!real.is_empty(), "{name}: {line}");
            assert_eq!(report.stored, real, "{name}: {line}");
        }
        running.stop(Duration::from_secs(1)).await;
    });
}

#[test]
fn for_every_example_flow_the_dry_run_stores_what_the_running_flow_stores() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows");
    for name in ["trading", "join-chain"] {
        let plan = match load::load_file(&examples.join(format!("{name}.yaml"))) {
            Ok(plan) => plan,
            Err(errors) => panic!("{}", errors.render()),
        };
        let input = std::fs::read_to_string(examples.join(format!("{name}.input.jsonl"))).unwrap();
        let lines: Vec<&str> = input.lines().filter(|l| !l.trim().is_empty()).collect();
        dry_run_agrees_with_the_running_flow(&compile::compile(&plan).unwrap(), &lines, name);
    }
}

#[test]
fn filters_recipient_lists_and_their_dead_letters_do_in_a_run_what_the_dry_run_says() {
    let f = flow(
        "
channels:
  in: {kind: point-to-point}
  orders: {kind: publish-subscribe}
  billing: {kind: point-to-point}
  shipping: {kind: point-to-point}
  small: {kind: point-to-point}
  audit: {kind: point-to-point}
routes:
  - {from: in, wire-tap: audit, filter: '$.total > 100', discard: small, to: orders}
  - {from: orders, recipient-list: {header: to}}
",
    );
    let lines = [
        r#"{"to": "in", "headers": {"to": "billing, shipping"}, "payload": {"total": 500}}"#,
        r#"{"to": "in", "headers": {"to": "billing, shiping"}, "payload": {"total": 500}}"#,
        r#"{"to": "in", "payload": {"total": 500}}"#,
        r#"{"to": "in", "headers": {"to": "billing"}, "payload": {"total": 5}}"#,
    ];
    dry_run_agrees_with_the_running_flow(&f, &lines, "recipients");
}
