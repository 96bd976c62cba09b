//! The durable channel (Guaranteed Delivery) against RabbitMQ, end to end, in the same run; then
//! its recovery time and memory with a million messages waiting.
//!
//! Both sides do the same work: 1 KiB payloads, a producer task sending and a consumer task
//! receiving and acking, at most `window` messages in flight end to end (a message leaves the
//! window once its send has completed *and* it has been acked). eip: a [`PointToPoint`] channel
//! on a [`Durable`] store in a fresh temp directory, `send().await` completing once the message
//! is fsynced (concurrent sends share a commit), `recv` + `ack` with prefetch = window.
//! RabbitMQ (`AMQP_ADDR`, default `amqp://guest:guest@127.0.0.1:5672/%2f`): a fresh durable
//! classic queue per round (deleted after), persistent messages (`delivery_mode = 2`) with
//! publisher confirms, each send waiting on its confirm, `basic_consume` with prefetch = window
//! and one `basic_ack` per message. Window 1 is one message at a time; window 256 has each send
//! in a task of its own so that commits and confirms batch. Rounds alternate eip and RabbitMQ
//! on a two-worker multi-thread runtime and the `compare:` lines give medians. Window 1 has a
//! second baseline, the disk's floor: between the same rounds, a loop of one 1 KiB append and
//! its `fdatasync` per message on a file in the same temp dir (`compare: durable window 1 vs
//! fsync`). Then the recovery after a crash (`durable/recovery.rs`): child processes fill a
//! channel with 1 000 000 messages and are killed with SIGKILL, and a fresh process times
//! `Durable::open` + building the channel + receiving the first message from a cold page cache,
//! with its peak RSS. If the broker is unreachable, the eip side still runs and the RabbitMQ
//! baseline is skipped.
//!
//! Run: `cargo bench -p eip-bench --bench durable` (about a minute once built; it writes about
//! 1.3 GB to the temp dir and removes it); add `window 256` or `recovery` to run only what is
//! named so. `cargo test -p eip-bench --benches` runs a small version.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_bench::{
    Filter, PAYLOAD_LEN, TempDir, Window, alternating_medians, measuring, numbered_payload,
    payload_number, per_item, print_compare, runtime,
};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::store::durable::{Durable, StoreConfig};
use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tokio::runtime::Runtime;

#[path = "durable/recovery.rs"]
mod recovery;

const BASELINE: &str = "RabbitMQ durable queue, confirms";
const CHANNEL_CAPACITY: usize = 1_000_000;

/// One comparison: its window, and the messages per round when measuring.
struct Case {
    window: usize,
    messages: usize,
}

const CASES: [Case; 2] = [
    Case {
        window: 1,
        messages: 2_000,
    },
    Case {
        window: 256,
        messages: 20_000,
    },
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if recovery::child(&args) {
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let measuring = measuring();
    let filter = Filter::from_args();
    let started = Instant::now();
    let rt = runtime();
    let rabbit = rt.block_on(connect());
    let rabbit = match rabbit {
        Ok(connection) => Some(connection),
        Err(error) => {
            println!("RabbitMQ not reachable ({error}): baseline skipped");
            None
        }
    };
    let rounds = if measuring { 5 } else { 1 };
    for case in CASES
        .iter()
        .filter(|case| filter.selects(&format!("durable window {}", case.window)))
    {
        let messages = if measuring { case.messages } else { 200 };
        compare(&rt, rabbit.as_ref(), case.window, messages, rounds);
    }
    if let Some(connection) = rabbit {
        let _ = rt.block_on(connection.close(200, "done".into()));
    }
    drop(rt);
    if filter.selects("recovery") {
        recovery::run(measuring);
    }
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}

fn compare(
    rt: &Runtime,
    rabbit: Option<&Connection>,
    window: usize,
    messages: usize,
    rounds: usize,
) {
    let name = format!("durable window {window}");
    let mut commits = Vec::new();
    let mut commit_us = Vec::new();
    let mut eip_ns = Vec::new();
    let mut eip = |round: usize| {
        let (elapsed, round_commits, committing) = rt.block_on(eip_round(window, messages));
        commits.push(round_commits);
        let mean_us = committing.as_secs_f64() * 1e6 / round_commits.max(1) as f64;
        commit_us.push(mean_us);
        let ns = per_item(elapsed, messages);
        eprintln!(
            "  {name} round {round}: eip {ns:.0} ns/msg, {round_commits} commits of {mean_us:.0} µs on average"
        );
        eip_ns.push(ns);
        ns
    };
    // Window 1 is one message at a time, each stored on its own: its floor is the disk's, one
    // small write and its fdatasync, measured between the same rounds on the same file system.
    let mut floor_ns = Vec::new();
    let mut floor = |round: usize| {
        if window != 1 {
            return;
        }
        let dir = TempDir::new("fsync");
        let elapsed = eip_bench::disk::append_and_sync(dir.path(), messages, PAYLOAD_LEN)
            .unwrap_or_else(|e| panic!("the write + fdatasync loop in {:?}: {e}", dir.path()));
        let ns = per_item(elapsed, messages);
        eprintln!("  {name} round {round}: 1 KiB write + fdatasync {ns:.0} ns/msg");
        floor_ns.push(ns);
    };
    match rabbit {
        Some(connection) => {
            let (eip_median, baseline_ns) = alternating_medians(rounds, &mut eip, |round| {
                floor(round);
                let queue = format!("eip-bench-{}-w{window}-r{round}", std::process::id());
                let elapsed = rt
                    .block_on(rabbit_round(connection, &queue, window, messages))
                    .unwrap_or_else(|e| panic!("RabbitMQ round on {queue}: {e}"));
                let ns = per_item(elapsed, messages);
                eprintln!("  {name} round {round}: RabbitMQ {ns:.0} ns/msg");
                ns
            });
            print_compare(&name, eip_median, baseline_ns, BASELINE);
        }
        None => {
            for round in 0..rounds {
                eip(round);
                floor(round);
            }
            let eip_median = eip_bench::median(&mut eip_ns.clone());
            println!(
                "{name}: eip {eip_median:.1} ns/msg (baseline skipped: RabbitMQ not reachable)"
            );
        }
    }
    if !floor_ns.is_empty() {
        let eip_median = eip_bench::median(&mut eip_ns);
        let floor_median = eip_bench::median(&mut floor_ns);
        println!(
            "compare: {name} vs fsync: eip {eip_median:.0} ns/msg, baseline {floor_median:.0} ns/msg (1 KiB write + fdatasync), ratio {:.2}",
            eip_median / floor_median
        );
    }
    commits.sort_unstable();
    let median_commits = commits[commits.len() / 2];
    println!(
        "detail: {name}: eip {median_commits} commits for {messages} messages ({:.2} messages per commit, median round), a commit {:.0} µs on average (median round)",
        messages as f64 / median_commits as f64,
        eip_bench::median(&mut commit_us)
    );
}

/// One round on a durable channel in a fresh directory: the time from the first send to the
/// last message stored and acked, the store's commits meanwhile and their time together.
async fn eip_round(window: usize, messages: usize) -> (Duration, u64, Duration) {
    let dir = TempDir::new("durable");
    let store = Arc::new(Durable::open(dir.path(), StoreConfig::default()).expect("store opens"));
    let channel = PointToPoint::builder("bench")
        .capacity(CHANNEL_CAPACITY)
        .store(store.clone())
        .build()
        .expect("channel builds");
    let in_flight = Window::new(window, messages);
    let before = store.store().stats();
    let started = Instant::now();

    let consumer = tokio::spawn({
        let mut receiver = channel.receiver().with_prefetch(window);
        let in_flight = in_flight.clone();
        async move {
            for _ in 0..messages {
                let delivery = receiver.recv().await.expect("the channel stays open");
                let i = payload_number(delivery.message().payload());
                delivery.ack();
                in_flight.event(i);
            }
        }
    });
    for i in 0..messages {
        in_flight.enter().await;
        let msg = Message::new(numbered_payload(i));
        let send = {
            let channel = channel.clone();
            let in_flight = in_flight.clone();
            async move {
                channel.send(msg).await.expect("stored");
                in_flight.event(i);
            }
        };
        if window == 1 {
            send.await;
        } else {
            tokio::spawn(send);
        }
    }
    in_flight.finished().await;
    let elapsed = started.elapsed();
    let after = store.store().stats();
    let commits = after.commits - before.commits;
    let committing = after.commit_latency.total_nanos - before.commit_latency.total_nanos;
    consumer.await.expect("the consumer finishes");
    drop(channel);
    drop(store);
    (elapsed, commits, Duration::from_nanos(committing))
}

async fn connect() -> lapin::Result<Connection> {
    let addr = std::env::var("AMQP_ADDR")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let connecting = Connection::connect(&addr, ConnectionProperties::default());
    match tokio::time::timeout(Duration::from_secs(5), connecting).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer from {addr} within 5 s"),
        )
        .into()),
    }
}

/// One round on a fresh durable classic queue named `queue`, deleted afterwards: the time from
/// the first publish to the last message confirmed and acked.
async fn rabbit_round(
    connection: &Connection,
    queue: &str,
    window: usize,
    messages: usize,
) -> lapin::Result<Duration> {
    let publisher = connection.create_channel().await?;
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let mut arguments = FieldTable::default();
    arguments.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("classic".into()),
    );
    publisher
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            },
            arguments,
        )
        .await?;
    let consumer_channel = connection.create_channel().await?;
    let prefetch = u16::try_from(window).expect("a window fits AMQP's prefetch count");
    consumer_channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await?;
    let mut consumer = consumer_channel
        .basic_consume(
            queue.into(),
            format!("{queue}-consumer").into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let in_flight = Window::new(window, messages);
    let persistent = BasicProperties::default().with_delivery_mode(2);
    let started = Instant::now();

    let consuming = tokio::spawn({
        let in_flight = in_flight.clone();
        async move {
            for _ in 0..messages {
                let delivery = consumer.next().await.expect("the consumer stays open")?;
                let i = payload_number(&delivery.data);
                delivery.acker.ack(BasicAckOptions::default()).await?;
                in_flight.event(i);
            }
            lapin::Result::Ok(())
        }
    });
    for i in 0..messages {
        in_flight.enter().await;
        let payload = numbered_payload(i);
        debug_assert_eq!(payload.len(), PAYLOAD_LEN);
        let confirm = publisher
            .basic_publish(
                "".into(),
                queue.into(),
                BasicPublishOptions::default(),
                &payload,
                persistent.clone(),
            )
            .await?;
        let confirmed = {
            let in_flight = in_flight.clone();
            async move {
                let confirmation = confirm.await.expect("a confirm");
                assert!(confirmation.is_ack(), "the broker refused message {i}");
                in_flight.event(i);
            }
        };
        if window == 1 {
            confirmed.await;
        } else {
            tokio::spawn(confirmed);
        }
    }
    in_flight.finished().await;
    let elapsed = started.elapsed();
    consuming.await.expect("the consumer finishes")?;
    consumer_channel.close(200, "done".into()).await?;
    publisher
        .queue_delete(queue.into(), QueueDeleteOptions::default())
        .await?;
    publisher.close(200, "done".into()).await?;
    Ok(elapsed)
}
