//! Broker-backed channels against the real brokers (RabbitMQ on 127.0.0.1:5672, NATS
//! JetStream on 127.0.0.1:4222): channels built in one test stand for processes, each with
//! its own connections. Competing consumers on a point-to-point channel, a subscription per
//! subscriber on a publish-subscribe one, headers and ids across, and what one "process" did
//! not acknowledge delivered to another, the channel's own rules (datatype, expiration,
//! redelivery), joins across processes, and connections cut and stalled through a proxy. A
//! broker that is down fails each test naming it;
//! `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/proxy.rs"]
mod proxy;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use eip_adapters::store::{JetStream, RabbitMq};
use eip_core::channel::{Channel, PointToPoint, PublishSubscribe, Receiver, Subscriber, all_ready};
use eip_core::message::{HeaderValue, Message, MessageId};
use eip_core::store::Backend;

const RABBITMQ: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const NATS: &str = "nats://127.0.0.1:4222";

/// Whether the brokers are to be used: `false` (said on stdout) when `EIP_SKIP_BROKERS=1`.
/// A broker that does not answer fails the test, naming it.
async fn brokers(test: &str) -> bool {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return false;
    }
    for (name, address) in [("RabbitMQ", "127.0.0.1:5672"), ("NATS", "127.0.0.1:4222")] {
        let connected = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(address),
        )
        .await;
        assert!(
            matches!(connected, Ok(Ok(_))),
            "{name} at {address} is needed by this test and does not answer"
        );
    }
    true
}

/// A broker name unique to this run.
fn unique(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("EIP_STORE_{name}_{}_{n}_{nanos}", std::process::id())
}

/// Removes what a test made on the brokers.
async fn clean_up(queues: &[String], exchange: Option<&str>, stream: Option<&str>) {
    use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
    if let Ok(connection) =
        lapin::Connection::connect(RABBITMQ, lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        for queue in queues {
            let _ = channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        if let Some(exchange) = exchange {
            let _ = channel
                .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
                .await;
        }
        let _ = connection.close(200, "done".into()).await;
    }
    if let Some(stream) = stream
        && let Ok(client) = async_nats::connect(NATS).await
    {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(stream)
            .await;
    }
}

/// A point-to-point receiver or a subscriber.
trait Receives: Send + 'static {
    fn receiver(&mut self) -> &mut Receiver;
}

impl Receives for Receiver {
    fn receiver(&mut self) -> &mut Receiver {
        self
    }
}

impl Receives for Subscriber {
    fn receiver(&mut self) -> &mut Receiver {
        self
    }
}

/// Receives on every receiver at once until `n` messages came in all (or `limit` passed),
/// acking each; what each receiver got, by id.
async fn drain<R: Receives>(receivers: Vec<R>, n: usize, limit: Duration) -> Vec<Vec<Message>> {
    let got = Arc::new(AtomicU32::new(0));
    let deadline = tokio::time::Instant::now() + limit;
    let tasks: Vec<_> = receivers
        .into_iter()
        .map(|mut receiver| {
            let got = got.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                while (got.load(Ordering::SeqCst) as usize) < n {
                    let wait =
                        deadline.min(tokio::time::Instant::now() + Duration::from_millis(200));
                    match tokio::time::timeout_at(wait, receiver.receiver().recv()).await {
                        Ok(Some(delivery)) => {
                            mine.push(delivery.message().clone());
                            delivery.ack();
                            got.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(None) => break,
                        Err(_) if tokio::time::Instant::now() >= deadline => break,
                        Err(_) => {}
                    }
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.expect("a receiving task"));
    }
    all
}

/// How often each id came, over every receiver.
fn counts(got: &[Vec<Message>]) -> HashMap<MessageId, usize> {
    let mut counts = HashMap::new();
    for msg in got.iter().flatten() {
        *counts.entry(msg.id()).or_insert(0) += 1;
    }
    counts
}

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

/// A publish-subscribe channel `name` in the JetStream stream `stream`: one process's view.
fn in_stream(name: &str, stream: &str) -> PublishSubscribe {
    PublishSubscribe::builder(name)
        .store(Arc::new(
            JetStream::fan_out(NATS, stream).expect("a stream name"),
        ))
        .build()
        .expect("a channel kept in JetStream")
}

/// What `subscriber` receives within `quiet` of the last message (acking each), by id.
async fn observed(mut subscriber: Subscriber, quiet: Duration) -> HashMap<MessageId, usize> {
    let mut seen = HashMap::new();
    while let Ok(Some(delivery)) = tokio::time::timeout(quiet, subscriber.recv()).await {
        *seen.entry(delivery.message().id()).or_insert(0) += 1;
        delivery.ack();
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_across_processes_keep_hop_counts_and_store_once_per_channel() {
    use eip_core::join::Join;
    if !brokers("joins across processes").await {
        return;
    }
    let streams: Vec<String> = ["L1", "L2", "C1", "C2", "C3"]
        .iter()
        .map(|s| unique(s))
        .collect();
    let [l1, l2, c1, c2, c3] = [0, 1, 2, 3, 4].map(|i| streams[i].as_str());
    // Process a: channel0 in memory, joined into the loop and into the chain.
    let loop_entry = PublishSubscribe::new("loop0", 64).expect("a channel");
    let chain_entry = PublishSubscribe::new("chain0", 64).expect("a channel");
    let a_l1 = in_stream("loop1", l1);
    let a_c1 = in_stream("chain1", c1);
    Join::builder(loop_entry.clone(), a_l1.clone())
        .create()
        .expect("a join into the loop");
    Join::builder(chain_entry.clone(), a_c1.clone())
        .hops(1)
        .create()
        .expect("a join into the chain, hop count 1");
    // Process b: loop1 ⇄ loop2, and chain1 → chain2 → chain3.
    let (b_l1, b_l2) = (in_stream("loop1", l1), in_stream("loop2", l2));
    Join::builder(b_l1.clone(), b_l2.clone())
        .create()
        .expect("loop1 -> loop2");
    Join::builder(b_l2.clone(), b_l1.clone())
        .create()
        .expect("loop2 -> loop1");
    let (b_c1, b_c2, b_c3) = (
        in_stream("chain1", c1),
        in_stream("chain2", c2),
        in_stream("chain3", c3),
    );
    Join::builder(b_c1.clone(), b_c2.clone())
        .create()
        .expect("chain1 -> chain2");
    Join::builder(b_c2.clone(), b_c3.clone())
        .create()
        .expect("chain2 -> chain3");
    // A third process watches what each channel stores.
    let watched = [
        in_stream("loop1", l1),
        in_stream("loop2", l2),
        in_stream("chain1", c1),
        in_stream("chain2", c2),
        in_stream("chain3", c3),
    ];
    let watchers = watched.clone().map(|c| c.durable_subscribe("observer"));
    let watched = watched.map(Channel::from);
    all_ready(&watched, Duration::from_secs(10))
        .await
        .expect("every subscription is made");
    let mut sent = Vec::new();
    for i in 0..20 {
        let msg = Message::new(format!("event {i}"));
        sent.push(msg.id());
        loop_entry
            .publish(msg.clone())
            .await
            .expect("published into the loop");
        chain_entry
            .publish(msg)
            .await
            .expect("published into the chain");
    }
    let mut seen = Vec::new();
    for watcher in watchers {
        seen.push(observed(watcher, Duration::from_secs(3)).await);
    }
    let stored = |i: usize| sent.iter().filter(|id| seen[i].contains_key(id)).count();
    let twice = |i: usize| seen[i].values().filter(|n| **n > 1).count();
    println!(
        "joins across processes: 20 events; loop1 {} ({} twice), loop2 {} ({} twice); chain1 {}, chain2 {}, chain3 {}",
        stored(0),
        twice(0),
        stored(1),
        twice(1),
        stored(2),
        stored(3),
        stored(4)
    );
    assert_eq!(
        (stored(0), stored(1)),
        (20, 20),
        "the loop stores every event"
    );
    assert_eq!(
        (twice(0), twice(1)),
        (0, 0),
        "each once per channel, for all the loop"
    );
    assert_eq!(
        (stored(2), stored(3)),
        (20, 20),
        "hop count 1: one intermediate store, one more"
    );
    assert_eq!(stored(4), 0, "and no further");
    assert!(
        seen.iter().all(|s| s.len() <= 20),
        "no event that was not sent"
    );
    for stream in &streams {
        clean_up(&[], None, Some(stream)).await;
    }
}

/// A channel's own rules hold on a channel kept in a broker: a message that does not fit its
/// datatype goes to the invalid message channel and never to the broker, and one that expires
/// while queued is dead-lettered (reason `expired`) when it comes out, not dropped by the
/// broker.
async fn rules_hold(backend: Arc<dyn Backend>, label: &str) {
    use eip_core::channel::{DeadLetterChannel, InvalidMessageChannel, JsonSchema};
    use eip_core::message::DeathReason;
    let dead = PointToPoint::new("dead", 16).expect("a dead letter channel");
    let invalid = PointToPoint::new("invalid", 16).expect("an invalid message channel");
    let schema = serde_json::json!({"type": "object", "required": ["n"]});
    let channel = PointToPoint::builder("jobs")
        .store(backend)
        .time_to_live(Duration::from_millis(500))
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .datatype(
            JsonSchema::new("job", &schema).expect("a schema"),
            InvalidMessageChannel::from(invalid.clone()),
        )
        .build()
        .expect("a channel kept in a broker");
    let outcome = channel
        .send(Message::new("{\"m\": 1}"))
        .await
        .expect("a send");
    assert!(
        matches!(outcome, eip_core::channel::Outcome::Invalid { .. }),
        "{label}: {outcome:?}"
    );
    let mut expiring = Vec::new();
    for n in 0..3 {
        let msg = Message::new(format!("{{\"n\": {n}}}"));
        expiring.push(msg.id());
        channel.send(msg).await.expect("a send confirmed");
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let fresh = Message::builder("{\"n\": 9}")
        .time_to_live(Duration::from_secs(600))
        .build();
    let fresh_id = fresh.id();
    channel.send(fresh).await.expect("a send confirmed");
    let delivery = tokio::time::timeout(Duration::from_secs(10), channel.receiver().recv())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(
        delivery.message().id(),
        fresh_id,
        "{label}: only the fresh one is delivered"
    );
    delivery.ack();
    let mut died = Vec::new();
    let mut dead_receiver = dead.receiver();
    for _ in 0..3 {
        let delivery = tokio::time::timeout(Duration::from_secs(5), dead_receiver.recv())
            .await
            .expect("a dead letter within 5 s")
            .expect("a dead letter");
        let death = delivery
            .message()
            .death()
            .ok()
            .flatten()
            .expect("a death record");
        assert_eq!(death.reason, DeathReason::Expired, "{label}");
        assert_eq!(death.channel, "jobs");
        died.push(delivery.message().id());
        delivery.ack();
    }
    died.sort();
    expiring.sort();
    assert_eq!(
        died, expiring,
        "{label}: each expired message dead-lettered"
    );
    assert_eq!(invalid.stats().accepted, 1, "{label}: the invalid one");
    println!("{label}: 1 invalid diverted, 3 expired dead-lettered, 1 delivered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_channel_rules_hold() {
    if !brokers("rabbitmq rules").await {
        return;
    }
    let queue = unique("rules");
    rules_hold(
        Arc::new(RabbitMq::queue(RABBITMQ, &queue)),
        "rabbitmq rules",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_channel_rules_hold() {
    if !brokers("jetstream rules").await {
        return;
    }
    let stream = unique("RULES");
    rules_hold(
        Arc::new(JetStream::queue(NATS, &stream).expect("a stream name")),
        "jetstream rules",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

/// The next delivery on `receiver`, within 10 s.
async fn next(receiver: &mut Receiver) -> eip_core::channel::Delivery {
    tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery")
}

/// A nack on a channel kept in a broker redelivers in the process with the count raised; a
/// rejected message goes to the dead letter channel and is acknowledged to the broker (a
/// process that comes later does not get it again).
async fn redelivered_then_rejected(backend: impl Fn() -> Arc<dyn Backend>, label: &str) {
    use eip_core::channel::DeadLetterChannel;
    use eip_core::message::DeathReason;
    let dead = PointToPoint::new("dead", 16).expect("a dead letter channel");
    let a = PointToPoint::builder("jobs")
        .store(backend())
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .build()
        .expect("process a's channel");
    let msg = Message::new("job");
    let id = msg.id();
    a.send(msg).await.expect("a send confirmed");
    let mut receiver = a.receiver();
    let first = next(&mut receiver).await;
    assert_eq!(first.message().redelivery_count().ok(), Some(0), "{label}");
    first.nack();
    let again = next(&mut receiver).await;
    assert_eq!(again.message().id(), id);
    assert_eq!(
        again.message().redelivery_count().ok(),
        Some(1),
        "{label}: counted"
    );
    again.reject("not today").await;
    let dead_letter = tokio::time::timeout(Duration::from_secs(5), dead.receiver().recv())
        .await
        .expect("a dead letter within 5 s")
        .expect("a dead letter");
    let death = dead_letter
        .message()
        .death()
        .ok()
        .flatten()
        .expect("a death record");
    assert_eq!(
        (death.reason, death.error.as_deref()),
        (DeathReason::Rejected, Some("not today"))
    );
    dead_letter.ack();
    // Give the acknowledgement a moment, then let process a go: its connection closes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(receiver);
    drop(a);
    let b = PointToPoint::builder("jobs")
        .store(backend())
        .build()
        .expect("process b's channel");
    let later = tokio::time::timeout(Duration::from_secs(3), b.receiver().recv()).await;
    assert!(
        later.is_err(),
        "{label}: the rejected message was acknowledged to the broker"
    );
    println!(
        "{label}: nacked once, redelivered with count 1, rejected to the dead letters, acknowledged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_redelivery_and_rejection_keep_their_meaning() {
    if !brokers("rabbitmq redelivery").await {
        return;
    }
    let queue = unique("redelivery");
    redelivered_then_rejected(
        || Arc::new(RabbitMq::queue(RABBITMQ, &queue)),
        "rabbitmq redelivery",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_redelivery_and_rejection_keep_their_meaning() {
    if !brokers("jetstream redelivery").await {
        return;
    }
    let stream = unique("REDELIVERY");
    redelivered_then_rejected(
        || {
            Arc::new(
                JetStream::queue(NATS, &stream)
                    .expect("a stream name")
                    .ack_wait(Duration::from_secs(2)),
            )
        },
        "jetstream redelivery",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

/// A sending process and a receiving one, each reaching the broker through a proxy the test
/// controls, while the proxies cut every connection of one side, then of the other, every 250
/// messages (and the receiving side stalls once): sends retry until confirmed, the receiving store reads again after each cut, and
/// nothing confirmed is lost (what a cut caught unacknowledged comes again: duplicates).
async fn cut_mid_stream(
    backend: impl Fn(&str) -> Arc<dyn Backend>,
    scheme: &str,
    port: u16,
    label: &str,
) {
    let upstream: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let (proxy_out, proxy_in) = (
        proxy::Proxy::start(upstream).await,
        proxy::Proxy::start(upstream).await,
    );
    let via = |proxy: &proxy::Proxy| backend(&format!("{scheme}{}", proxy.address()));
    let a = PointToPoint::builder("jobs")
        .store(via(&proxy_out))
        .build()
        .expect("the sending process's channel");
    let b = PointToPoint::builder("jobs")
        .capacity(64)
        .store(via(&proxy_in))
        .build()
        .expect("the receiving process's channel");
    const MESSAGES: usize = 2_000;
    let receiving = tokio::spawn(async move {
        let mut receiver = b.receiver();
        let mut got: HashMap<MessageId, usize> = HashMap::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let distinct = got.len();
            let wait = if distinct >= MESSAGES {
                Duration::from_secs(2)
            } else {
                Duration::from_secs(60)
            };
            match tokio::time::timeout_at(
                deadline.min(tokio::time::Instant::now() + wait),
                receiver.recv(),
            )
            .await
            {
                Ok(Some(delivery)) => {
                    *got.entry(delivery.message().id()).or_insert(0) += 1;
                    delivery.ack();
                }
                _ => break,
            }
        }
        got
    });
    let mut sent = Vec::with_capacity(MESSAGES);
    let mut cuts = 0;
    for i in 0..MESSAGES {
        if i > 0 && i % 250 == 0 {
            if (i / 250) % 2 == 0 {
                proxy_out.cut()
            } else {
                proxy_in.cut()
            }
            cuts += 1;
        }
        if i == MESSAGES / 2 + 100 {
            // The receiving side stalls a moment: bytes stop, connections stay open.
            proxy_in.stall(true);
            tokio::time::sleep(Duration::from_millis(1500)).await;
            proxy_in.stall(false);
        }
        let msg = Message::new(format!("job {i}"));
        sent.push(msg.id());
        a.send(msg)
            .await
            .expect("a send confirmed despite the cuts");
    }
    let got = receiving.await.expect("the receiving task");
    let lost = sent.iter().filter(|id| !got.contains_key(id)).count();
    let duplicates: usize = got.values().map(|n| n - 1).sum();
    println!(
        "{label}: {cuts} cuts, 1 stall, {MESSAGES} sent and confirmed, {} received, {lost} lost, {duplicates} duplicates, {} + {} connections made",
        got.len(),
        proxy_out.accepted(),
        proxy_in.accepted()
    );
    assert_eq!(lost, 0, "{label}: nothing confirmed is lost");
    assert!(
        proxy_out.accepted() >= 2 && proxy_in.accepted() >= 2,
        "{label}: both sides connected again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_channel_survives_cut_connections() {
    if !brokers("rabbitmq cuts").await {
        return;
    }
    let queue = unique("cuts");
    cut_mid_stream(
        |address| Arc::new(RabbitMq::queue(format!("{address}/%2f"), &queue)),
        "amqp://guest:guest@",
        5672,
        "rabbitmq channel, cut connections",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_channel_survives_cut_connections() {
    if !brokers("jetstream cuts").await {
        return;
    }
    let stream = unique("CUTS");
    cut_mid_stream(
        |address| {
            Arc::new(
                JetStream::queue(address, &stream)
                    .expect("a stream name")
                    .ack_wait(Duration::from_secs(5)),
            )
        },
        "nats://",
        4222,
        "jetstream channel, cut connections",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}
