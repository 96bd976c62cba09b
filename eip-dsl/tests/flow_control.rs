//! Flow control in a route: the Delayer (`delay`), the Throttler (`throttle`), the load balancer
//! (`load-balance`) and the Routing Slip (`routing-slip`). Times are measured on tokio's paused
//! clock, which moves only when every task waits: a wait is as long as the step makes it,
//! whatever the machine's load.

mod support {
    pub mod problems;
    pub mod queues;
    pub mod scratch;
    pub mod validate;
}

use std::path::Path;
use std::time::{Duration, SystemTime};

use eip_core::Message;
use eip_core::channel::{Channel, PointToPoint};
use eip_core::message::DeathReason;
use eip_dsl::compile::{self, Flow, InputMessage, StoreOptions};
use eip_dsl::load;
use eip_dsl::plan::Plan;
use support::problems::{at, help, only};
use support::queues::with_queues;
use support::scratch::Scratch;
use tokio::time::Instant;

const CHANNELS: &str = "
channels:
  orders: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
  other: {kind: point-to-point}
";

fn plan(routes: &str) -> Plan {
    match load::load_str(&format!("{CHANNELS}{routes}"), "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    }
}

fn flow(routes: &str) -> Flow {
    compile::compile(&plan(routes)).unwrap()
}

fn queue(flow: &Flow, name: &str) -> PointToPoint {
    match flow.channels().iter().find(|c| c.name() == name) {
        Some(Channel::PointToPoint(q)) => q.clone(),
        _ => panic!("no queue {name}"),
    }
}

fn depth(flow: &Flow, name: &str) -> usize {
    queue(flow, name).stats().depth
}

/// A runtime whose clock stands still until every task waits, then jumps to the next timer.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The payloads waiting in `name`, in order, taken off it.
async fn drain(flow: &Flow, name: &str) -> Vec<String> {
    let mut receiver = queue(flow, name).receiver();
    let mut out = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        out.push(delivery.message().payload_str().unwrap_or("").to_owned());
        delivery.ack();
    }
    out
}

/// The dead letters' reasons and errors, taken off the dead letter channel.
async fn dead_letters(flow: &Flow) -> Vec<(DeathReason, String)> {
    let mut receiver = queue(flow, "dead-letters").receiver();
    let mut out = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        let death = delivery.message().death().unwrap().expect("a death record");
        out.push((death.reason, death.error.unwrap_or_default()));
        delivery.ack();
    }
    out
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

// ---- delay ---------------------------------------------------------------------------------

#[test]
fn a_delay_holds_each_message_for_its_time_before_it_goes_on() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - delay: 5s
    to: big
",
    );
    paused().block_on(async {
        let route = flow.routes()[0].clone();
        let started = Instant::now();
        let handling = tokio::spawn(async move { route.handle(Message::new("1")).await });
        tokio::time::sleep(Duration::from_millis(4900)).await;
        assert_eq!(depth(&flow, "big"), 0, "still waiting after 4.9 s");
        handling.await.unwrap().unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(drain(&flow, "big").await, ["1"]);
    });
}

#[test]
fn a_delay_until_waits_for_the_time_the_message_names_and_not_for_one_past() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - delay: {until: '.at', max: 1h}
    to: big
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        let cases = [
            (format!(r#"{{"at": {}}}"#, epoch_now() + 120.0), 118, 121),
            (r#"{"at": "2001-01-01T00:00:00Z"}"#.to_owned(), 0, 0),
            (r#"{"at": 0}"#.to_owned(), 0, 0),
        ];
        for (payload, at_least, at_most) in cases {
            let started = Instant::now();
            route.handle(Message::new(payload.clone())).await.unwrap();
            let waited = started.elapsed();
            assert!(
                waited >= Duration::from_secs(at_least) && waited <= Duration::from_secs(at_most),
                "{payload}: waited {waited:?}"
            );
        }
        // RFC 3339 text with an offset, a minute ahead.
        let at = rfc3339_plus_two(SystemTime::now() + Duration::from_secs(60));
        let started = Instant::now();
        route
            .handle(Message::new(format!(r#"{{"at": "{at}"}}"#)))
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_secs(58), "{at}");
        assert_eq!(drain(&flow, "big").await.len(), 4);
        assert!(dead_letters(&flow).await.is_empty());
    });
}

/// `t` as RFC 3339 text in UTC+02:00.
fn rfc3339_plus_two(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap();
    ts.display_with_offset(jiff::tz::Offset::constant(2))
        .to_string()
}

#[test]
fn a_time_that_can_not_be_read_or_is_too_far_makes_the_message_invalid() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - delay: {until: '.at', max: 1h}
    to: big
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        let far = format!(r#"{{"at": {}}}"#, epoch_now() + 2.0 * 86_400.0);
        for payload in [
            far.as_str(),
            r#"{"at": "soon"}"#,
            r#"{"at": null}"#,
            "not json",
        ] {
            let started = Instant::now();
            route
                .handle(Message::new(payload.to_owned()))
                .await
                .unwrap();
            assert_eq!(started.elapsed(), Duration::ZERO, "{payload}: no wait");
        }
        assert!(drain(&flow, "big").await.is_empty());
        let dead = dead_letters(&flow).await;
        let reasons: Vec<DeathReason> = dead.iter().map(|(r, _)| *r).collect();
        assert_eq!(reasons, [DeathReason::Invalid; 4]);
        assert!(
            dead[0].1.starts_with("`.at`: the time is 1d 23h 59m")
                && dead[0]
                    .1
                    .ends_with("from now, past the delay's `max` of 1h"),
            "{}",
            dead[0].1
        );
        assert!(
            dead[1]
                .1
                .starts_with("`.at`: `soon` is not an RFC 3339 time"),
            "{}",
            dead[1].1
        );
        assert_eq!(
            dead[2].1,
            "`.at`: gave null, not a time (RFC 3339 text or seconds since 1970)"
        );
        assert!(
            dead[3].1.starts_with("payload is not JSON"),
            "{}",
            dead[3].1
        );
        assert_eq!(route.stats().invalid, 4);
    });
}

#[test]
fn the_dry_run_does_not_wait_and_says_the_delay() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - delay: 1h
      - delay: {until: '.at'}
    to: big
",
    );
    let report = flow
        .dry_run_steps(&InputMessage::parse(r#"{"to": "orders", "payload": {"at": 0}}"#).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["big", "orders"]);
    let does: Vec<&str> = report.steps.iter().map(|s| s.does.as_str()).collect();
    assert_eq!(does, ["delay 1h", "delay until .at (at most 24h)"]);

    let report = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": {"at": "x"}}"#).unwrap())
        .unwrap();
    let dead = report.dead_letter.expect("dead-lettered");
    assert_eq!(dead.reason, "invalid");
}

#[test]
fn a_message_waiting_in_a_delay_is_not_lost_when_the_flow_stops() {
    let scratch = Scratch::new("delay-durable");
    let mut plan = plan(
        "
routes:
  - from: orders
    steps:
      - delay: 1h
    to: big
",
    );
    for channel in &mut plan.channels {
        channel.durable = true;
    }
    let store = StoreOptions {
        data_dir: scratch.0.clone(),
        max_bytes: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let flow = compile::compile_with(&plan, &store).unwrap();
        let running = flow.start(std::sync::Arc::new(|_: &str, _: &Message| {}));
        queue(&flow, "orders")
            .send(Message::new("kept"))
            .await
            .unwrap();
        // The route takes it and waits in the delay.
        while queue(&flow, "orders").stats().in_flight == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let left = running.shut_down(Duration::from_millis(200)).await;
        assert_eq!(
            left.given_back.abandoned, 1,
            "the waiting call was abandoned"
        );
        assert_eq!(left.channels, [("orders".to_owned(), 1)]);
        assert_eq!(depth(&flow, "big"), 0);
    });
    // The next run finds it on disk, marked redelivered.
    runtime.block_on(async {
        let flow = compile::compile_with(&plan, &store).unwrap();
        let mut receiver = queue(&flow, "orders").receiver();
        let delivery = receiver.recv().await.unwrap();
        assert_eq!(delivery.message().payload_str(), Some("kept"));
        delivery.ack();
    });
}

#[test]
fn bad_delays_are_refused_where_they_are_written() {
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: 5",
        "    to: out",
    ]));
    assert_eq!(p.message, "`for` must be a duration such as `30s`, found 5");
    assert_eq!(at(&p), (8, 16));
    assert_eq!(help(&p), "`5` has no unit (`5s`?)");

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: {for: 5s, until: .at}",
        "    to: out",
    ]));
    assert!(
        p.message
            .ends_with("`for` and `until` contradict each other"),
        "{}",
        p.message
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: {until: '.at', max: 0s}",
        "    to: out",
    ]));
    assert_eq!(p.message, "`max` must be longer than zero");
    assert_eq!(at(&p), (8, 36));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: {until: '.at | nope'}",
        "    to: out",
    ]));
    assert!(p.message.starts_with("invalid jq:"), "{}", p.message);
    assert_eq!(at(&p), (8, 31), "at `nope`");

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: {for: 5s, max: 1h}",
        "    to: out",
    ]));
    assert_eq!(
        p.message,
        "`max` caps an `until` time, and this delay waits a fixed time"
    );
    assert_eq!(at(&p), (8, 31));
}

// ---- throttle ------------------------------------------------------------------------------

/// When each of `n` messages handed to the route at once reached `big`, from the start.
async fn arrivals(flow: &Flow, n: usize) -> Vec<Duration> {
    let started = Instant::now();
    let route = &flow.routes()[0];
    let mut handling = Vec::new();
    for i in 0..n {
        let route = route.clone();
        handling.push(tokio::spawn(async move {
            route.handle(Message::new(i.to_string())).await.unwrap();
            started.elapsed()
        }));
    }
    let mut out = Vec::new();
    for h in handling {
        out.push(h.await.unwrap());
    }
    out
}

#[test]
fn a_throttle_spaces_messages_by_its_rate_for_every_caller() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - throttle: 10/s
    to: big
",
    );
    paused().block_on(async {
        let ms = Duration::from_millis;
        // Five callers at once share the one bucket: one every 100 ms, none dropped.
        let times = arrivals(&flow, 5).await;
        assert_eq!(times, [ms(0), ms(100), ms(200), ms(300), ms(400)]);
        assert_eq!(drain(&flow, "big").await, ["0", "1", "2", "3", "4"]);
        // After a quiet time the next goes at once.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(arrivals(&flow, 1).await, [ms(0)]);
    });
}

#[test]
fn a_throttle_burst_goes_at_once_then_the_rate_holds() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - throttle: {rate: 2/s, burst: 3}
    to: big
",
    );
    paused().block_on(async {
        let ms = Duration::from_millis;
        let times = arrivals(&flow, 5).await;
        assert_eq!(times, [ms(0), ms(0), ms(0), ms(500), ms(1000)]);
    });
}

#[test]
fn a_throttle_per_key_gives_each_key_its_rate() {
    let flow = flow(
        "
routes:
  - from: orders
    steps:
      - throttle: {rate: 1/s, key: '.tenant'}
    to: big
",
    );
    paused().block_on(async {
        let started = Instant::now();
        let route = &flow.routes()[0];
        let mut handling = Vec::new();
        for tenant in ["a", "b", "a", "b", "a"] {
            let route = route.clone();
            handling.push(tokio::spawn(async move {
                let payload = format!(r#"{{"tenant": "{tenant}"}}"#);
                route.handle(Message::new(payload)).await.unwrap();
                started.elapsed().as_secs()
            }));
        }
        let mut secs = Vec::new();
        for h in handling {
            secs.push(h.await.unwrap());
        }
        assert_eq!(secs, [0, 0, 1, 1, 2]);
        // A key that can not be read: invalid, not throttled.
        route.handle(Message::new("[1")).await.unwrap();
        let dead = dead_letters(&flow).await;
        assert_eq!(dead.len(), 1);
        assert!(
            dead[0]
                .1
                .starts_with("throttle key `.tenant`: payload is not JSON"),
            "{}",
            dead[0].1
        );
    });
}

#[test]
fn bad_throttles_are_refused_where_they_are_written() {
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - throttle: 100",
        "    to: out",
    ]));
    assert_eq!(p.message, "invalid `rate`: `100` is not a rate");
    assert_eq!(at(&p), (8, 19));
    assert!(help(&p).contains("`100/s`"), "{}", help(&p));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - throttle: {rate: 5/d, burst: 2}",
        "    to: out",
    ]));
    assert_eq!(p.message, "invalid `rate`: `5/d`: `d`: unknown unit `d`");
    assert_eq!(at(&p), (8, 26));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - throttle: {rate: 5/s, burst: 0}",
        "    to: out",
    ]));
    assert_eq!(
        p.message,
        "`burst` must be a whole number of at least 1, found 0"
    );
    assert_eq!(at(&p), (8, 38));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - throttle: {rate: 5/s, bust: 2}",
        "    to: out",
    ]));
    assert!(help(&p).contains("`burst`"), "{}", help(&p));
}

// ---- load-balance --------------------------------------------------------------------------

#[test]
fn round_robin_sends_each_message_to_the_next_target() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: [big, small, other]
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        for i in 0..7 {
            route.handle(Message::new(i.to_string())).await.unwrap();
        }
        assert_eq!(drain(&flow, "big").await, ["0", "3", "6"]);
        assert_eq!(drain(&flow, "small").await, ["1", "4"]);
        assert_eq!(drain(&flow, "other").await, ["2", "5"]);
        assert_eq!(route.stats().passed, 7);
    });
}

#[test]
fn failover_sends_to_the_first_open_target_and_dead_letters_when_none_is() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        route.handle(Message::new("1")).await.unwrap();
        assert_eq!(drain(&flow, "big").await, ["1"]);
        queue(&flow, "big").delete().await;
        route.handle(Message::new("2")).await.unwrap();
        route.handle(Message::new("3")).await.unwrap();
        assert_eq!(drain(&flow, "small").await, ["2", "3"]);
        queue(&flow, "small").delete().await;
        route.handle(Message::new("4")).await.unwrap();
        let dead = dead_letters(&flow).await;
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].0, DeathReason::ChannelDeleted);
        assert_eq!(dead[0].1, "channel `small` is closed");
    });
}

#[test]
fn round_robin_passes_over_a_deleted_target_evenly() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small, other], strategy: round-robin}
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        queue(&flow, "small").delete().await;
        for i in 0..6 {
            route.handle(Message::new(i.to_string())).await.unwrap();
        }
        assert_eq!(drain(&flow, "big").await.len(), 3);
        assert_eq!(drain(&flow, "other").await.len(), 3);
    });
}

#[test]
fn the_dry_run_follows_the_pick() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    let report = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": 1}"#).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["big", "orders"]);
}

#[test]
fn the_builder_makes_the_load_balancer_a_flow_file_makes() {
    use eip_core::router::Strategy;
    use eip_dsl::builder::{FlowBuilder, channel, route};
    use eip_dsl::plan::{ActionPlan, TargetRef};

    let file = plan(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    let code = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("big", channel::point_to_point())
        .channel("small", channel::point_to_point())
        .route(route::from("orders").load_balance(["big", "small"], Strategy::Failover))
        .plan(".")
        .unwrap();
    for plan in [&file, &code] {
        let ActionPlan::LoadBalance { targets, strategy } = &plan.routes[0].action else {
            panic!("not a load balancer: {:?}", plan.routes[0].action);
        };
        assert_eq!(
            targets,
            &[
                TargetRef::Channel("big".into()),
                TargetRef::Channel("small".into())
            ]
        );
        assert_eq!(*strategy, Strategy::Failover);
    }
    let drawn = eip_dsl::graph::mermaid(&file);
    assert!(
        drawn.contains("failover 1") && drawn.contains("failover 2"),
        "{drawn}"
    );
}

#[test]
fn bad_load_balancers_are_refused_where_they_are_written() {
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: {to: [out, news], strategy: fail-over}",
    ]));
    assert_eq!(p.message, "`strategy` can not be `fail-over`");
    assert_eq!(at(&p), (7, 47));
    assert!(help(&p).contains("`failover`"), "{}", help(&p));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: [out, 'orders.{$.region}']",
    ]));
    assert!(
        p.message
            .starts_with("`orders.{$.region}` is a template, and a load balancer"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (7, 26));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: [out, in]",
    ]));
    assert_eq!(
        p.message,
        "the route sends to `in`, the channel it consumes"
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    to: out",
        "    load-balance: [out, news]",
    ]));
    assert_eq!(
        p.message,
        "route `route-1` has both `to` and `load-balance`: a route sends by exactly one of them"
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: {strategy: failover}",
    ]));
    assert!(p.message.ends_with("has no `to`"), "{}", p.message);
}

// ---- routing-slip --------------------------------------------------------------------------

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

#[test]
fn a_delay_max_of_the_wrong_type_is_reported_once() {
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    steps:",
        "      - delay: {until: .at, max: {h: 1}}",
        "    to: out",
    ]));
    assert_eq!(
        p.message,
        "`max` must be a duration such as `30s`, found a mapping"
    );
}
