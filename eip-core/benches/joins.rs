//! A message published into a chain of ten joins against the same ten hops done by hand with
//! point-to-point channels, measured in the same run.
//!
//! - eip: channels `channel0` to `channel10`, each publish-subscribe with one subscriber, joined
//!   in a chain (hop count 10). One publish to `channel0` stores the message on all eleven; the
//!   subscribers then take and ack their copy.
//! - baseline: eleven point-to-point channels; the message is sent to the first, received,
//!   acked and sent on to the next, ten times.
//!
//! Both store the message eleven times and ack it eleven times; the joins add the hop
//! arithmetic, the filter-free crossing and loop detection. Prints
//! `compare: join chain 10: eip X ns/msg, baseline Y ns/msg (10 point-to-point hops), ratio R`
//! from medians of alternating rounds on a current-thread runtime.

use std::time::{Duration, Instant};

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::channel::{PointToPoint, PublishSubscribe, Receiver, Subscriber};
use eip_core::join::Join;
use eip_core::message::Message;
use support::{alternating_medians, measuring, print_compare};

const HOPS: usize = 10;

struct JoinChain {
    entry: PublishSubscribe,
    subscribers: Vec<Subscriber>,
}

impl JoinChain {
    fn new() -> Self {
        let channels: Vec<PublishSubscribe> = (0..=HOPS)
            .map(|i| PublishSubscribe::new(&format!("channel{i}"), 64).expect("valid channel"))
            .collect();
        for pair in channels.windows(2) {
            Join::builder(pair[0].clone(), pair[1].clone())
                .create()
                .expect("valid join");
        }
        let subscribers = channels.iter().map(PublishSubscribe::subscribe).collect();
        JoinChain {
            entry: channels[0].clone(),
            subscribers,
        }
    }

    async fn run(&mut self, messages: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..messages {
            self.entry
                .publish(Message::new("tick"))
                .await
                .expect("channel open");
            for s in &mut self.subscribers {
                s.recv().await.expect("stored").ack();
            }
        }
        start.elapsed()
    }
}

struct HandChain {
    queues: Vec<PointToPoint>,
    receivers: Vec<Receiver>,
}

impl HandChain {
    fn new() -> Self {
        let queues: Vec<PointToPoint> = (0..=HOPS)
            .map(|i| PointToPoint::new(&format!("queue{i}"), 64).expect("valid channel"))
            .collect();
        let receivers = queues.iter().map(PointToPoint::receiver).collect();
        HandChain { queues, receivers }
    }

    async fn run(&mut self, messages: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..messages {
            let mut msg = Message::new("tick");
            for (queue, receiver) in self.queues.iter().zip(&mut self.receivers) {
                queue.send(msg).await.expect("channel open");
                let delivery = receiver.recv().await.expect("stored");
                msg = delivery.message().clone();
                delivery.ack();
            }
        }
        start.elapsed()
    }
}

fn joins(c: &mut Criterion) {
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let mut eip = JoinChain::new();
    let mut hand = HandChain::new();
    let mut group = c.benchmark_group("join chain 10");
    group.bench_function("eip", |b| {
        b.iter_custom(|n| one_thread.block_on(eip.run(n)))
    });
    group.bench_function("baseline", |b| {
        b.iter_custom(|n| one_thread.block_on(hand.run(n)))
    });
    group.finish();
    if !measuring() {
        return;
    }
    let messages = 20_000;
    let per_message = |elapsed: Duration| elapsed.as_nanos() as f64 / messages as f64;
    let (x, y) = alternating_medians(
        9,
        |_| per_message(one_thread.block_on(eip.run(messages))),
        |_| per_message(one_thread.block_on(hand.run(messages))),
    );
    print_compare("join chain 10", x, y, "10 point-to-point hops");
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = joins
}
criterion_main!(benches);
