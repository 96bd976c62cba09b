//! The Throttler from Rust alone: `Throttle` and `ThrottleLayer` in front of a service that notes
//! when each message reached it, and both layers on one `tower::ServiceBuilder`. Times are
//! measured on tokio's paused clock, which moves only when every task waits.

use std::time::Duration;

mod support {
    pub mod arrivals;
}

use eip_core::Message;
use eip_steps::aggregate::Key;
use eip_steps::delay::{DelayLayer, Wait};
use eip_steps::error::StepError;
use eip_steps::throttle::{Rate, Throttle, ThrottleConfig, ThrottleLayer};
use support::arrivals::{Arrivals, noting};
use tokio::time::Instant;
use tower::{Layer, ServiceBuilder, ServiceExt};

fn per_second(count: u64) -> Rate {
    Rate::new(count, Duration::from_secs(1)).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Calls `service` with each payload at once, each call in a task of its own, started in order;
/// the times of arrival, in the order the inner service saw them.
async fn all_at_once<S>(
    service: S,
    payloads: &[&str],
    arrivals: &Arrivals,
) -> Vec<(String, Duration)>
where
    S: tower::Service<Message> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: std::fmt::Debug + Send,
{
    let calls: Vec<_> = payloads
        .iter()
        .map(|p| tokio::spawn(service.clone().oneshot(Message::new(p.to_string()))))
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    arrivals.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_throttle_spaces_messages_by_its_rate_in_the_order_they_came() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Throttle::new(
        noting(start, arrivals.clone()),
        ThrottleConfig::new(per_second(10)),
    );
    let got = all_at_once(step, &["a", "b", "c", "d"], &arrivals).await;
    let want: Vec<(String, Duration)> = [("a", 0), ("b", 100), ("c", 200), ("d", 300)]
        .into_iter()
        .map(|(p, t)| (p.to_owned(), ms(t)))
        .collect();
    assert_eq!(got, want);
}

#[tokio::test(start_paused = true)]
async fn every_throttle_of_one_layer_shares_its_bucket() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let layer = ThrottleLayer::new(ThrottleConfig::new(per_second(10)));
    let one = layer.layer(noting(start, arrivals.clone()));
    let other = layer.layer(noting(start, arrivals.clone()));
    for _ in 0..2 {
        one.clone().oneshot(Message::new("one")).await.unwrap();
        other.clone().oneshot(Message::new("other")).await.unwrap();
    }
    let times: Vec<Duration> = arrivals.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert_eq!(times, [ms(0), ms(100), ms(200), ms(300)]);
}

#[tokio::test(start_paused = true)]
async fn a_burst_goes_at_once_then_the_rate_holds_and_a_quiet_time_fills_the_bucket() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Throttle::new(
        noting(start, arrivals.clone()),
        ThrottleConfig::new(per_second(10)).burst(3),
    );
    let got = all_at_once(step.clone(), &["1", "2", "3", "4", "5"], &arrivals).await;
    let times: Vec<Duration> = got.iter().map(|(_, t)| *t).collect();
    assert_eq!(times, [ms(0), ms(0), ms(0), ms(100), ms(200)]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let quiet = Instant::now();
    for _ in 0..3 {
        step.clone().oneshot(Message::new("again")).await.unwrap();
    }
    assert_eq!(quiet.elapsed(), Duration::ZERO, "the bucket was full again");
}

#[tokio::test(start_paused = true)]
async fn each_key_has_its_own_bucket_and_a_message_without_one_comes_back_taking_no_turn() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    let step = Throttle::new(
        noting(start, arrivals.clone()),
        ThrottleConfig::new(per_second(1)).key(Key::header("tenant")),
    );
    let from = |tenant: &str| {
        Message::builder(tenant.to_owned())
            .header("tenant", tenant)
            .build()
    };
    for tenant in ["a", "b", "a"] {
        step.clone().oneshot(from(tenant)).await.unwrap();
    }
    let nameless = Message::new("nobody");
    let err = step.clone().oneshot(nameless.clone()).await.unwrap_err();
    assert!(err.is_permanent());
    assert_eq!(err.to_string(), "throttle key header `tenant` is missing");
    assert_eq!(err.into_message(), Some(nameless));
    assert_eq!(
        step.key_of(&from("b")).unwrap().as_deref(),
        Some("b"),
        "the dry run's question takes no turn"
    );
    step.oneshot(from("b")).await.unwrap();
    let got = arrivals.lock().unwrap().clone();
    let want: Vec<(String, Duration)> = [("a", 0), ("b", 0), ("a", 1000), ("b", 1000)]
        .into_iter()
        .map(|(p, t)| (p.to_owned(), ms(t)))
        .collect();
    assert_eq!(got, want, "b's second turn is a second after its first");
}

#[tokio::test(start_paused = true)]
async fn a_throttle_and_a_delay_compose_on_a_service_builder() {
    let start = Instant::now();
    let arrivals = Arrivals::default();
    // The throttle first: turns 100 ms apart, then each waits a further second.
    let step = ServiceBuilder::new()
        .layer(ThrottleLayer::new(ThrottleConfig::new(per_second(10))))
        .layer(DelayLayer::new(Wait::fixed(Duration::from_secs(1))))
        .service(noting(start, arrivals.clone()));
    let got = all_at_once(step, &["a", "b", "c"], &arrivals).await;
    let times: Vec<Duration> = got.iter().map(|(_, t)| *t).collect();
    assert_eq!(times, [ms(1000), ms(1100), ms(1200)]);
}

#[tokio::test(start_paused = true)]
async fn the_inner_service_s_error_is_its_own() {
    let step = Throttle::new(
        noting(Instant::now(), Arrivals::default()),
        ThrottleConfig::new(per_second(1)),
    );
    let err = step.oneshot(Message::new("fail")).await.unwrap_err();
    assert!(!err.is_permanent(), "the inner service's to judge");
    assert!(
        matches!(&err, StepError::Inner(e) if e == "the inner service is down"),
        "{err:?}"
    );
}
