//! The Throttler (`throttle`) in a route: messages spaced by the rate for every caller, a burst,
//! a bucket per key, and what `eip validate` refuses. Times are measured on tokio's paused clock,
//! which moves only when every task waits.

mod support {
    pub mod paused_flow;
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use std::time::Duration;

use eip_core::Message;
use eip_dsl::compile::Flow;
use support::paused_flow::{dead_letters, drain, flow, paused};
use support::problems::{at, help, only};
use support::queues::with_queues;
use tokio::time::Instant;

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
