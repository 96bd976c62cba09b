//! The Delayer (`delay`) in a route: a fixed wait, a wait until the time a message names, what
//! can not be read, the dry run, a stop while a message waits, and what `eip validate` refuses.
//! Times are measured on tokio's paused clock, which moves only when every task waits: a wait is
//! as long as the step makes it, whatever the machine's load.

mod support {
    pub mod paused_flow;
    pub mod problems;
    pub mod queues;
    pub mod scratch;
    pub mod validate;
}

use std::time::{Duration, SystemTime};

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::{self, Flow, InputMessage, StoreOptions};
use support::paused_flow::{dead_letters, drain, flow, paused, plan, queue};
use support::problems::{at, help, only};
use support::queues::with_queues;
use support::scratch::Scratch;
use tokio::time::Instant;

fn depth(flow: &Flow, name: &str) -> usize {
    queue(flow, name).stats().depth
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

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

/// A route whose delay waits until the time `.at` names, at most an hour ahead.
const UNTIL_AT: &str = "
routes:
  - from: orders
    steps:
      - delay: {until: '.at', max: 1h}
    to: big
";

#[test]
fn a_delay_until_waits_for_the_time_the_message_names_and_not_for_one_past() {
    let flow = flow(UNTIL_AT);
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
    let flow = flow(UNTIL_AT);
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
