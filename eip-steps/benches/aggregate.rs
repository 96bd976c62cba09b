//! The Aggregator against a raw HashMap grouping loop, measured in the same run.
//!
//! `aggregate`: 1M messages, each with a `correlation-id` header, in groups of 100; 1 000 groups
//! open at a time (messages come round-robin over 1 000 keys in blocks of 100 000). eip's side
//! calls an [`Aggregator`] (completion at size 100, in memory) in front of a service that takes
//! each aggregate; the baseline groups the same messages in a `HashMap<String, Vec<Message>>`
//! and, at 100, makes the same aggregate. Both combine with the same function (the payloads
//! joined into a JSON array, byte by byte), so the ratio is what the aggregator's machinery
//! costs: key and sequence headers read, the store, the decision, the service calls. The
//! aggregator makes room for 100 messages when it opens a group (it knows the size rule); the
//! baseline is the plain loop and grows its vectors as they fill.
//!
//! It prints `compare: aggregate: eip X ns/msg, baseline Y ns/msg (HashMap grouping), ratio R`,
//! R = X / Y from the medians of rounds run alternately (the machine's load drifts; alternating
//! keeps both sides under the same drift).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Ready;
use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::message::{HeaderValue, Message, MessageId, names};
use eip_steps::aggregate::Aggregator;
use tower::{Service, ServiceExt};

const MESSAGES: usize = 1_000_000;
const GROUP: usize = 100;
const OPEN: usize = 1_000;
const ROUNDS: usize = 7;

/// Takes each aggregate and counts it.
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

/// The payloads joined into a JSON array (each payload is JSON already).
fn combine(messages: &[Message]) -> Bytes {
    let len: usize = messages.iter().map(|m| m.payload().len() + 1).sum();
    let mut out = BytesMut::with_capacity(len + 1);
    out.put_u8(b'[');
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(m.payload());
    }
    out.put_u8(b']');
    out.freeze()
}

fn messages(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            let block = i / (GROUP * OPEN);
            let key = format!("group-{}", block * OPEN + i % OPEN);
            Message::builder(Bytes::from(format!("{{\"reading\":{i}}}")))
                .correlation_id(key)
                .build()
        })
        .collect()
}

fn eip(rt: &tokio::runtime::Runtime, input: Vec<Message>) -> f64 {
    let config = Aggregator::builder()
        .complete_at_size(GROUP)
        .combine_with(|m| Ok(combine(m)))
        .build()
        .expect("configuration");
    let mut agg = Aggregator::new(Sink, config);
    let n = input.len();
    let start = Instant::now();
    rt.block_on(async {
        for m in input {
            let svc = agg.ready().await.expect("ready");
            black_box(svc.call(m).await.expect("aggregated"));
        }
    });
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(agg.stats().completed as usize, n / GROUP);
    ns
}

fn baseline(input: Vec<Message>) -> f64 {
    let n = input.len();
    let start = Instant::now();
    let mut groups: HashMap<String, Vec<Message>> = HashMap::new();
    let mut done = 0;
    for m in input {
        let Some(HeaderValue::Str(key)) = m.headers().get(names::CORRELATION_ID) else {
            continue;
        };
        let key = key.clone();
        let group = groups.entry(key).or_default();
        group.push(m);
        if group.len() == GROUP {
            let key = group[0]
                .correlation_id()
                .ok()
                .flatten()
                .unwrap_or("")
                .to_owned();
            if let Some(group) = groups.remove(&key) {
                let mut headers = group[0].headers().clone();
                headers.insert(names::CORRELATION_ID, key);
                black_box(Message::from_parts(
                    MessageId::new(),
                    headers,
                    combine(&group),
                ));
                done += 1;
            }
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(done, n / GROUP);
    ns
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn aggregate(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let small = messages(GROUP * OPEN);
    let mut g = c.benchmark_group("aggregate");
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
        x.push(eip(&rt, all.clone()));
        y.push(baseline(all.clone()));
    }
    let (x, y) = (median(x), median(y));
    println!(
        "compare: aggregate: eip {x:.1} ns/msg, baseline {y:.1} ns/msg (HashMap grouping), ratio {:.2}",
        x / y
    );
}

criterion_group!(benches, aggregate);
criterion_main!(benches);
