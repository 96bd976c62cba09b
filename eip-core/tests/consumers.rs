//! Consumer endpoints driving tower services, redelivery, and tower layers composed with
//! channel senders and consumer services.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::channel::{DeadLetterChannel, PointToPoint, PublishSubscribe, TryRecvError};
use eip_core::endpoint::{Consumer, RedeliveryPolicy};
use eip_core::message::DeathReason;
use eip_core::{Message, Outcome};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

const WAIT: Duration = Duration::from_secs(5);

fn channel_with_dlc(name: &str, policy: RedeliveryPolicy) -> (PointToPoint, DeadLetterChannel) {
    let dead = DeadLetterChannel::new("dead-letters", 100).unwrap();
    let ch = PointToPoint::builder(name)
        .dead_letter_channel(dead.clone())
        .redelivery(policy)
        .build()
        .unwrap();
    (ch, dead)
}

async fn eventually(mut check: impl FnMut() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("condition not met in time");
}

#[tokio::test]
async fn ok_acks_each_message() {
    let (ch, _dead) = channel_with_dlc("in", RedeliveryPolicy::none());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |_m: Message| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Infallible>(())
            }
        }),
    )
    .spawn();
    for i in 0..20 {
        ch.send(Message::new(i.to_string())).await.unwrap();
    }
    eventually(|| ch.stats().acked == 20).await;
    consumer.shutdown().await;
    assert_eq!(seen.load(Ordering::SeqCst), 20);
    assert_eq!(ch.stats().in_flight, 0);
}

#[tokio::test]
async fn failures_are_redelivered_then_dead_lettered_with_the_last_error() {
    let (ch, dead) = channel_with_dlc(
        "flaky",
        RedeliveryPolicy::fixed(3, Duration::from_millis(1)),
    );
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |m: Message| {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                assert_eq!(m.redelivery_count().unwrap() as usize, n - 1);
                Err::<(), _>(format!("attempt {n} failed"))
            }
        }),
    )
    .spawn();
    ch.send(Message::new("doomed")).await.unwrap();
    let mut dl = dead.receiver();
    let d = tokio::time::timeout(WAIT, dl.recv())
        .await
        .unwrap()
        .unwrap();
    consumer.shutdown().await;
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        3,
        "max_attempts counts every delivery"
    );
    let death = d.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::MaxRedeliveries);
    assert_eq!(death.error.as_deref(), Some("attempt 3 failed"));
    assert_eq!(ch.stats().in_flight, 0);
}

#[tokio::test]
async fn a_transient_failure_succeeds_on_redelivery() {
    let (ch, dead) = channel_with_dlc(
        "transient",
        RedeliveryPolicy::fixed(5, Duration::from_millis(1)),
    );
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |_m: Message| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move { if n < 2 { Err("not yet") } else { Ok(()) } }
        }),
    )
    .spawn();
    ch.send(Message::new("x")).await.unwrap();
    eventually(|| ch.stats().acked == 1).await;
    consumer.shutdown().await;
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(dead.stats().depth, 0);
}

#[tokio::test]
async fn a_permanent_error_is_dead_lettered_at_once_without_redelivery() {
    let (ch, dead) = channel_with_dlc(
        "permanent",
        RedeliveryPolicy::fixed(5, Duration::from_millis(1)),
    );
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |_m: Message| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>("400 Bad Request: no such field") }
        }),
    )
    .permanent_errors(|e: &&str| e.starts_with("4"))
    .spawn();
    ch.send(Message::new("bad")).await.unwrap();
    let d = tokio::time::timeout(WAIT, dead.receiver().recv())
        .await
        .unwrap()
        .unwrap();
    consumer.shutdown().await;
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "never retried");
    let death = d.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Rejected);
    assert_eq!(
        death.error.as_deref(),
        Some("400 Bad Request: no such field")
    );
}

#[tokio::test]
async fn concurrency_bounds_messages_in_processing() {
    let (ch, _dead) = channel_with_dlc("parallel", RedeliveryPolicy::none());
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (n, p) = (now.clone(), peak.clone());
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |_m: Message| {
            let (n, p) = (n.clone(), p.clone());
            async move {
                let c = n.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(c, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                n.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, Infallible>(())
            }
        }),
    )
    .concurrency(4)
    .spawn();
    for i in 0..40 {
        ch.send(Message::new(i.to_string())).await.unwrap();
    }
    eventually(|| ch.stats().acked == 40).await;
    consumer.shutdown().await;
    assert_eq!(
        peak.load(Ordering::SeqCst),
        4,
        "four at a time, and no more"
    );
}

#[tokio::test]
async fn shutdown_drains_messages_in_processing() {
    let (ch, _dead) = channel_with_dlc("drain", RedeliveryPolicy::none());
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let consumer = Consumer::new(
        ch.receiver(),
        service_fn(move |_m: Message| {
            let d = d.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                d.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Infallible>(())
            }
        }),
    )
    .concurrency(3)
    .spawn();
    for i in 0..10 {
        ch.send(Message::new(i.to_string())).await.unwrap();
    }
    eventually(|| ch.stats().in_flight == 3).await;
    consumer.shutdown().await;
    assert_eq!(
        done.load(Ordering::SeqCst),
        3,
        "the three in processing finished"
    );
    let stats = ch.stats();
    assert_eq!((stats.acked, stats.in_flight, stats.depth), (3, 0, 7));
}

#[tokio::test]
async fn a_consumer_of_a_subscription_stops_when_its_channel_is_deleted() {
    let ch = PublishSubscribe::new("events", 10).unwrap();
    let consumer = Consumer::new(
        ch.subscribe(),
        service_fn(|_m: Message| async { Ok::<_, Infallible>(()) }),
    )
    .spawn();
    ch.publish(Message::new("e")).await.unwrap();
    eventually(|| ch.stats().acked == 1).await;
    ch.delete().await;
    eventually(|| consumer.is_finished()).await;
}

// ---- tower layers composed with channel senders ----

#[tokio::test]
async fn channel_sender_is_a_tower_service_with_backpressure() {
    let ch = PointToPoint::new("svc", 1).unwrap();
    let mut sender = ch.sender();
    sender.ready().await.unwrap();
    assert_eq!(
        sender.call(Message::new("a")).await.unwrap(),
        Outcome::Accepted
    );
    let pending = tokio::time::timeout(Duration::from_millis(50), sender.ready()).await;
    assert!(
        pending.is_err(),
        "poll_ready is pending while the channel is full"
    );
    let mut rx = ch.receiver();
    let ready = tokio::spawn(async move {
        sender.ready().await.unwrap();
        sender.call(Message::new("b")).await.unwrap()
    });
    rx.recv().await.unwrap().ack();
    assert_eq!(
        tokio::time::timeout(WAIT, ready).await.unwrap().unwrap(),
        Outcome::Accepted
    );
}

#[tokio::test]
async fn timeout_layer_bounds_a_blocked_send() {
    let ch = PointToPoint::new("t", 1).unwrap();
    let mut svc = ServiceBuilder::new()
        .timeout(Duration::from_millis(30))
        .service(ch.sender());
    svc.ready().await.unwrap();
    // Another producer takes the last slot between readiness and the call (readiness is a
    // hint): the call's future then waits for room, and the timeout ends the wait.
    ch.send(Message::new("fill")).await.unwrap();
    let err = svc.call(Message::new("late")).await;
    assert!(err.is_err(), "the full channel makes the send time out");
    assert_eq!(ch.stats().depth, 1, "the timed-out message was not stored");
}

#[tokio::test(start_paused = true)]
async fn rate_limit_layer_paces_sends() {
    let ch = PointToPoint::new("r", 100).unwrap();
    let mut svc = ServiceBuilder::new()
        .rate_limit(2, Duration::from_secs(1))
        .service(ch.sender());
    let start = tokio::time::Instant::now();
    for i in 0..5 {
        svc.ready()
            .await
            .unwrap()
            .call(Message::new(i.to_string()))
            .await
            .unwrap();
    }
    assert_eq!(ch.stats().depth, 5);
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "five sends at two a second take two periods"
    );
}

#[tokio::test]
async fn concurrency_limit_layer_composes_with_senders_and_consumers() {
    let inbound = PointToPoint::new("in", 100).unwrap();
    let outbound = PointToPoint::new("out", 100).unwrap();
    // A consumer whose service is a channel sender behind a concurrency limit: a bridge.
    let svc = ServiceBuilder::new()
        .concurrency_limit(2)
        .service(outbound.sender());
    let consumer = Consumer::new(inbound.receiver(), svc)
        .concurrency(8)
        .spawn();
    for i in 0..30 {
        inbound.send(Message::new(i.to_string())).await.unwrap();
    }
    eventually(|| inbound.stats().acked == 30).await;
    consumer.shutdown().await;
    assert_eq!(outbound.stats().depth, 30);
}

#[derive(Clone)]
struct RetryTwice(usize);

impl<E> tower::retry::Policy<Message, (), E> for RetryTwice {
    type Future = std::future::Ready<()>;
    fn retry(&mut self, _req: &mut Message, result: &mut Result<(), E>) -> Option<Self::Future> {
        if result.is_err() && self.0 > 0 {
            self.0 -= 1;
            Some(std::future::ready(()))
        } else {
            None
        }
    }
    fn clone_request(&mut self, req: &Message) -> Option<Message> {
        Some(req.clone())
    }
}

#[tokio::test]
async fn retry_layer_composes_with_consumer_services() {
    let (ch, dead) = channel_with_dlc("retried", RedeliveryPolicy::none());
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let flaky = service_fn(move |_m: Message| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move { if n % 3 < 2 { Err("flaky") } else { Ok(()) } }
    });
    let svc = ServiceBuilder::new().retry(RetryTwice(2)).service(flaky);
    let consumer = Consumer::new(ch.receiver(), svc).spawn();
    ch.send(Message::new("x")).await.unwrap();
    eventually(|| ch.stats().acked == 1).await;
    consumer.shutdown().await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "the retry layer retried in place"
    );
    assert_eq!(dead.receiver().try_recv().unwrap_err(), TryRecvError::Empty);
}

#[tokio::test]
async fn a_paused_consumer_takes_nothing_new_until_resumed() {
    use eip_core::endpoint::PauseSwitch;
    let (ch, _dead) = channel_with_dlc("paused", RedeliveryPolicy::none());
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    let service = service_fn(move |_: Message| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(()) }
    });
    let switch = PauseSwitch::new();
    let handle = Consumer::new(ch.receiver(), service)
        .pause_gate(switch.gate())
        .spawn();
    ch.send(Message::new("before")).await.unwrap();
    eventually(|| seen.load(Ordering::SeqCst) == 1).await;

    assert!(switch.pause(), "it was running");
    assert!(!switch.pause(), "pausing twice changes nothing");
    assert!(switch.is_paused());
    for _ in 0..3 {
        ch.send(Message::new("while paused")).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.load(Ordering::SeqCst), 1, "nothing taken while paused");
    assert_eq!(ch.stats().depth, 3, "the messages wait on the channel");

    assert!(switch.resume());
    eventually(|| seen.load(Ordering::SeqCst) == 4).await;
    assert_eq!(ch.stats().depth, 0);

    switch.pause();
    let stopped = tokio::time::timeout(WAIT, handle.shutdown())
        .await
        .expect("a paused consumer still stops");
    assert!(stopped.is_clean());
}
