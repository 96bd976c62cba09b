//! Point-to-point channels kept in a broker against the broker's own client doing the same
//! work, in the same run.
//!
//! Every comparison moves messages of 1 KiB, each carrying its number, through one queue of a
//! broker. The eip side is one shape for both ([`through_channel`]): a [`PointToPoint`] built
//! with the broker's store (capacity 256, which becomes the broker's prefetch), [`SENDERS`]
//! tasks each sending and awaiting its send (the broker's confirm) before the next, so that
//! up to 64 confirms are outstanding at once (the store's publish window, 256, does not bind),
//! and one receiver in the same process receiving each message and acking it on the channel,
//! which acks it to the broker. The baseline is the broker's client doing the same in a loop:
//! a publishing connection with the same 64 tasks, a consuming connection with the same
//! prefetch, an explicit ack per message, not awaited in the receiving loop.
//!
//! - `channel in rabbitmq`: a durable queue; persistent publishes with publisher confirms and a
//!   message id, a consumer with prefetch 256 and manual acks (see `broker_channels/rabbitmq.rs`).
//! - `channel in jetstream`: a work-queue stream; publishes with `Nats-Msg-Id` awaiting
//!   JetStream's ack, a durable pull consumer with explicit acks and `max_ack_pending` 256 (see
//!   `broker_channels/jetstream.rs`).
//!
//! Both sides are timed from the first send until every message was received and acked and
//! every send completed; connecting and declaring come before (the eip side sends one message
//! through first). Rounds alternate eip and baseline on a two-worker runtime, each on a fresh
//! queue or stream, deleted after it; the `compare:` lines give medians in ns per message.
//! Needs RabbitMQ on 127.0.0.1:5672 (`AMQP_ADDR`) and NATS with JetStream on 127.0.0.1:4222
//! (`NATS_URL`); a comparison whose broker is not reachable is skipped with a line saying so.
//!
//! Run: `cargo bench -p eip-bench --bench broker_channels` (under a minute once built); add
//! `rabbitmq` or `jetstream` to run only the comparison so named. `cargo test -p eip-bench
//! --benches` runs a small version.

// Shared with the bridges bench: where the brokers are, fresh names, a RabbitMQ queue.
#[allow(dead_code)]
#[path = "bridges/brokers.rs"]
mod brokers;
#[path = "broker_channels/jetstream.rs"]
mod jetstream;
#[path = "broker_channels/rabbitmq.rs"]
mod rabbitmq;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_bench::{Filter, Setting, measuring, numbered_payload, payload_number, runtime};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::store::Backend;

/// The channel's capacity, and so the broker's prefetch; the baseline's prefetch too.
const CAPACITY: usize = 256;
/// Tasks sending at once, each awaiting its confirm before its next send.
const SENDERS: usize = 64;

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
    if filter.selects("channel in rabbitmq") {
        let medians = setting.compare(
            "channel in rabbitmq",
            "lapin: 64 publishers with confirms, persistent; prefetch 256, manual acks",
            brokers::rabbitmq_reachable(),
            rabbitmq::round,
        );
        print_rates("channel in rabbitmq", medians);
    }
    if filter.selects("channel in jetstream") {
        let medians = setting.compare(
            "channel in jetstream",
            "async-nats: 64 publishers awaiting acks; pull consumer, max ack pending 256, plain acks",
            brokers::nats_reachable(),
            jetstream::round,
        );
        print_rates("channel in jetstream", medians);
    }
    drop(rt);
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}

/// The compare line's medians as messages a second.
fn print_rates(name: &str, medians: Option<(f64, f64)>) {
    if let Some((eip_ns, raw_ns)) = medians {
        println!(
            "  {name}: eip {:.0} msg/s, baseline {:.0} msg/s",
            1e9 / eip_ns,
            1e9 / raw_ns
        );
    }
}

/// The eip side of both comparisons: `messages` sent by [`SENDERS`] tasks into a point-to-point
/// channel kept in `store`, and received and acked by one receiver; the time [`timed`] gives.
/// The channel is deleted before this returns, so that it reads the broker no more.
async fn through_channel(store: Arc<dyn Backend>, messages: usize) -> Duration {
    let channel = PointToPoint::builder("kept")
        .capacity(CAPACITY)
        .store(store)
        .build()
        .expect("a channel");
    let mut receiver = channel.receiver();
    // One message through before the clock starts: the store connects, declares and starts
    // reading on its first use, which the baseline does before its clock starts too.
    channel
        .send(Message::new(numbered_payload(messages)))
        .await
        .expect("the first message sent");
    receiver.recv().await.expect("the first message").ack();
    let receiving = async move {
        let mut tally = Tally::new(messages);
        while !tally.complete() {
            let delivery = receiver.recv().await.expect("the channel stays open");
            tally.note(delivery.message().payload());
            delivery.ack();
        }
        tally.report("eip");
    };
    let sender = channel.clone();
    let sending = send_concurrently(messages, move |i| {
        let channel = sender.clone();
        async move {
            channel
                .send(Message::new(numbered_payload(i)))
                .await
                .expect("sent");
        }
    });
    let elapsed = timed(receiving, sending).await;
    channel.delete().await;
    elapsed
}

/// Runs `receiving` on its own task while `sending` runs here; the time until both are done.
async fn timed(
    receiving: impl Future<Output = ()> + Send + 'static,
    sending: impl Future<Output = ()>,
) -> Duration {
    let started = Instant::now();
    let receiving = tokio::spawn(receiving);
    sending.await;
    receiving.await.expect("the receiver");
    started.elapsed()
}

/// Sends messages `0..messages` from [`SENDERS`] tasks at once (message `i` from task
/// `i % SENDERS`), each awaiting `send(i)` before its next; returns once every send completed.
async fn send_concurrently<F, Fut>(messages: usize, send: F)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tasks: Vec<_> = (0..SENDERS)
        .map(|first| {
            let send = send.clone();
            tokio::spawn(async move {
                for i in (first..messages).step_by(SENDERS) {
                    send(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a sender");
    }
}

/// Which messages a receiver has had, by number: complete once it had each of them. A message
/// had twice (the broker delivering it again) is counted, not taken for another.
struct Tally {
    seen: Vec<bool>,
    distinct: usize,
    duplicates: usize,
}

impl Tally {
    fn new(messages: usize) -> Self {
        Tally {
            seen: vec![false; messages],
            distinct: 0,
            duplicates: 0,
        }
    }

    /// One message received, by its payload.
    fn note(&mut self, payload: &[u8]) {
        let seen = &mut self.seen[payload_number(payload)];
        if std::mem::replace(seen, true) {
            self.duplicates += 1;
        } else {
            self.distinct += 1;
        }
    }

    fn complete(&self) -> bool {
        self.distinct == self.seen.len()
    }

    /// Says on stderr how many duplicates `side` received, if any.
    fn report(&self, side: &str) {
        if self.duplicates > 0 {
            eprintln!("  {side}: {} messages received twice", self.duplicates);
        }
    }
}
