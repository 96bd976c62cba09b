//! The `dedupe` step (the Idempotent Receiver): its keys, its window, a divert channel, an
//! original the rest of the route refused, keys that survive a restart on a durable route, and
//! the problems `eip validate` reports.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::{self, InputMessage};
use eip_dsl::load;
use eip_dsl::step::Services;

mod support {
    pub mod durable_run;
    pub mod one_route;
    pub mod scratch;
}

use support::durable_run::run_durable;
use support::one_route::{drain, flow, flow_with, problems, run_all, yaml_with};
use support::scratch::Scratch;

fn order(n: u64) -> Message {
    Message::new(format!(r#"{{"order": {n}}}"#))
}

fn orders_of(messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .map(|m| {
            let value: serde_json::Value = serde_json::from_slice(m.payload()).expect("JSON");
            value["order"].as_u64().expect("an order number")
        })
        .collect()
}

#[test]
fn a_message_whose_jq_key_was_seen_is_dropped_and_counted() {
    let f = flow("      - dedupe: '.order'");
    let (out, dead) = run_all(&f, vec![order(1), order(2), order(1), order(3), order(2)]);
    assert_eq!(orders_of(&out), [1, 2, 3]);
    assert!(dead.is_empty());
    let stats = f.routes()[0].stats();
    assert_eq!((stats.taken, stats.passed, stats.duplicates), (5, 3, 2));
}

#[test]
fn by_default_the_key_is_the_message_id_so_a_redelivered_copy_is_caught() {
    let f = flow("      - dedupe: {window: 1m}");
    let original = order(1);
    let (out, _) = run_all(&f, vec![original.clone(), order(1), original]);
    assert_eq!(
        orders_of(&out),
        [1, 1],
        "a new message with the same content passes"
    );
}

#[test]
fn a_header_key_sends_duplicates_to_the_divert_channel_and_a_message_without_it_is_invalid() {
    let f = flow_with(
        "  dups: {kind: point-to-point}",
        "      - dedupe: {header: x-request, divert: dups}",
    );
    let req = |id: &str, n: u64| {
        Message::builder(format!(r#"{{"order": {n}}}"#))
            .header("x-request", id)
            .build()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let route = &f.routes()[0];
        for msg in [req("a", 1), req("b", 2), req("a", 3), order(4)] {
            route.handle(msg).await.expect("taken");
        }
        assert_eq!(orders_of(&drain(&f, "out").await), [1, 2]);
        assert_eq!(orders_of(&drain(&f, "dups").await), [3]);
        let dead = drain(&f, "dead-letters").await;
        assert_eq!(orders_of(&dead), [4]);
        let death = dead[0].death().expect("a death record").expect("readable");
        assert_eq!(death.reason, DeathReason::Invalid);
        let error = death.error.unwrap_or_default();
        assert!(error.contains("header `x-request` is missing"), "{error}");
    });
}

#[test]
fn a_key_is_a_duplicate_until_exactly_the_window_has_passed_since_the_original() {
    let f = flow("      - dedupe: {key: '.order', window: 10s}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let route = &f.routes()[0];
        route.handle(order(1)).await.expect("taken");
        tokio::time::advance(Duration::from_millis(9_999)).await;
        route.handle(order(1)).await.expect("taken");
        assert_eq!(route.stats().duplicates, 1, "a moment inside the window");
        tokio::time::advance(Duration::from_millis(1)).await;
        route.handle(order(1)).await.expect("taken");
        assert_eq!(
            route.stats().duplicates,
            1,
            "the duplicate did not stretch the window"
        );
        assert_eq!(orders_of(&drain(&f, "out").await), [1, 1]);
    });
}

#[test]
fn an_original_the_rest_of_the_route_refused_passes_when_it_comes_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let flaky = tower::service_fn(move |msg: Message| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        async move {
            match n {
                0 => Err::<Message, tower::BoxError>("down for a moment".into()),
                _ => Ok(msg),
            }
        }
    });
    let services = Services::new().add("flaky", flaky);
    let source = yaml_with("", "      - dedupe: '.order'\n      - process: flaky");
    let plan = load::load_str_with(&source, "flow.yaml", Path::new("."), &services)
        .expect("the flow validates");
    let f = compile::compile(&plan).expect("compiles");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let route = &f.routes()[0];
        let msg = order(7);
        let failed = route
            .handle(msg.clone())
            .await
            .expect_err("the service failed");
        assert!(failed.to_string().contains("down for a moment"), "{failed}");
        route
            .handle(msg.clone())
            .await
            .expect("the redelivery passes");
        route.handle(msg).await.expect("a third copy is taken");
        assert_eq!(orders_of(&drain(&f, "out").await), [7]);
        assert_eq!(route.stats().duplicates, 1);
    });
}

const DURABLE: &str = "
channels:
  orders: {kind: point-to-point, durable: true}
  out: {kind: point-to-point, durable: true}
routes:
  - name: once
    from: orders
    steps:
      - dedupe: '.order'
    to: out
";

/// Runs the durable flow on `data` once with `orders`; the orders that came out.
fn run_once(data: &Path, orders: &[u64]) -> Vec<u64> {
    let messages = orders.iter().map(|n| order(*n)).collect();
    orders_of(&run_durable(
        DURABLE,
        data,
        "orders",
        messages,
        Duration::ZERO,
    ))
}

#[test]
fn on_a_durable_route_the_seen_keys_survive_a_restart() {
    let scratch = Scratch::new("dedupe-durable");
    let data = scratch.0.join("data");
    assert_eq!(run_once(&data, &[1, 2, 1]), [1, 2]);
    // A new process on the same store: 1 and 2 were seen, 3 is new.
    assert_eq!(run_once(&data, &[2, 3, 1, 3]), [3]);
    assert_eq!(run_once(&data, &[4]), [4], "the store opens a third time");
}

#[test]
fn the_dry_run_says_how_the_step_keys_messages() {
    let f = flow("      - dedupe: {key: '.order', window: 90s}");
    let input =
        InputMessage::parse(r#"{"to": "orders", "payload": {"order": 1}}"#).expect("an input line");
    let report = f.dry_run_steps(&input).expect("a report");
    assert_eq!(report.stored, ["orders", "out"]);
    assert_eq!(report.steps[0].does, "dedupe by .order within 90s");
    assert_eq!(report.steps[0].out.len(), 1, "an original goes on");
}

#[test]
fn problems_are_reported_at_the_key_with_help() {
    let text = problems("      - dedupe: {key: '.order', header: x-request}");
    assert!(
        text.contains("`key` and `header` contradict each other"),
        "{text}"
    );

    let text = problems("      - dedupe: {window: 0s}");
    assert!(text.contains("window"), "{text}");

    let text = problems("      - dedupe: {max-keys: 0}");
    assert!(text.contains("max-keys"), "{text}");

    let text = problems("      - dedupe: {windw: 1m}");
    assert!(text.contains("did you mean `window`?"), "{text}");

    let text = problems("      - dedupe: '.order |'");
    assert!(text.contains("invalid jq"), "{text}");
    assert!(text.contains("flow.yaml:"), "{text}");

    let text = problems("      - dedupe: {divert: nowhere}");
    assert!(text.contains("unknown channel `nowhere`"), "{text}");

    let text = problems("      - dedupe: {divert: orders}");
    assert!(text.contains("the channel its route consumes"), "{text}");
}
