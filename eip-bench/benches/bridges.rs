//! Messaging bridges against raw client loops doing the same work, in the same run (issue 10).
//!
//! Every comparison moves messages of 1 KiB from a source broker into a target broker. The eip
//! side is one shape for all of them ([`drain_with_bridge`]): the source run by an
//! [`InboundBridge`] (window 256) into a point-to-point channel, and a consumer endpoint driving
//! the target's outbound adapter (256 publishes awaiting their confirm at once). The baseline
//! is the two brokers' own clients in a loop: for each delivery a publish whose confirm is
//! awaited before the delivery is acknowledged to the source, at most 256 at once.
//!
//! - `bridge rabbitmq->jetstream`: a preloaded RabbitMQ queue into a JetStream stream (see
//!   `bridges/rabbitmq.rs`).
//! - `bridge redis->jetstream`: a preloaded Redis stream, read through a consumer group, into a
//!   JetStream stream (see `bridges/redis.rs`).
//! - `bridge mqtt->rabbitmq`: a QoS 1 MQTT subscription, fed while the round runs, into a
//!   RabbitMQ queue with publisher confirms (see `bridges/mqtt.rs`).
//!
//! One difference in what an acknowledgement to the source means, the same in every
//! comparison: the eip bridge acknowledges once its channel (here in memory) took the message,
//! as an inbound bridge does; the raw loop once the target confirmed. A flow that must survive
//! a crash between the two puts a durable channel there.
//!
//! Rounds alternate eip and baseline on a two-worker runtime, each on fresh queues, streams and
//! topics; the `compare:` lines give medians in ns per message. Needs RabbitMQ on
//! 127.0.0.1:5672 (`AMQP_ADDR`), NATS with JetStream on 127.0.0.1:4222 (`NATS_URL`), Redis on
//! 127.0.0.1:6379 (`REDIS_URL`) and an MQTT broker on 127.0.0.1:1883 (`MQTT_ADDR`); a
//! comparison whose broker is not reachable is skipped with a line saying so.
//!
//! Run: `cargo bench -p eip-bench --bench bridges` (about a minute once built); add `rabbitmq`,
//! `redis` or `mqtt` to run only the comparisons so named. `cargo test -p eip-bench --benches`
//! runs a small version.

#[path = "bridges/brokers.rs"]
mod brokers;
#[path = "bridges/mqtt.rs"]
mod mqtt;
#[path = "bridges/rabbitmq.rs"]
mod rabbitmq;
#[path = "bridges/redis.rs"]
mod redis;

use std::fmt::Display;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use eip_adapters::bridge::{InboundBridge, Source};
use eip_bench::{Filter, Setting, Side, measuring, runtime};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::endpoint::Consumer;
use tokio::sync::{Notify, Semaphore};
use tower::{Service, ServiceExt};

/// Deliveries unacknowledged to the source, and publishes awaiting their confirm, at once.
const WINDOW: usize = 256;
/// Bytes in every message.
const PAYLOAD: usize = 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let measuring = measuring();
    let filter = Filter::from_args();
    let started = Instant::now();
    let rt = runtime();
    let setting = Setting {
        rt: &rt,
        rounds: if measuring { 5 } else { 1 },
        messages: if measuring { 20_000 } else { 300 },
    };
    if filter.selects("bridge rabbitmq->jetstream") {
        setting.compare(
            "bridge rabbitmq->jetstream",
            "lapin consume + async-nats publish, acks after publish acks, window 256, 1 KiB",
            async {
                brokers::rabbitmq_reachable().await?;
                brokers::nats_reachable().await
            },
            rabbitmq::round,
        );
    }
    if filter.selects("bridge redis->jetstream") {
        setting.compare(
            "bridge redis->jetstream",
            "XREADGROUP + async-nats publish, XACK after publish acks, window 256, 1 KiB",
            async {
                brokers::redis_reachable().await?;
                brokers::nats_reachable().await
            },
            redis::round,
        );
    }
    if filter.selects("bridge mqtt->rabbitmq") {
        setting.compare(
            "bridge mqtt->rabbitmq",
            "rumqttc QoS 1 subscribe + lapin publish, PUBACK after confirms, window 256, 1 KiB",
            async {
                brokers::mqtt_reachable().await?;
                brokers::rabbitmq_reachable().await
            },
            mqtt::round,
        );
    }
    drop(rt);
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}

/// How far a round is, counted alike by both sides: messages through (confirmed by the
/// target), and, for a source fed while the round runs, how many more the feeder may publish.
struct Progress {
    messages: usize,
    through: AtomicUsize,
    all_through: Notify,
    /// One permit per message the feeder may publish before more are through.
    room: Semaphore,
}

impl Progress {
    /// A round of `messages`, whose feeder (if any) keeps at most `ahead` published and not
    /// yet through.
    fn new(messages: usize, ahead: usize) -> Arc<Self> {
        Arc::new(Progress {
            messages,
            through: AtomicUsize::new(0),
            all_through: Notify::new(),
            room: Semaphore::new(ahead),
        })
    }

    /// One more message is through.
    fn through(&self) {
        self.room.add_permits(1);
        if self.through.fetch_add(1, Ordering::SeqCst) + 1 == self.messages {
            // `notify_one` keeps the wake-up for a waiter that comes later.
            self.all_through.notify_one();
        }
    }

    /// Waits until every message of the round is through.
    async fn all_through(&self) {
        self.all_through.notified().await;
    }

    /// Waits until the feeder may publish one more.
    async fn room(&self) {
        self.room
            .acquire()
            .await
            .expect("the semaphore is never closed")
            .forget();
    }
}

/// The eip side of every comparison: `source` through an inbound bridge into a channel, a
/// consumer driving `outbound` (connected already); the time until every message is through.
async fn drain_with_bridge<S, O>(source: S, outbound: O, progress: &Arc<Progress>) -> Duration
where
    S: Source,
    O: Service<Message> + Send + 'static,
    O::Future: Send,
    O::Error: Display + Send,
{
    let channel = PointToPoint::new("bridged", WINDOW).expect("a channel");
    let counting = {
        let progress = progress.clone();
        outbound.map_response(move |_| progress.through())
    };
    let started = Instant::now();
    let consumer = Consumer::new(channel.receiver(), counting)
        .concurrency(WINDOW)
        .spawn();
    let bridge = InboundBridge::new(source, channel.clone(), WINDOW).spawn();
    progress.all_through().await;
    while channel.stats().depth + channel.stats().in_flight > 0 {
        tokio::task::yield_now().await;
    }
    let elapsed = started.elapsed();
    bridge.shutdown().await.expect("the bridge stops");
    consumer.shutdown().await;
    elapsed
}
