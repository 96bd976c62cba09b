//! Broker-backed channels against the real brokers (RabbitMQ on 127.0.0.1:5672, NATS
//! JetStream on 127.0.0.1:4222): channels built in one test stand for processes, each with
//! its own connections. Competing consumers on a point-to-point channel, a subscription per
//! subscriber on a publish-subscribe one, headers and ids across, and what one "process" did
//! not acknowledge delivered to another, and flows that wait on their own stores. The channel's
//! own rules, joins across processes and cut connections have files of their own
//! (`store_rules.rs`, `store_joins.rs`, `store_cuts.rs`). A broker that is down fails each test
//! naming it; `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/stores.rs"]
#[allow(dead_code)] // each test file uses some of them
mod stores;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use eip_adapters::store::{JetStream, RabbitMq};
use eip_core::channel::{Channel, PointToPoint, PublishSubscribe, all_ready};
use eip_core::message::{HeaderValue, Message, MessageId};
use eip_core::store::Backend;

use stores::*;

/// Two "processes" send to one point-to-point channel and compete for its messages.
async fn competing(backend: impl Fn() -> Arc<dyn Backend>, label: &str) {
    let a = PointToPoint::builder("orders")
        .capacity(64)
        .store(backend())
        .build()
        .expect("process a's channel");
    let b = PointToPoint::builder("orders")
        .capacity(64)
        .store(backend())
        .build()
        .expect("process b's channel");
    assert!(a.is_durable());
    // Both consume before anything is sent (a store reads once a receiver asks), so that the
    // first to connect does not take everything while the other is still connecting.
    let receiving = tokio::spawn(drain(
        vec![a.receiver(), b.receiver()],
        300,
        Duration::from_secs(30),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut sent = Vec::new();
    for i in 0..300 {
        let channel = if i % 3 == 0 { &b } else { &a };
        let msg = Message::new(format!("order {i}"));
        sent.push(msg.id());
        channel
            .send(msg)
            .await
            .expect("a send confirmed by the broker");
    }
    let got = receiving.await.expect("the receiving task");
    let counts = counts(&got);
    let lost = sent.iter().filter(|id| !counts.contains_key(id)).count();
    let twice = counts.values().filter(|n| **n > 1).count();
    println!(
        "{label}: {} sent, process a took {}, process b took {}, {lost} lost, {twice} twice",
        sent.len(),
        got[0].len(),
        got[1].len()
    );
    assert_eq!(lost, 0, "{label}: every message is received");
    assert_eq!(twice, 0, "{label}: each once (no fault here)");
    assert!(
        !got[0].is_empty() && !got[1].is_empty(),
        "{label}: both processes took messages ({} and {})",
        got[0].len(),
        got[1].len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_processes_compete_for_a_point_to_point_channel() {
    if !brokers("rabbitmq point-to-point").await {
        return;
    }
    let queue = unique("orders");
    competing(
        || Arc::new(RabbitMq::queue(RABBITMQ, queue.clone())),
        "rabbitmq point-to-point",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_processes_compete_for_a_point_to_point_channel() {
    if !brokers("jetstream point-to-point").await {
        return;
    }
    let stream = unique("ORDERS");
    competing(
        || Arc::new(JetStream::queue(NATS, stream.clone()).expect("a stream name")),
        "jetstream point-to-point",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

/// Two "processes" publish to one publish-subscribe channel: `audit` (in process a) gets
/// every message, and `billing` (in both processes, competing) gets every message once.
async fn fanned_out(backend: impl Fn() -> Arc<dyn Backend>, label: &str) {
    let build = || {
        PublishSubscribe::builder("readings")
            .capacity(64)
            .store(backend())
            .build()
            .expect("a process's channel")
    };
    let (a, b) = (build(), build());
    let audit = a.durable_subscribe("audit");
    let billing_a = a.durable_subscribe("billing");
    let billing_b = b.durable_subscribe("billing");
    // The subscriptions are made on the broker in the background.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut sent = Vec::new();
    for i in 0..200 {
        let channel = if i % 2 == 0 { &a } else { &b };
        let msg = Message::builder(format!("reading {i}"))
            .correlation_id(format!("c-{i}"))
            .hop_budget(3)
            .header("n", i64::from(i))
            .build();
        sent.push(msg.clone());
        channel.publish(msg).await.expect("a publish confirmed");
    }
    let audit_got = drain(vec![audit], sent.len(), Duration::from_secs(30)).await;
    let billing_got = drain(
        vec![billing_a, billing_b],
        sent.len(),
        Duration::from_secs(30),
    )
    .await;
    let (audit_counts, billing_counts) = (counts(&audit_got), counts(&billing_got));
    let lost = |counts: &HashMap<MessageId, usize>| {
        sent.iter()
            .filter(|m| !counts.contains_key(&m.id()))
            .count()
    };
    println!(
        "{label}: {} published; audit {} ({} lost); billing {} in a + {} in b ({} lost)",
        sent.len(),
        audit_got[0].len(),
        lost(&audit_counts),
        billing_got[0].len(),
        billing_got[1].len(),
        lost(&billing_counts)
    );
    assert_eq!(lost(&audit_counts), 0, "{label}: audit gets every message");
    assert_eq!(
        lost(&billing_counts),
        0,
        "{label}: billing gets every message"
    );
    assert!(
        audit_counts.values().all(|n| *n == 1),
        "{label}: audit, each once"
    );
    assert!(
        billing_counts.values().all(|n| *n == 1),
        "{label}: billing, each once"
    );
    // Headers and ids cross as they were.
    let by_id: HashMap<MessageId, &Message> = sent.iter().map(|m| (m.id(), m)).collect();
    for msg in audit_got.iter().flatten() {
        let original = by_id[&msg.id()];
        let mut want: Vec<(&str, &HeaderValue)> = original.headers().iter().collect();
        let mut have: Vec<(&str, &HeaderValue)> = msg.headers().iter().collect();
        want.sort_by(|x, y| x.0.cmp(y.0));
        have.sort_by(|x, y| x.0.cmp(y.0));
        assert_eq!(have, want, "{label}: the headers of {}", msg.id());
        assert_eq!(msg.payload(), original.payload());
    }
    assert_eq!(
        a.stats().accepted + b.stats().accepted,
        200,
        "{label}: each publish counted once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_subscriptions_get_every_message_across_processes() {
    if !brokers("rabbitmq publish-subscribe").await {
        return;
    }
    let exchange = unique("readings");
    fanned_out(
        || Arc::new(RabbitMq::exchange(RABBITMQ, exchange.clone())),
        "rabbitmq publish-subscribe",
    )
    .await;
    let queues = [format!("{exchange}.audit"), format!("{exchange}.billing")];
    clean_up(&queues, Some(&exchange), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_subscriptions_get_every_message_across_processes() {
    if !brokers("jetstream publish-subscribe").await {
        return;
    }
    let stream = unique("READINGS");
    fanned_out(
        || Arc::new(JetStream::fan_out(NATS, stream.clone()).expect("a stream name")),
        "jetstream publish-subscribe",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

/// Process a takes messages and dies before acknowledging them: process b gets them,
/// marked redelivered.
async fn taken_over(backend: impl Fn() -> Arc<dyn Backend>, label: &str) {
    let build = || {
        PointToPoint::builder("jobs")
            .capacity(16)
            .store(backend())
            .build()
            .expect("a process's channel")
    };
    let a = build();
    let mut sent = Vec::new();
    for i in 0..40 {
        let msg = Message::new(format!("job {i}"));
        sent.push(msg.id());
        a.send(msg).await.expect("a send confirmed");
    }
    let mut receiver = a.receiver();
    let mut held = Vec::new();
    for _ in 0..5 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        held.push(delivery);
    }
    // Process a stops with 5 messages in its consumer's hands (never acknowledged) and more
    // in its window: its connection closes, and the broker has them all.
    drop(held);
    drop(receiver);
    drop(a);
    let b = build();
    let got = drain(vec![b.receiver()], sent.len(), Duration::from_secs(30)).await;
    let counts = counts(&got);
    let lost = sent.iter().filter(|id| !counts.contains_key(id)).count();
    let redelivered = got[0]
        .iter()
        .filter(|m| m.redelivery_count().is_ok_and(|n| n > 0))
        .count();
    println!(
        "{label}: 40 sent, process a died holding some; process b got {} ({redelivered} marked redelivered), {lost} lost",
        got[0].len()
    );
    assert_eq!(lost, 0, "{label}: nothing lost when a process dies");
    assert!(
        redelivered >= 5,
        "{label}: what a held comes marked redelivered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_what_a_dead_process_held_goes_to_another() {
    if !brokers("rabbitmq take over").await {
        return;
    }
    let queue = unique("jobs");
    taken_over(
        || Arc::new(RabbitMq::queue(RABBITMQ, queue.clone())),
        "rabbitmq take over",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_what_a_dead_process_held_goes_to_another() {
    if !brokers("jetstream take over").await {
        return;
    }
    let stream = unique("JOBS");
    taken_over(
        || {
            Arc::new(
                JetStream::queue(NATS, stream.clone())
                    .expect("a stream name")
                    .ack_wait(Duration::from_secs(2)),
            )
        },
        "jetstream take over",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_store_is_refused_for_a_point_to_point_channel() {
    // No broker is reached: the refusal comes before anything connects.
    let refused = PointToPoint::builder("orders")
        .store(Arc::new(RabbitMq::exchange(RABBITMQ, "orders")))
        .build()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(refused.contains("publish-subscribe"), "{refused}");
}

/// Where no broker listens: a store there never connects.
const NOWHERE_AMQP: &str = "amqp://guest:guest@127.0.0.1:1/%2f";
const NOWHERE_NATS: &str = "nats://127.0.0.1:1";

/// Two flows in one process, one whose broker is away: each waits on its own stores, and
/// the one that can not connect names its store.
async fn flows_wait_on_their_own(reachable: Arc<dyn Backend>, away: Arc<dyn Backend>, label: &str) {
    let here = PublishSubscribe::builder("prices")
        .store(reachable)
        .build()
        .expect("a channel on the broker");
    let there = PublishSubscribe::builder("quotes")
        .store(away)
        .build()
        .expect("a channel on a broker that is away");
    let _there_audit = there.durable_subscribe("audit");
    let _here_audit = here.durable_subscribe("audit");
    let started = std::time::Instant::now();
    let flow_a = [Channel::from(here.clone())];
    all_ready(&flow_a, Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("{label}: the reachable flow is ready: {e}"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{label}: the reachable flow waited {:?}, as if for the other flow's store",
        started.elapsed()
    );
    let flow_b = [Channel::from(there.clone())];
    let late = all_ready(&flow_b, Duration::from_millis(500))
        .await
        .expect_err("the store that can not connect is reported");
    assert_eq!(late.waiting.len(), 1, "{label}: {late}");
    let named = &late.waiting[0];
    assert!(
        named.contains("channel `quotes` subscription `audit`") && named.contains("127.0.0.1:1"),
        "{label}: the late store is named with its channel and broker: {named}"
    );
    assert!(
        !named.contains("guest:guest"),
        "{label}: no password in {named}"
    );
    let ready = here.ready(Duration::from_secs(1)).await;
    assert_eq!(ready, Ok(()), "{label}: ready stays ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_flows_wait_only_on_their_own_stores() {
    if !brokers("rabbitmq_flows_wait_only_on_their_own_stores").await {
        return;
    }
    let exchange = unique("own");
    flows_wait_on_their_own(
        Arc::new(RabbitMq::exchange(RABBITMQ, &exchange)),
        Arc::new(RabbitMq::exchange(NOWHERE_AMQP, &exchange)),
        "rabbitmq",
    )
    .await;
    clean_up(&[format!("{exchange}.audit")], Some(&exchange), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_flows_wait_only_on_their_own_stores() {
    if !brokers("jetstream_flows_wait_only_on_their_own_stores").await {
        return;
    }
    let stream = unique("OWN");
    flows_wait_on_their_own(
        Arc::new(JetStream::fan_out(NATS, &stream).expect("a stream name")),
        Arc::new(JetStream::fan_out(NOWHERE_NATS, &stream).expect("a stream name")),
        "jetstream",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}
