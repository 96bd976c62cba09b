//! Route steps that keep state on a durable route, in msg/s, against the same route without
//! the step and against the in-memory loop the issue names, in the same run.
//!
//! Each round compiles a flow on a fresh data directory: `orders` (durable) → one route →
//! `out` (durable, an output the running flow acknowledges), fills `orders` with the round's
//! messages first (sends in tasks of their own, so their commits batch), then starts the flow
//! and times until it is idle: every message taken, processed and acknowledged. What is timed
//! is the route's work on a durable channel, the fsyncs of its commits included.
//!
//! - `dedupe durable`: messages one in ten a copy (same key) of one before it, through
//!   `dedupe: '.k'` (each original's key written in the commit that acks it). Compared with the
//!   same route without the step (`plain durable route`), and with a `HashSet` loop over the
//!   keys (the baseline: what deduplication costs in memory alone).
//! - `aggregate durable`: messages in groups of 100, through `aggregate: {key: '.g', size:
//!   100}` (each held message written in the commit that acks it, each group deleted in one).
//!   Compared with the plain durable route, and with a `HashMap` grouping loop.
//! - `concurrency 16`: the plain durable route and the dedupe route with `concurrency: 16`,
//!   each against itself with concurrency 1: sixteen messages in processing at once share the
//!   store's fsyncs (group commit) where one at a time waits for one each.
//!
//! Run: `cargo bench -p eip-bench --bench durable_steps` (add `dedupe`, `aggregate` or
//! `concurrency` to run one). `cargo test -p eip-bench --benches` runs a small version.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use eip_bench::{Filter, TempDir, alternating_medians, measuring, per_item, print_compare};
use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, StoreOptions};
use eip_dsl::load;

const ROUNDS: usize = 3;

/// The flow of one round: `orders` → route (with `steps`, if any) → `out`.
fn flow(steps: &str) -> String {
    flow_at(steps, 1)
}

/// [`flow`] with the route's `concurrency:`.
fn flow_at(steps: &str, concurrency: usize) -> String {
    let steps = match steps {
        "" => String::new(),
        step => format!("    steps:\n      - {step}\n"),
    };
    format!(
        "
channels:
  orders: {{kind: point-to-point, durable: true, capacity: 2000000}}
  out: {{kind: point-to-point, durable: true, capacity: 2000000}}
routes:
  - name: bench
    from: orders
    concurrency: {concurrency}
{steps}    to: out
"
    )
}

/// One round: `messages` into `orders`, then the flow started and timed until idle; ns/msg
/// and how many reached `out`.
fn round(yaml: &str, messages: &[Message]) -> (f64, usize) {
    let plan = load::load_str(yaml, "bench.yaml", Path::new(".")).expect("the flow validates");
    let dir = TempDir::new("durable-steps");
    let store = StoreOptions {
        data_dir: dir.path().to_owned(),
        max_bytes: None,
    };
    let runtime = eip_bench::runtime();
    runtime.block_on(async {
        let flow = compile::compile_with(&plan, &store).expect("compiles");
        let Some(Channel::PointToPoint(orders)) =
            flow.channels().iter().find(|c| c.name() == "orders")
        else {
            panic!("orders is a queue")
        };
        let sends = messages.iter().cloned().map(|msg| {
            let orders = orders.clone();
            tokio::spawn(async move { orders.send(msg).await.map(|_| ()) })
        });
        for sent in futures::future::join_all(sends.collect::<Vec<_>>()).await {
            sent.expect("the send task").expect("accepted");
        }
        let out = Arc::new(AtomicUsize::new(0));
        let counted = out.clone();
        let start = Instant::now();
        let running = flow.start(Arc::new(move |_: &str, msg: &Message| {
            black_box(msg);
            counted.fetch_add(1, Ordering::Relaxed);
        }));
        assert!(
            running.settle(Duration::from_secs(600)).await,
            "the round did not finish in 10 minutes"
        );
        let elapsed = start.elapsed();
        running.stop(Duration::from_secs(10)).await;
        (
            per_item(elapsed, messages.len()),
            out.load(Ordering::Relaxed),
        )
    })
}

/// `n` messages keyed `k`, one in ten the key of one of the 100 before it.
fn with_copies(n: usize) -> (Vec<Message>, Vec<u64>) {
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..n {
        if i % 10 == 9 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let back = 1 + (x % 100) as usize;
            keys.push(keys[i.saturating_sub(back)]);
        } else {
            keys.push(i as u64);
        }
    }
    let messages = keys
        .iter()
        .map(|k| Message::new(format!("{{\"k\":{k},\"pad\":\"{}\"}}", "x".repeat(64))))
        .collect();
    (messages, keys)
}

/// `n` messages in groups of 100, ten groups open at a time.
fn grouped(n: usize) -> (Vec<Message>, Vec<u64>) {
    let groups: Vec<u64> = (0..n as u64).map(|i| (i / 1_000) * 10 + i % 10).collect();
    let messages = groups
        .iter()
        .enumerate()
        .map(|(i, g)| Message::new(format!("{{\"g\":{g},\"n\":{i}}}")))
        .collect();
    (messages, groups)
}

fn hash_set(keys: &[u64]) -> (f64, usize) {
    let start = Instant::now();
    let mut seen = HashSet::new();
    let mut passed = 0;
    for k in keys {
        if seen.insert(*k) {
            passed += 1;
        }
    }
    (per_item(start.elapsed(), keys.len()), black_box(passed))
}

fn hash_map(groups: &[u64], messages: &[Message]) -> (f64, usize) {
    let start = Instant::now();
    let mut open: HashMap<u64, Vec<Message>> = HashMap::new();
    let mut done = 0;
    for (g, msg) in groups.iter().zip(messages) {
        let group = open.entry(*g).or_default();
        group.push(msg.clone());
        if group.len() == 100 {
            black_box(open.remove(g));
            done += 1;
        }
    }
    (per_item(start.elapsed(), groups.len()), done)
}

fn compare(
    name: &str,
    step: &str,
    messages: &[Message],
    expected_out: usize,
    memory: f64,
    memory_label: &str,
) {
    let with = flow(step);
    let without = flow("");
    let (eip, plain) = alternating_medians(
        ROUNDS,
        |_| {
            let (ns, out) = round(&with, messages);
            assert_eq!(out, expected_out, "{name}: what came out");
            ns
        },
        |_| round(&without, messages).0,
    );
    print_compare(name, eip, plain, "the same durable route without the step");
    print_compare(name, eip, memory, memory_label);
    println!(
        "{name}: {:.0} msg/s with the step, {:.0} msg/s without",
        1e9 / eip,
        1e9 / plain
    );
}

/// The route with `step` (none for `""`) at `concurrency: 16` against the same route one
/// message at a time.
fn compare_concurrency(name: &str, step: &str, messages: &[Message], expected_out: usize) {
    let (wide, narrow) = (flow_at(step, 16), flow_at(step, 1));
    let (eip, one) = alternating_medians(
        ROUNDS,
        |_| {
            let (ns, out) = round(&wide, messages);
            assert_eq!(out, expected_out, "{name}: what came out");
            ns
        },
        |_| round(&narrow, messages).0,
    );
    print_compare(name, eip, one, "the same durable route with concurrency 1");
    println!(
        "{name}: {:.0} msg/s with concurrency 16, {:.0} msg/s with 1",
        1e9 / eip,
        1e9 / one
    );
}

fn main() {
    let filter = Filter::from_args();
    let n = if measuring() { 20_000 } else { 2_000 };
    if filter.selects("dedupe") {
        let (messages, keys) = with_copies(n);
        let originals = keys.iter().collect::<HashSet<_>>().len();
        let (memory, passed) = hash_set(&keys);
        assert_eq!(passed, originals);
        compare(
            "dedupe durable",
            "dedupe: '.k'",
            &messages,
            originals,
            memory,
            "HashSet loop in memory",
        );
    }
    if filter.selects("aggregate") {
        let (messages, groups) = grouped(n);
        let (memory, done) = hash_map(&groups, &messages);
        assert_eq!(done, n / 100);
        compare(
            "aggregate durable",
            "aggregate: {key: '.g', size: 100}",
            &messages,
            n / 100,
            memory,
            "HashMap grouping loop in memory",
        );
    }
    if filter.selects("concurrency 16") {
        let (messages, keys) = with_copies(n);
        let originals = keys.iter().collect::<HashSet<_>>().len();
        compare_concurrency("plain durable concurrency 16", "", &messages, n);
        compare_concurrency(
            "dedupe durable concurrency 16",
            "dedupe: '.k'",
            &messages,
            originals,
        );
    }
}
