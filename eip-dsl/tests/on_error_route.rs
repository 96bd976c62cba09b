//! A route's `on-error:`: a step that fails is redelivered by the channel's policy, then the
//! message goes to the `on-error` channel (not the dead letter channel) with its death record
//! and is acked; other failures keep going to the dead letter channel; `eip validate` refuses
//! what can not be meant, at the key.

mod support {
    pub mod on_error_flow;
    pub mod scratch;
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_core::message::DeathReason;
use eip_dsl::builder::{FlowBuilder, channel, route};
use eip_dsl::compile::{self, StoreOptions};
use eip_dsl::step::Services;
use support::on_error_flow::{
    CHANNELS, load_with, payloads_at, pricing, run, run_sending, runtime,
};
use support::scratch::Scratch;

/// The rendered problems of routes over [`CHANNELS`] that must not validate.
fn problems(routes: &str) -> String {
    let services = Services::new().add("pricing", pricing(Arc::default()));
    match load_with(&format!("{CHANNELS}{routes}"), &services) {
        Ok(_) => panic!("the flow validated:\n{routes}"),
        Err(text) => text,
    }
}

const PRICE: &str = "
routes:
  - name: price
    from: orders
    on-error: orders.failed
    steps:
      - process: pricing
    to: priced
";

#[test]
fn a_failed_step_is_redelivered_then_goes_to_the_on_error_channel_with_its_death_record() {
    let calls = Arc::new(AtomicUsize::new(0));
    let services = Services::new().add("pricing", pricing(calls.clone()));
    let plan = load_with(&format!("{CHANNELS}{PRICE}"), &services).expect("validates");
    assert_eq!(
        plan.routes[0].on_error.as_ref().map(|o| o.to.as_str()),
        Some("orders.failed")
    );
    let flow = compile::compile(&plan).expect("compiles");
    let out = runtime().block_on(run(&flow, &["abc", "fail"]));

    assert_eq!(payloads_at(&out, "priced"), ["ABC"]);
    assert_eq!(payloads_at(&out, "orders.failed"), ["fail"]);
    assert!(
        payloads_at(&out, "dead-letters").is_empty(),
        "not dead-lettered: {out:?}"
    );
    // One call for `abc`; `fail` three times, as the channel's policy allows.
    assert_eq!(calls.load(Ordering::SeqCst), 1 + 3);

    let (_, failed) = out
        .iter()
        .find(|(c, _)| c == "orders.failed")
        .expect("a failed message");
    let death = failed
        .death()
        .expect("a readable death record")
        .expect("a death record");
    assert_eq!(death.reason, DeathReason::MaxRedeliveries);
    assert_eq!(death.channel, "orders", "replay sends it back to the route");
    assert_eq!(
        death.error.as_deref(),
        Some("route `price`, step 1 (process pricing): pricing is down")
    );
    let route = &flow.routes()[0];
    assert_eq!(route.stats().diverted, 1);
    assert_eq!(route.stats().taken, 1 + 3);
    // Acked: nothing waits in `orders`, nothing in flight.
    let orders = flow.channels().iter().find(|c| c.name() == "orders");
    let Some(Channel::PointToPoint(orders)) = orders else {
        panic!("orders is a queue")
    };
    assert_eq!(orders.stats().depth + orders.stats().in_flight, 0);
    assert_eq!(orders.stats().dead_lettered, 0);
}

#[test]
fn without_on_error_the_failed_message_goes_to_the_dead_letter_channel_as_before() {
    let calls = Arc::new(AtomicUsize::new(0));
    let services = Services::new().add("pricing", pricing(calls.clone()));
    let source = format!(
        "{CHANNELS}{}",
        PRICE.replace("    on-error: orders.failed\n", "")
    );
    let plan = load_with(&source, &services).expect("validates");
    assert!(plan.routes[0].on_error.is_none());
    let flow = compile::compile(&plan).expect("compiles");
    let out = runtime().block_on(run(&flow, &["fail"]));
    assert!(payloads_at(&out, "orders.failed").is_empty(), "{out:?}");
    assert_eq!(payloads_at(&out, "dead-letters"), ["fail"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(flow.routes()[0].stats().diverted, 0);
}

#[test]
fn on_error_takes_step_failures_only_a_message_with_no_route_is_dead_lettered() {
    let services = Services::new().add("pricing", pricing(Arc::default()));
    let routes = "
routes:
  - name: price
    from: orders
    on-error: {to: orders.failed}
    steps:
      - process: pricing
    choice:
      - {when: '$.side == \"buy\"', to: priced}
";
    let plan = load_with(&format!("{CHANNELS}{routes}"), &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    // `ABC` (what the service made of `abc`) is not JSON: no clause matches, no `otherwise`.
    let out = runtime().block_on(run(&flow, &["abc", "fail"]));
    assert_eq!(payloads_at(&out, "orders.failed"), ["fail"]);
    let dead: Vec<&Message> = out
        .iter()
        .filter(|(c, _)| c == "dead-letters")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(dead.len(), 1, "{out:?}");
    let death = dead[0].death().expect("readable").expect("a record");
    assert_eq!(death.reason, DeathReason::NoRoute);
}

#[test]
fn a_closed_on_error_channel_hands_the_message_to_the_dead_letter_channel() {
    let services = Services::new().add("pricing", pricing(Arc::default()));
    let plan = load_with(&format!("{CHANNELS}{PRICE}"), &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    let failed = flow.channels().iter().find(|c| c.name() == "orders.failed");
    let Some(Channel::PointToPoint(failed)) = failed else {
        panic!("orders.failed is a queue")
    };
    let out = runtime().block_on(async {
        failed.delete().await;
        run(&flow, &["fail"]).await
    });
    assert_eq!(payloads_at(&out, "dead-letters"), ["fail"], "{out:?}");
    let dead = &out
        .iter()
        .find(|(c, _)| c == "dead-letters")
        .expect("one")
        .1;
    let death = dead.death().expect("readable").expect("a record");
    assert_eq!(death.reason, DeathReason::MaxRedeliveries);
    assert_eq!(flow.routes()[0].stats().diverted, 0);
}

#[test]
fn the_builder_sets_on_error_as_the_flow_file_does() {
    let calls = Arc::new(AtomicUsize::new(0));
    let flow = FlowBuilder::new()
        .channel(
            "orders",
            channel::point_to_point().redelivery(
                channel::redelivery()
                    .max_attempts(2)
                    .initial_backoff(Duration::from_millis(1)),
            ),
        )
        .channel("priced", channel::point_to_point())
        .channel("orders.failed", channel::point_to_point())
        .service("pricing", pricing(calls.clone()))
        .route(
            route::from("orders")
                .name("price")
                .process("pricing")
                .to("priced")
                .on_error("orders.failed"),
        )
        .compile(".")
        .expect("compiles");
    let out = runtime().block_on(run(&flow, &["fail"]));
    assert_eq!(payloads_at(&out, "orders.failed"), ["fail"]);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn on_a_durable_route_the_failed_message_is_kept_on_the_durable_on_error_channel() {
    let scratch = Scratch::new("on-error-durable");
    let source = "
channels:
  orders:
    kind: point-to-point
    durable: true
    redelivery: {max-attempts: 2, initial-backoff: 1ms, max-backoff: 1ms}
  priced: {kind: point-to-point, durable: true}
  orders.failed: {kind: point-to-point, durable: true}
routes:
  - name: price
    from: orders
    on-error: orders.failed
    steps:
      - process: pricing
    to: priced
";
    let services = Services::new().add("pricing", pricing(Arc::default()));
    let plan = load_with(source, &services).expect("validates");
    let store = StoreOptions {
        data_dir: scratch.0.join("data"),
        max_bytes: None,
    };
    {
        let flow = compile::compile_with(&plan, &store).expect("compiles");
        let out = runtime().block_on(run(&flow, &["fail"]));
        assert_eq!(payloads_at(&out, "orders.failed"), ["fail"]);
    }
    // Reopened: the failed message was acked in `orders`, so nothing is taken again.
    let flow = compile::compile_with(&plan, &store).expect("compiles again");
    let out = runtime().block_on(run(&flow, &[]));
    assert!(out.is_empty(), "nothing redelivered: {out:?}");
}

#[test]
fn validate_refuses_what_on_error_can_not_mean_at_the_key() {
    let route = |on_error: &str| {
        format!(
            "
routes:
  - name: price
    from: orders
    on-error: {on_error}
    steps:
      - process: pricing
    to: priced
"
        )
    };
    let text = problems(&route("nowhere"));
    assert!(text.contains("unknown channel `nowhere`"), "{text}");
    assert!(text.contains("routes[0].on-error.to"), "{text}");
    assert!(text.contains("flow.yaml:13:15"), "{text}");

    let text = problems(&route("orders"));
    assert!(
        text.contains("`on-error` sends to `orders`, the channel its route consumes"),
        "{text}"
    );

    let text = problems(&route("{too: orders.failed}"));
    assert!(text.contains("unknown key `too`"), "{text}");
    assert!(text.contains("did you mean `to`?"), "{text}");

    let text = problems(&route("{}"));
    assert!(text.contains("has no `to`"), "{text}");

    let text = problems(&route("[a, b]"));
    assert!(text.contains("`to` must be a string"), "{text}");

    let text = problems(
        &route("orders.failed")
            .replace(
                "routes:",
                "  archive: {kind: point-to-point, durable: true}\nroutes:",
            )
            .replace("from: orders", "from: archive"),
    );
    assert!(text.contains("which is kept in memory"), "{text}");
    assert!(text.contains("durable: true"), "{text}");

    let text = problems(&route("orders.failed").replace("on-error", "on-eror"));
    assert!(text.contains("did you mean `on-error`?"), "{text}");
}

#[test]
fn a_route_on_a_publish_subscribe_channel_counts_its_subscriptions_redeliveries() {
    let calls = Arc::new(AtomicUsize::new(0));
    let services = Services::new().add("pricing", pricing(calls.clone()));
    let source = "
channels:
  news:
    kind: publish-subscribe
    redelivery: {max-attempts: 2, initial-backoff: 1ms, max-backoff: 1ms}
  priced: {kind: point-to-point}
  news.failed: {kind: point-to-point}
routes:
  - name: price
    from: news
    on-error: news.failed
    steps:
      - process: pricing
    to: priced
";
    let plan = load_with(source, &services).expect("validates");
    let flow = compile::compile(&plan).expect("compiles");
    let Some(Channel::PublishSubscribe(news)) = flow.channels().iter().find(|c| c.name() == "news")
    else {
        panic!("news is a topic")
    };
    let out = runtime().block_on(run_sending(&flow, async {
        news.publish(Message::new("fail")).await.expect("accepted");
    }));
    assert_eq!(payloads_at(&out, "news.failed"), ["fail"], "{out:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let failed = &out.iter().find(|(c, _)| c == "news.failed").expect("one").1;
    let death = failed.death().expect("readable").expect("a record");
    assert_eq!(death.channel, "news");
}

#[test]
fn eip_graph_draws_the_on_error_channels() {
    let source = format!(
        "{CHANNELS}  pricing.failed: {{kind: point-to-point}}
routes:
  - name: price
    from: orders
    on-error: orders.failed
    steps:
      - process: {{service: pricing, on-error: pricing.failed}}
    to: priced
"
    );
    let services = Services::new().add("pricing", pricing(Arc::default()));
    let plan = load_with(&source, &services).expect("the flow validates");
    let dot = eip_dsl::graph::dot(&plan);
    for target in ["orders_failed", "pricing_failed"] {
        let edge = dot
            .lines()
            .find(|line| line.contains("r0_price ->") && line.contains(target))
            .unwrap_or_else(|| panic!("no edge to {target}:\n{dot}"));
        assert!(edge.contains(r#"label="on error""#), "{edge}");
    }
}
