//! Messaging bridges against raw client loops doing the same work, in the same run (issue 10).
//!
//! - `bridge rabbitmq->jetstream`: a RabbitMQ queue preloaded with messages of 1 KiB (published
//!   persistent with confirms, not timed) is drained into a JetStream stream. eip: an
//!   [`AmqpSource`] run by an [`InboundBridge`] (window 256) into a point-to-point channel, and a
//!   consumer endpoint driving a [`JetStreamOutbound`] (256 publishes awaiting their ack at
//!   once). Baseline: one lapin consumer with prefetch 256 and, for each delivery, a JetStream
//!   publish (with `Nats-Msg-Id` from the AMQP message id, as eip sets it) whose ack is awaited
//!   before the delivery is acked, at most 256 at once. Both end when every message is in the
//!   stream (counted by acks) and acked to RabbitMQ. One difference in what an ack means: the
//!   eip bridge acks RabbitMQ once its channel (here in memory) took the message, as an inbound
//!   bridge does; the raw loop acks once JetStream did. A flow that must survive a crash between
//!   the two puts a durable channel there.
//!
//! - `bridge redis->jetstream`: a Redis stream preloaded with entries of 1 KiB (an `eip-id` field
//!   and the payload, not timed) is drained through a consumer group into a JetStream stream.
//!   eip: a [`RedisStreamSource`] run by an [`InboundBridge`] (window 256) into a channel and a
//!   [`JetStreamOutbound`] as above. Baseline: `XREADGROUP` of up to 256 entries at a time and,
//!   for each, a JetStream publish (with `Nats-Msg-Id`) whose ack is awaited before the entry is
//!   `XACK`ed, at most 256 at once. The same difference in what an ack means as above.
//!
//! Rounds alternate eip and baseline on a two-worker runtime, each on a fresh queue and
//! stream; the `compare:` line gives medians in ns per message. Needs RabbitMQ on
//! 127.0.0.1:5672 (`AMQP_ADDR`) and NATS with JetStream on 127.0.0.1:4222 (`NATS_URL`); a
//! comparison whose broker is not reachable is skipped with a line saying so.
//!
//! Run: `cargo bench -p eip-bench --bench bridges`; `cargo test -p eip-bench --benches` runs a
//! small version.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use eip_adapters::amqp::{AmqpSource, AmqpSourceConfig};
use eip_adapters::bridge::{InboundBridge, Source};
use eip_adapters::nats::{JetStreamOutbound, JetStreamOutboundConfig, SubjectTemplate};
use eip_adapters::redis::{RedisStreamSource, RedisStreamSourceConfig};
use eip_bench::{Filter, alternating_medians, measuring, per_item, print_compare, runtime};
use eip_core::channel::PointToPoint;
use eip_core::endpoint::Consumer;
use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tokio::sync::{Notify, Semaphore};
use tower::ServiceExt;

const WINDOW: usize = 256;
const PAYLOAD: usize = 1024;

fn amqp_url() -> String {
    std::env::var("AMQP_ADDR").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let measuring = measuring();
    let filter = Filter::from_args();
    let started = Instant::now();
    let rt = runtime();
    let rounds = if measuring { 5 } else { 1 };
    let messages = if measuring { 20_000 } else { 300 };
    let setting = Setting {
        rt: &rt,
        rounds,
        messages,
    };
    if filter.selects("bridge rabbitmq->jetstream") {
        setting.compare(
            "bridge rabbitmq->jetstream",
            "lapin consume + async-nats publish, acks after publish acks, window 256, 1 KiB",
            reachable(),
            round_trip,
        );
    }
    if filter.selects("bridge redis->jetstream") {
        setting.compare(
            "bridge redis->jetstream",
            "XREADGROUP + async-nats publish, XACK after publish acks, window 256, 1 KiB",
            redis_reachable(),
            redis_round,
        );
    }
    drop(rt);
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}

/// How every comparison runs: on which runtime, how many rounds of how many messages.
struct Setting<'a> {
    rt: &'a tokio::runtime::Runtime,
    rounds: usize,
    messages: usize,
}

impl Setting<'_> {
    /// Alternates eip and baseline rounds of `round` and prints the compare line `name`, or
    /// a line saying it was skipped when `reachable` says a broker is not there.
    fn compare<F: std::future::Future<Output = Duration>>(
        &self,
        name: &str,
        baseline: &str,
        reachable: impl std::future::Future<Output = Result<(), String>>,
        round: impl Fn(usize, Side) -> F,
    ) {
        if let Err(e) = self.rt.block_on(reachable) {
            println!("{name}: {e}: skipped");
            return;
        }
        let messages = self.messages;
        let timed = |side: Side, label: &str, n: usize| {
            let ns = per_item(self.rt.block_on(round(messages, side)), messages);
            eprintln!("  {name} round {n}: {label} {ns:.0} ns/msg");
            ns
        };
        let (eip_ns, raw_ns) = alternating_medians(
            self.rounds,
            |n| timed(Side::Eip, "eip", n),
            |n| timed(Side::Raw, "raw", n),
        );
        print_compare(name, eip_ns, raw_ns, baseline);
    }
}

async fn reachable() -> Result<(), String> {
    let amqp = tokio::time::timeout(
        Duration::from_secs(5),
        Connection::connect(&amqp_url(), ConnectionProperties::default()),
    )
    .await;
    match amqp {
        Ok(Ok(c)) => {
            let _ = c.close(200, "checked".into()).await;
        }
        _ => return Err(format!("RabbitMQ at {} not reachable", amqp_url())),
    }
    match tokio::time::timeout(Duration::from_secs(5), async_nats::connect(nats_url())).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(format!("NATS at {} not reachable", nats_url())),
    }
}

#[derive(Clone, Copy)]
enum Side {
    Eip,
    Raw,
}

/// Preloads a fresh queue, drains it into a fresh stream with `side`, and returns the time the
/// draining took.
async fn round_trip(messages: usize, side: Side) -> Duration {
    let tag = format!(
        "{}-{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let queue = format!("eip-bench-bridge-{tag}");
    let stream = format!("EIPBENCH_{}", tag.replace('-', "_"));
    let subject = format!("eipbench.{}.x", tag.replace('-', "_"));
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("RabbitMQ connects");
    let channel = connection.create_channel().await.expect("a channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let durable = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    channel
        .queue_declare(queue.as_str().into(), durable, FieldTable::default())
        .await
        .expect("the queue");
    let payload = vec![b'x'; PAYLOAD];
    let mut confirms = Vec::with_capacity(messages);
    for _ in 0..messages {
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(eip_core::MessageId::new().to_string().into());
        confirms.push(
            channel
                .basic_publish(
                    "".into(),
                    queue.as_str().into(),
                    BasicPublishOptions::default(),
                    &payload,
                    props,
                )
                .await
                .expect("published"),
        );
    }
    for confirm in confirms {
        assert!(confirm.await.expect("confirmed").is_ack());
    }
    let nats = async_nats::connect(nats_url())
        .await
        .expect("NATS connects");
    let js = jetstream::new(nats);
    js.create_stream(jetstream::stream::Config {
        name: stream.clone(),
        subjects: vec![subject.clone()],
        ..Default::default()
    })
    .await
    .expect("the stream");
    let elapsed = match side {
        Side::Eip => eip(&queue, &subject, messages).await,
        Side::Raw => raw(&connection, &js, &queue, &subject, messages).await,
    };
    let info = js
        .get_stream(&stream)
        .await
        .expect("the stream")
        .info()
        .await
        .expect("its info")
        .state
        .messages;
    assert_eq!(info as usize, messages, "every message in the stream");
    let _ = js.delete_stream(&stream).await;
    let _ = channel
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await;
    let _ = connection.close(200, "done".into()).await;
    elapsed
}

async fn eip(queue: &str, subject: &str, messages: usize) -> Duration {
    let source = AmqpSource::new(AmqpSourceConfig::new(amqp_url(), queue));
    drain_with_bridge(source, subject, messages).await
}

/// The eip side: `source` through an inbound bridge into a channel, a consumer driving a
/// JetStream publisher; the time until every message is acked by JetStream.
async fn drain_with_bridge<S: Source>(source: S, subject: &str, messages: usize) -> Duration {
    let channel = PointToPoint::new("bridged", WINDOW).expect("a channel");
    let published = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Notify::new());
    let outbound = JetStreamOutbound::new(JetStreamOutboundConfig::new(
        nats_url(),
        SubjectTemplate::fixed(subject).expect("a subject"),
    ))
    .expect("the outbound config");
    outbound.connect().await.expect("NATS connects");
    let counting = {
        let published = published.clone();
        let all = all.clone();
        outbound.map_response(move |_| {
            if published.fetch_add(1, Ordering::SeqCst) + 1 == messages {
                all.notify_one();
            }
        })
    };
    let started = Instant::now();
    let consumer = Consumer::new(channel.receiver(), counting)
        .concurrency(WINDOW)
        .spawn();
    let bridge = InboundBridge::new(source, channel.clone(), WINDOW).spawn();
    all.notified().await;
    while channel.stats().depth + channel.stats().in_flight > 0 {
        tokio::task::yield_now().await;
    }
    let elapsed = started.elapsed();
    bridge.shutdown().await.expect("the bridge stops");
    consumer.shutdown().await;
    elapsed
}

async fn raw(
    connection: &Connection,
    js: &jetstream::Context,
    queue: &str,
    subject: &str,
    messages: usize,
) -> Duration {
    let channel = connection.create_channel().await.expect("a channel");
    channel
        .basic_qos(WINDOW as u16, BasicQosOptions::default())
        .await
        .expect("prefetch");
    let started = Instant::now();
    let mut consumer = channel
        .basic_consume(
            queue.into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consuming");
    let permits = Arc::new(Semaphore::new(WINDOW));
    let done = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Notify::new());
    for _ in 0..messages {
        let delivery = consumer
            .next()
            .await
            .expect("the consumer stays open")
            .expect("a delivery");
        let permit = permits.clone().acquire_owned().await.expect("open");
        let (js, subject, done, all) = (js.clone(), subject.to_owned(), done.clone(), all.clone());
        tokio::spawn(async move {
            let mut headers = async_nats::HeaderMap::new();
            if let Some(id) = delivery.properties.message_id() {
                headers.insert("Nats-Msg-Id", id.as_str());
            }
            js.publish_with_headers(subject, headers, delivery.data.clone().into())
                .await
                .expect("published")
                .await
                .expect("acked by JetStream");
            delivery
                .acker
                .ack(BasicAckOptions::default())
                .await
                .expect("acked to RabbitMQ");
            if done.fetch_add(1, Ordering::SeqCst) + 1 == messages {
                all.notify_one();
            }
            drop(permit);
        });
    }
    all.notified().await;
    let elapsed = started.elapsed();
    let _ = channel.close(200, "done".into()).await;
    elapsed
}

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn redis_reachable() -> Result<(), String> {
    let client = ::redis::Client::open(redis_url()).map_err(|e| e.to_string())?;
    match tokio::time::timeout(
        Duration::from_secs(5),
        client.get_multiplexed_async_connection(),
    )
    .await
    {
        Ok(Ok(_)) => {}
        _ => return Err(format!("Redis at {} not reachable", redis_url())),
    }
    match tokio::time::timeout(Duration::from_secs(5), async_nats::connect(nats_url())).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(format!("NATS at {} not reachable", nats_url())),
    }
}

/// Preloads a fresh Redis stream, drains it into a fresh JetStream stream with `side`, and
/// returns the time the draining took.
async fn redis_round(messages: usize, side: Side) -> Duration {
    use ::redis::AsyncCommands;
    let tag = format!(
        "{}_{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let key = format!("eipbench:{tag}");
    let stream = format!("EIPBENCH_R{tag}");
    let subject = format!("eipbench.r{tag}.x");
    let client = ::redis::Client::open(redis_url()).expect("a Redis URL");
    let mut redis = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis connects");
    let payload = vec![b'x'; PAYLOAD];
    let mut pipe = ::redis::pipe();
    for _ in 0..messages {
        pipe.xadd(
            &key,
            "*",
            &[
                (
                    "eip-id",
                    eip_core::MessageId::new().to_string().into_bytes(),
                ),
                ("payload", payload.clone()),
            ],
        )
        .ignore();
    }
    let () = pipe.query_async(&mut redis).await.expect("preloaded");
    let () = redis
        .xgroup_create_mkstream(&key, "bench", "0")
        .await
        .expect("the group");
    let nats = async_nats::connect(nats_url())
        .await
        .expect("NATS connects");
    let js = jetstream::new(nats);
    js.create_stream(jetstream::stream::Config {
        name: stream.clone(),
        subjects: vec![subject.clone()],
        ..Default::default()
    })
    .await
    .expect("the stream");
    let elapsed = match side {
        Side::Eip => {
            let source = RedisStreamSource::new(RedisStreamSourceConfig::new(
                redis_url(),
                key.clone(),
                "bench",
                "eip",
            ))
            .expect("the source config");
            drain_with_bridge(source, &subject, messages).await
        }
        Side::Raw => redis_raw(&redis, &js, &key, &subject, messages).await,
    };
    let stored = js
        .get_stream(&stream)
        .await
        .expect("the stream")
        .info()
        .await
        .expect("its info")
        .state
        .messages;
    assert_eq!(stored as usize, messages, "every message in the stream");
    let _ = js.delete_stream(&stream).await;
    let _: Result<(), _> = redis.del(&key).await;
    elapsed
}

async fn redis_raw(
    redis: &::redis::aio::MultiplexedConnection,
    js: &jetstream::Context,
    key: &str,
    subject: &str,
    messages: usize,
) -> Duration {
    use ::redis::AsyncCommands;
    use ::redis::streams::{StreamReadOptions, StreamReadReply};
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(WINDOW));
    let done = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Notify::new());
    let mut reader = redis.clone();
    let mut taken = 0;
    while taken < messages {
        let room = permits.available_permits().max(1);
        let options = StreamReadOptions::default()
            .group("bench", "raw")
            .count(room)
            .block(1000);
        let reply: Option<StreamReadReply> = reader
            .xread_options(&[key], &[">"], &options)
            .await
            .expect("XREADGROUP");
        for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
            taken += 1;
            let permit = permits.clone().acquire_owned().await.expect("open");
            let (js, subject, done, all) =
                (js.clone(), subject.to_owned(), done.clone(), all.clone());
            let mut acker = redis.clone();
            let key = key.to_owned();
            tokio::spawn(async move {
                let bytes = |name: &str| match entry.map.get(name) {
                    Some(::redis::Value::BulkString(b)) => b.clone(),
                    _ => Vec::new(),
                };
                let mut headers = async_nats::HeaderMap::new();
                headers.insert(
                    "Nats-Msg-Id",
                    String::from_utf8_lossy(&bytes("eip-id")).as_ref(),
                );
                js.publish_with_headers(subject, headers, bytes("payload").into())
                    .await
                    .expect("published")
                    .await
                    .expect("acked by JetStream");
                let _: usize = acker.xack(&key, "bench", &[&entry.id]).await.expect("XACK");
                if done.fetch_add(1, Ordering::SeqCst) + 1 == messages {
                    all.notify_one();
                }
                drop(permit);
            });
        }
    }
    all.notified().await;
    started.elapsed()
}
