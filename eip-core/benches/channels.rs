//! Channel throughput and allocations against tokio's own channels, measured in the same run.
//!
//! Each comparison runs eip's channel and its baseline over the same workload: a 1 KiB
//! `Bytes` payload made once and cloned per message (a reference-count bump), on a tokio
//! runtime. Both sides carry the same `Message::new(payload.clone())`
//! (so both pay for the message id), and every eip consumer acks what it receives: the ratio is
//! the cost of eip's channel, with its acknowledgements, against the raw tokio channel.
//!
//! - `p2p 1x1`, `p2p 4x2`: [`PointToPoint`] (send, recv, ack) against a bounded
//!   `tokio::sync::mpsc` of the same capacity. mpsc has a single receiver, so in the 4x2 case
//!   the two consumers share it behind a `tokio::sync::Mutex`, the way competing consumers are
//!   built on it.
//! - `fan-out N`: [`PublishSubscribe`] to N subscribers against `tokio::sync::broadcast` of the
//!   same capacity. broadcast never makes its sender wait (a slow receiver lags and loses
//!   messages), so the baseline publisher yields while the buffer is full: both sides then
//!   deliver every message to every subscriber. ns/msg counts published messages.
//!
//! Every comparison runs twice: on a multi-thread runtime with 2 workers (names as above) and on
//! a current-thread runtime (names ending in `[current-thread]`), where no cross-core traffic
//! or scheduling luck blurs the per-message cost. After each comparison it prints
//! `compare: NAME: eip X ns/msg, baseline Y ns/msg (BASELINE), ratio R` (R = X / Y, medians of
//! alternating rounds, see `compare`), then `allocs: NAME: eip A allocs/msg, baseline B allocs/msg`,
//! counted by the global allocator over two separate passes of N and 2N messages: the
//! difference divided by N is what each further message costs, with the fixed set-up and
//! teardown (channel, subscriptions, task spawns) cancelled out.
//!
//! `metrics p2p 1x1` is the price of watching a channel: the same `p2p 1x1` run while another
//! thread reads the channel's counters ([`PointToPoint::stats`], what the admin server's
//! `/metrics`, `/api/channels` and rate sampler read) every [`SCRAPE_EVERY`], against the run
//! nobody watches. A channel keeps its counters whether or not anyone reads them, so what a
//! reader costs the hot path is the lock and cache lines the read shares with senders and
//! receivers. One read a millisecond is a thousand times what the console (one a second) or a
//! Prometheus server (one every 15 s) asks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::channel::{PointToPoint, PublishSubscribe};
use eip_core::message::Message;
use support::{alternating_medians, measuring, print_compare};
use tokio::runtime::Runtime;
use tokio::sync::{Mutex, broadcast, mpsc};

/// Counts every allocation (and reallocation) the process makes.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Capacity of every channel (per subscription for publish-subscribe).
const CAPACITY: usize = 1024;
const PAYLOAD_LEN: usize = 1024;
/// Deliveries in the first allocation-counting pass (the second has twice as many); messages
/// are this divided by the number of subscribers, at most [`ALLOC_PASS_MAX_MESSAGES`].
const ALLOC_PASS_DELIVERIES: u64 = 1_000_000;
const ALLOC_PASS_MAX_MESSAGES: u64 = 100_000;

/// One side of a comparison: sends `messages` messages end to end, returns the time it took.
type Run<'a> = Box<dyn Fn(u64) -> Duration + 'a>;

fn channels(c: &mut Criterion) {
    let two_workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("tokio runtime");
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let payload = Bytes::from(vec![0x5a; PAYLOAD_LEN]);
    let p = &payload;
    let mpsc_label = "tokio::sync::mpsc";
    let mpsc_shared_label = "tokio::sync::mpsc, receiver shared by tokio::sync::Mutex";
    let broadcast_label = "tokio::sync::broadcast";

    for (flavor, rt) in [("", &two_workers), (" [current-thread]", &one_thread)] {
        compare(
            c,
            &format!("p2p 1x1{flavor}"),
            mpsc_label,
            1,
            Box::new(move |n| eip_p2p(rt, p, 1, 1, n)),
            Box::new(move |n| mpsc_p2p(rt, p, 1, 1, n)),
        );
        compare(
            c,
            &format!("metrics p2p 1x1{flavor}"),
            "the same channel, its counters not read",
            1,
            Box::new(move |n| watched(|| eip_p2p(rt, p, 1, 1, n))),
            Box::new(move |n| eip_p2p(rt, p, 1, 1, n)),
        );
        compare(
            c,
            &format!("p2p 4x2{flavor}"),
            mpsc_shared_label,
            1,
            Box::new(move |n| eip_p2p(rt, p, 4, 2, n)),
            Box::new(move |n| mpsc_p2p(rt, p, 4, 2, n)),
        );
        for subscribers in [1, 10, 100] {
            compare(
                c,
                &format!("fan-out {subscribers}{flavor}"),
                broadcast_label,
                subscribers,
                Box::new(move |n| eip_fan_out(rt, p, subscribers, n)),
                Box::new(move |n| broadcast_fan_out(rt, p, subscribers, n)),
            );
        }
    }
}

/// Rounds of the alternating measurement behind each compare line.
const ROUNDS: usize = 9;
/// Deliveries (messages times subscribers) per side per round.
const ROUND_DELIVERIES: u64 = 400_000;

/// Benchmarks both sides as one criterion group, then prints the compare and allocs lines.
///
/// The compare line does not reuse criterion's samples, which run one side after the other: on
/// a shared two-core machine the load drifts between the two, and scheduling makes single runs
/// bimodal. Instead it alternates eip and baseline runs for [`ROUNDS`] rounds and compares the
/// medians, so both sides see the same conditions.
fn compare(
    c: &mut Criterion,
    name: &str,
    baseline_label: &str,
    deliveries_per_message: u64,
    eip: Run<'_>,
    baseline: Run<'_>,
) {
    let mut group = c.benchmark_group(name);
    let mut ran = false;
    for (id, run) in [("eip", &eip), ("baseline", &baseline)] {
        group.bench_function(id, |b| {
            ran = true;
            b.iter_custom(run)
        });
    }
    group.finish();
    // Filtered out by the command line, or a `--test` run: nothing to compare.
    if !ran || !measuring() {
        return;
    }
    let messages = (ROUND_DELIVERIES / deliveries_per_message).max(1000);
    let per_message = |run: &Run<'_>| run(messages).as_nanos() as f64 / messages as f64;
    let (x, y) = alternating_medians(ROUNDS, |_| per_message(&eip), |_| per_message(&baseline));
    print_compare(name, x, y, baseline_label);
    let messages = (ALLOC_PASS_DELIVERIES / deliveries_per_message).min(ALLOC_PASS_MAX_MESSAGES);
    let (a, b) = (
        allocations_per_message(&eip, messages),
        allocations_per_message(&baseline, messages),
    );
    println!("allocs: {name}: eip {a:.3} allocs/msg, baseline {b:.3} allocs/msg");
}

/// Allocations each further message costs: runs of `messages` and `2 * messages` counted, the
/// difference divided by `messages`.
fn allocations_per_message(run: &Run<'_>, messages: u64) -> f64 {
    let count = |messages| {
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        run(messages);
        ALLOCATIONS.load(Ordering::SeqCst) - before
    };
    let (once, twice) = (count(messages), count(2 * messages));
    (twice as f64 - once as f64) / messages as f64
}

/// How often `metrics p2p 1x1`'s reader reads the channel's counters.
const SCRAPE_EVERY: Duration = Duration::from_millis(1);

thread_local! {
    /// The channel `eip_p2p` runs on, for [`watched`]'s reader to find.
    static WATCHED: std::cell::RefCell<Option<std::sync::mpsc::Sender<PointToPoint>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `run` (an `eip_p2p`) while a thread reads its channel's counters every
/// [`SCRAPE_EVERY`]; returns what `run` returned, after the reader stopped.
fn watched(run: impl FnOnce() -> Duration) -> Duration {
    let (tx, rx) = std::sync::mpsc::channel::<PointToPoint>();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let Ok(channel) = rx.recv() else { return 0u64 };
            let mut reads = 0u64;
            loop {
                std::hint::black_box(channel.stats());
                reads += 1;
                if stop.load(Ordering::Relaxed) {
                    return reads;
                }
                std::thread::sleep(SCRAPE_EVERY);
            }
        })
    };
    WATCHED.with(|w| *w.borrow_mut() = Some(tx));
    let elapsed = run();
    WATCHED.with(|w| w.borrow_mut().take());
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().expect("the reader thread ends");
    assert!(reads > 0, "the reader got the channel");
    elapsed
}

/// `messages` split as evenly as possible between `producers`.
fn shares(messages: u64, producers: u64) -> impl Iterator<Item = u64> {
    (0..producers).map(move |i| messages / producers + u64::from(i < messages % producers))
}

fn eip_p2p(
    rt: &Runtime,
    payload: &Bytes,
    producers: u64,
    consumers: u64,
    messages: u64,
) -> Duration {
    rt.block_on(async {
        let channel = PointToPoint::new("bench.p2p", CAPACITY).expect("valid channel");
        WATCHED.with(|w| {
            if let Some(watcher) = w.borrow().as_ref() {
                let _ = watcher.send(channel.clone());
            }
        });
        let received = Arc::new(AtomicU64::new(0));
        let consumer_tasks: Vec<_> = (0..consumers)
            .map(|_| {
                let mut receiver = channel.receiver();
                let channel = channel.clone();
                let received = received.clone();
                tokio::spawn(async move {
                    while let Some(delivery) = receiver.recv().await {
                        delivery.ack();
                        if received.fetch_add(1, Ordering::Relaxed) + 1 == messages {
                            // The last one: closing the empty channel ends every consumer.
                            channel.delete().await;
                        }
                    }
                })
            })
            .collect();
        let start = Instant::now();
        let producer_tasks: Vec<_> = shares(messages, producers)
            .map(|share| {
                let channel = channel.clone();
                let payload = payload.clone();
                tokio::spawn(async move {
                    for _ in 0..share {
                        channel
                            .send(Message::new(payload.clone()))
                            .await
                            .expect("channel open");
                    }
                })
            })
            .collect();
        for task in producer_tasks.into_iter().chain(consumer_tasks) {
            task.await.expect("task finished");
        }
        let elapsed = start.elapsed();
        assert_eq!(received.load(Ordering::Relaxed), messages);
        elapsed
    })
}

fn mpsc_p2p(
    rt: &Runtime,
    payload: &Bytes,
    producers: u64,
    consumers: u64,
    messages: u64,
) -> Duration {
    rt.block_on(async {
        let (tx, rx) = mpsc::channel::<Message>(CAPACITY);
        let received = Arc::new(AtomicU64::new(0));
        let consumer_tasks: Vec<_> = if consumers == 1 {
            let received = received.clone();
            let mut rx = rx;
            vec![tokio::spawn(async move {
                while rx.recv().await.is_some() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            })]
        } else {
            let rx = Arc::new(Mutex::new(rx));
            (0..consumers)
                .map(|_| {
                    let rx = rx.clone();
                    let received = received.clone();
                    tokio::spawn(async move {
                        while rx.lock().await.recv().await.is_some() {
                            received.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect()
        };
        let start = Instant::now();
        let producer_tasks: Vec<_> = shares(messages, producers)
            .map(|share| {
                let tx = tx.clone();
                let payload = payload.clone();
                tokio::spawn(async move {
                    for _ in 0..share {
                        tx.send(Message::new(payload.clone()))
                            .await
                            .expect("receiver alive");
                    }
                })
            })
            .collect();
        // The consumers end when the last sender (each producer's clone) is gone.
        drop(tx);
        for task in producer_tasks.into_iter().chain(consumer_tasks) {
            task.await.expect("task finished");
        }
        let elapsed = start.elapsed();
        assert_eq!(received.load(Ordering::Relaxed), messages);
        elapsed
    })
}

fn eip_fan_out(rt: &Runtime, payload: &Bytes, subscribers: u64, messages: u64) -> Duration {
    rt.block_on(async {
        let channel = PublishSubscribe::new("bench.fan-out", CAPACITY).expect("valid channel");
        let subscriber_tasks: Vec<_> = (0..subscribers)
            .map(|_| {
                let mut subscriber = channel.subscribe();
                tokio::spawn(async move {
                    for _ in 0..messages {
                        subscriber.recv().await.expect("channel open").ack();
                    }
                })
            })
            .collect();
        let start = Instant::now();
        let publisher = {
            let channel = channel.clone();
            let payload = payload.clone();
            tokio::spawn(async move {
                for _ in 0..messages {
                    channel
                        .publish(Message::new(payload.clone()))
                        .await
                        .expect("channel open");
                }
            })
        };
        for task in [publisher].into_iter().chain(subscriber_tasks) {
            task.await.expect("task finished");
        }
        start.elapsed()
    })
}

fn broadcast_fan_out(rt: &Runtime, payload: &Bytes, subscribers: u64, messages: u64) -> Duration {
    rt.block_on(async {
        let (tx, _) = broadcast::channel::<Message>(CAPACITY);
        let subscriber_tasks: Vec<_> = (0..subscribers)
            .map(|_| {
                let mut rx = tx.subscribe();
                tokio::spawn(async move {
                    for _ in 0..messages {
                        rx.recv().await.expect("no message lost");
                    }
                })
            })
            .collect();
        let start = Instant::now();
        let publisher = {
            let payload = payload.clone();
            tokio::spawn(async move {
                // Room known to be free: `len` (messages some receiver has not seen yet) only
                // shrinks between our sends, and costs a lock per probe, so ask only when out.
                let mut room = 0;
                for _ in 0..messages {
                    while room == 0 {
                        room = CAPACITY - tx.len();
                        if room == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                    tx.send(Message::new(payload.clone()))
                        .expect("subscribers alive");
                    room -= 1;
                }
            })
        };
        for task in [publisher].into_iter().chain(subscriber_tasks) {
            task.await.expect("task finished");
        }
        start.elapsed()
    })
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = channels
}
criterion_main!(benches);
