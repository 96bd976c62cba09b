//! A step's own `on-error:`: the message the step failed on goes to the step's channel at once
//! (no redelivery), the rest of a split goes on, a step without one falls to the route's, and
//! `eip validate` checks it like the route's.

mod support {
    pub mod on_error_flow;
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile;
use eip_dsl::step::Services;
use support::on_error_flow::{CHANNELS, load_with, payloads_at, pricing, run, runtime};

const STEP_LEVEL: &str = "
channels:
  orders:
    kind: point-to-point
    redelivery: {max-attempts: 3, initial-backoff: 1ms, max-backoff: 1ms}
  priced: {kind: point-to-point}
  orders.failed: {kind: point-to-point}
  pricing.failed: {kind: point-to-point}
routes:
  - name: price
    from: orders
    on-error: orders.failed
    steps:
      - transform: '. + \"!\"'
      - process: {service: pricing, on-error: pricing.failed}
      - process: tax
    to: priced
";

/// A service that fails on everything: `tax` is down.
fn down() -> impl tower::Service<
    Message,
    Response = Message,
    Error = tower::BoxError,
    Future = std::future::Ready<Result<Message, tower::BoxError>>,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|_: Message| std::future::ready(Err("tax is down".into())))
}

#[test]
fn a_steps_own_on_error_takes_the_message_it_failed_on_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let services = Services::new()
        .add("pricing", pricing(calls.clone()))
        .add("tax", down());
    let plan = load_with(STEP_LEVEL, &services).expect("validates");
    assert_eq!(
        plan.routes[0].steps[1]
            .on_error
            .as_ref()
            .map(|o| o.to.as_str()),
        Some("pricing.failed")
    );
    assert!(plan.routes[0].steps[2].on_error.is_none());
    let flow = compile::compile(&plan).expect("compiles");
    // The transform makes `fail!` of `fail`, which the pricing refuses.
    let out = runtime().block_on(run(&flow, &["\"fail\""]));

    // Once, not redelivered: the step's own `on-error` took it at once.
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let failed: Vec<&Message> = out
        .iter()
        .filter(|(c, _)| c == "pricing.failed")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(failed.len(), 1, "{out:?}");
    // As the step received it: after the transform.
    assert_eq!(failed[0].payload_str(), Some("\"fail!\""));
    let death = failed[0].death().expect("readable").expect("a record");
    assert_eq!(death.reason, DeathReason::Rejected);
    assert_eq!(death.channel, "orders");
    assert_eq!(
        death.error.as_deref(),
        Some("route `price`, step 2 (process pricing): pricing is down")
    );
    assert!(payloads_at(&out, "orders.failed").is_empty(), "{out:?}");
    assert!(payloads_at(&out, "priced").is_empty(), "{out:?}");
    assert_eq!(flow.routes()[0].stats().diverted, 1);
    assert_eq!(flow.routes()[0].stats().taken, 1);
}

#[test]
fn a_step_without_its_own_on_error_falls_to_the_routes() {
    let calls = Arc::new(AtomicUsize::new(0));
    let services = Services::new()
        .add("pricing", pricing(calls.clone()))
        .add("tax", down());
    let plan = load_with(STEP_LEVEL, &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    // Priced, then `tax` fails: redelivered three times, then the route's `on-error`.
    let out = runtime().block_on(run(&flow, &["\"abc\""]));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(payloads_at(&out, "orders.failed"), ["\"abc\""], "{out:?}");
    assert!(payloads_at(&out, "pricing.failed").is_empty());
    let failed = &out
        .iter()
        .find(|(c, _)| c == "orders.failed")
        .expect("one")
        .1;
    let death = failed.death().expect("readable").expect("a record");
    assert_eq!(death.reason, DeathReason::MaxRedeliveries);
    assert_eq!(
        death.error.as_deref(),
        Some("route `price`, step 3 (process tax): tax is down")
    );
}

#[test]
fn a_steps_on_error_is_checked_like_the_routes() {
    let services = Services::new()
        .add("pricing", pricing(Arc::default()))
        .add("tax", down());
    let with = |on_error: &str| {
        let source = STEP_LEVEL.replace("on-error: pricing.failed", on_error);
        match load_with(&source, &services) {
            Ok(_) => panic!("validated: {on_error}"),
            Err(text) => text,
        }
    };
    let text = with("on-error: nowhere");
    assert!(text.contains("unknown channel `nowhere`"), "{text}");
    assert!(
        text.contains("routes[0].steps[1].process.on-error.to"),
        "{text}"
    );
    let text = with("on-error: orders");
    assert!(text.contains("the channel its route consumes"), "{text}");
    let text = with("on-error: {to: pricing.failed, retry: 3}");
    assert!(text.contains("unknown key `retry`"), "{text}");

    // Only a step that calls out takes it.
    let source = STEP_LEVEL.replace(
        "      - transform: '. + \"!\"'",
        "      - transform: {payload: '. + \"!\"', on-error: pricing.failed}",
    );
    let text = match load_with(&source, &services) {
        Ok(_) => panic!("validated"),
        Err(text) => text,
    };
    assert!(text.contains("unknown key `on-error`"), "{text}");
}

#[test]
fn a_steps_on_error_takes_each_failing_part_of_a_split_and_the_rest_goes_on() {
    let services = Services::new()
        .add("pricing", pricing(Arc::default()))
        .add("tax", down());
    let routes = "
routes:
  - name: price
    from: orders
    steps:
      - wire-tap: audit
      - split: {jq: '.[]'}
      - process: {service: pricing, on-error: pricing.failed}
    to: priced
";
    let source = format!(
        "{}  audit: {{kind: point-to-point}}\n  pricing.failed: {{kind: point-to-point}}\n{routes}",
        CHANNELS
    );
    let plan = load_with(&source, &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    let out = runtime().block_on(run(&flow, &[r#"["a", "fail", "b"]"#]));
    assert_eq!(
        payloads_at(&out, "audit").len(),
        1,
        "the tap's copy: {out:?}"
    );
    assert_eq!(payloads_at(&out, "priced"), ["\"A\"", "\"B\""]);
    assert_eq!(payloads_at(&out, "pricing.failed"), ["\"fail\""]);
    assert!(payloads_at(&out, "dead-letters").is_empty(), "{out:?}");
    assert_eq!(flow.routes()[0].stats().diverted, 1);
}

#[test]
fn behind_an_idempotent_receiver_only_a_steps_on_error_keeps_the_key() {
    let services = Services::new().add("pricing", pricing(Arc::default()));
    let route = |on_error: &str, step_on_error: &str| {
        format!(
            "{CHANNELS}  pricing.failed: {{kind: point-to-point}}
routes:
  - name: price
    from: orders
{on_error}
    steps:
      - dedupe: '.'
      - process: {{service: pricing{step_on_error}}}
    to: priced
"
        )
    };
    // The route's `on-error`: the failure reaches the receiver, which forgets the key, so the
    // second copy is priced (and fails) again.
    let plan = load_with(&route("    on-error: orders.failed", ""), &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    let out = runtime().block_on(run(&flow, &["\"fail\"", "\"fail\""]));
    assert_eq!(payloads_at(&out, "orders.failed").len(), 2, "{out:?}");
    assert_eq!(flow.routes()[0].stats().duplicates, 0);

    // The step's own: handled inside the route, the key is kept, the second is a duplicate.
    let source = route("", ", on-error: pricing.failed");
    let plan = load_with(&source, &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    let out = runtime().block_on(run(&flow, &["\"fail\"", "\"fail\""]));
    assert_eq!(payloads_at(&out, "pricing.failed").len(), 1, "{out:?}");
    assert_eq!(flow.routes()[0].stats().duplicates, 1);
}
