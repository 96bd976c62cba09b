//! The in-memory Idempotent Receiver against a HashSet loop, measured in the same run.
//!
//! `dedupe`: 1M messages, one in ten a copy (same id) of one of the 1 000 messages before it.
//! eip's side calls an [`IdempotentReceiver`] (keyed by message id, a window longer than the
//! run, room for every key) in front of a service that takes each original; the baseline
//! inserts each message's id into a `HashSet<MessageId>` and passes on those it had not seen.
//! The ratio is what the receiver costs over the plainest check: the key as text, the window's
//! bookkeeping, the service calls.
//!
//! It prints `compare: dedupe: eip X ns/msg, baseline Y ns/msg (HashSet loop), ratio R`, R = X
//! / Y from the medians of rounds run alternately.

use std::collections::HashSet;
use std::convert::Infallible;
use std::future::Ready;
use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::message::{Message, MessageId};
use eip_steps::dedupe::{DedupeConfig, IdempotentReceiver};
use tower::{Service, ServiceExt};

const MESSAGES: usize = 1_000_000;
const ROUNDS: usize = 7;

#[derive(Clone, Default)]
struct Sink;

impl Service<Message> for Sink {
    type Response = ();
    type Error = Infallible;
    type Future = Ready<Result<(), Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, msg: Message) -> Self::Future {
        black_box(msg);
        std::future::ready(Ok(()))
    }
}

/// `n` messages, every tenth a copy of one of the 1 000 before it.
fn messages(n: usize) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(n);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..n {
        if i % 10 == 9 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let back = 1 + (x % 1_000) as usize;
            out.push(out[i.saturating_sub(back)].clone());
        } else {
            out.push(Message::new(format!("{{\"n\":{i}}}")));
        }
    }
    out
}

fn eip(rt: &tokio::runtime::Runtime, input: Vec<Message>) -> (f64, u64) {
    let config = DedupeConfig::new(Duration::from_secs(3_600)).max_keys(input.len());
    let mut dedupe = IdempotentReceiver::new(Sink, config);
    let n = input.len();
    let start = Instant::now();
    rt.block_on(async {
        for m in input {
            let svc = dedupe.ready().await.expect("ready");
            black_box(svc.call(m).await.expect("deduped"));
        }
    });
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    (ns, dedupe.stats().duplicates)
}

fn baseline(input: Vec<Message>) -> (f64, u64) {
    let n = input.len();
    let start = Instant::now();
    let mut seen: HashSet<MessageId> = HashSet::new();
    let mut duplicates = 0;
    for m in input {
        if seen.insert(m.id()) {
            black_box(m);
        } else {
            duplicates += 1;
        }
    }
    (start.elapsed().as_nanos() as f64 / n as f64, duplicates)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn dedupe(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let small = messages(100_000);
    let mut g = c.benchmark_group("dedupe");
    g.sample_size(10);
    g.bench_function("eip 100k", |b| b.iter(|| eip(&rt, small.clone())));
    g.bench_function("baseline 100k", |b| b.iter(|| baseline(small.clone())));
    g.finish();
    if !measuring() {
        return;
    }
    let all = messages(MESSAGES);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (ns, dups) = eip(&rt, all.clone());
        let (base_ns, base_dups) = baseline(all.clone());
        assert_eq!(dups, base_dups, "both sides find the same duplicates");
        x.push(ns);
        y.push(base_ns);
    }
    let (x, y) = (median(x), median(y));
    println!(
        "compare: dedupe: eip {x:.1} ns/msg, baseline {y:.1} ns/msg (HashSet loop), ratio {:.2}",
        x / y
    );
}

criterion_group!(benches, dedupe);
criterion_main!(benches);
