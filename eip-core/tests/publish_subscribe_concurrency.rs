//! The Publish-Subscribe Channel under real concurrency: publishers (some giving up while they
//! wait), subscribers that ack, nack, drop and reject at random, a durable one that detaches and
//! re-attaches, and one that subscribes and unsubscribes over and over, on a multi-thread
//! runtime. Every subscription gets each message stored while it existed exactly once, in each
//! publisher's order; a publish given up stored nothing.
//! (The same guarantees step by step, against a model: `publish_subscribe_properties.rs`.)

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use eip_core::channel::{DeadLetterChannel, PublishSubscribe, Receiver, Subscriber};
use eip_core::message::{DeathReason, MessageId};
use eip_core::{Delivery, Message, Outcome};
use tokio::time::timeout;

const CHANNEL: &str = "events";

const PUBLISHERS: usize = 3;
/// Publishes each publisher tries; every fifth gives up if it waits.
const PER_PUBLISHER: usize = 1000;
/// Subscriptions the coming-and-going subscriber makes at most.
const LIVES: usize = 200;

/// A small deterministic generator, so the concurrent run needs no seed from outside.
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: u64) -> Self {
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Publisher and position, from the headers.
fn stamp(msg: &Message) -> (usize, i64) {
    let get = |name| msg.headers().get(name).and_then(|v| v.as_int()).unwrap();
    (get("publisher") as usize, get("seq"))
}

/// What one steady subscriber saw.
#[derive(Default)]
struct Seen {
    /// Messages delivered for the first time, in that order.
    first: Vec<MessageId>,
    acked: Vec<MessageId>,
    rejected: Vec<MessageId>,
    deliveries: HashMap<MessageId, u32>,
    requeues: HashMap<MessageId, u32>,
    /// The last position delivered for the first time, per publisher.
    last: [Option<i64>; PUBLISHERS],
}

impl Seen {
    fn settled(&self) -> usize {
        self.acked.len() + self.rejected.len()
    }

    fn delivered(&mut self, who: usize, d: &Delivery) {
        let id = d.message().id();
        let n = self.deliveries.entry(id).or_default();
        *n += 1;
        let requeues = self.requeues.get(&id).copied().unwrap_or(0);
        assert_eq!(
            *n,
            requeues + 1,
            "subscriber {who}: delivered again without a nack or a drop"
        );
        assert_eq!(d.message().redelivery_count().unwrap(), requeues);
        if requeues == 0 {
            let (publisher, seq) = stamp(d.message());
            assert!(
                self.last[publisher] < Some(seq),
                "subscriber {who}: first deliveries from publisher {publisher} out of order"
            );
            self.last[publisher] = Some(seq);
            self.first.push(id);
        }
    }
}

/// The same guarantees with real concurrency, on a multi-thread runtime: publishers (some giving
/// up on a publish that waits), subscribers acking, nacking, dropping and rejecting at random (a
/// durable one detaching and re-attaching now and then), and a subscriber that comes and goes.
#[test]
fn concurrent_subscribers_get_each_message_once() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // A guard only: a run that lost a message or a wake-up stops here.
        timeout(Duration::from_secs(30), concurrent_run())
            .await
            .expect("a publisher or a subscriber is stuck");
    });
}

/// How far the publishers are: how many messages they stored, how many of them finished.
#[derive(Default)]
struct Progress {
    stored: AtomicUsize,
    finished: AtomicUsize,
}

impl Progress {
    /// Whether every publisher finished and `settled` is all they stored.
    fn all_settled(&self, settled: usize) -> bool {
        self.finished.load(Ordering::SeqCst) == PUBLISHERS
            && settled >= self.stored.load(Ordering::SeqCst)
    }
}

/// Publishes its messages in order; returns those stored (a publish given up on is left out:
/// it must reach nobody).
async fn publisher(
    ch: PublishSubscribe,
    publisher: usize,
    progress: Arc<Progress>,
) -> Vec<MessageId> {
    let mut stored = Vec::new();
    for seq in 0..PER_PUBLISHER {
        let msg = Message::builder("x")
            .header("publisher", publisher as i64)
            .header("seq", seq as i64)
            .build();
        let id = msg.id();
        let outcome = if seq % 5 == 4 {
            timeout(Duration::from_micros(100), ch.publish(msg)).await
        } else {
            Ok(ch.publish(msg).await)
        };
        if let Ok(outcome) = outcome {
            assert_eq!(outcome.unwrap(), Outcome::Accepted);
            stored.push(id);
            progress.stored.fetch_add(1, Ordering::SeqCst);
        }
    }
    progress.finished.fetch_add(1, Ordering::SeqCst);
    stored
}

/// Consumes until every stored message is settled, settling at random; a durable subscriber
/// detaches and re-attaches now and then.
async fn steady(
    ch: PublishSubscribe,
    who: usize,
    sub: Subscriber,
    progress: Arc<Progress>,
) -> Seen {
    let mut sub = Some(sub);
    let mut rng = Xorshift::new(who as u64 + 1);
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !progress.all_settled(seen.settled()) && Instant::now() < deadline {
        let r = rng.next();
        if r.is_multiple_of(40) && sub.as_ref().is_some_and(|s| s.is_durable()) {
            drop(sub.take());
            sub = Some(ch.durable_subscribe("audit"));
        }
        let Some(rx) = sub.as_mut() else { break };
        let d = match timeout(Duration::from_millis(10), rx.recv()).await {
            Ok(Some(d)) => d,
            Ok(None) => panic!("subscriber {who}: subscription closed"),
            Err(_) => continue,
        };
        seen.delivered(who, &d);
        let id = d.message().id();
        match r % 10 {
            0 => {
                *seen.requeues.entry(id).or_default() += 1;
                d.nack();
            }
            1 => {
                *seen.requeues.entry(id).or_default() += 1;
                drop(d);
            }
            2 => {
                seen.rejected.push(id);
                d.reject("random").await;
            }
            _ => {
                seen.acked.push(id);
                d.ack();
            }
        }
        if r.is_multiple_of(7) {
            tokio::task::yield_now().await;
        }
    }
    seen
}

/// Subscribes (durable and not, in turn), acks a few messages, ends the subscription, again
/// and again while the publishers run. Returns what each subscription got, and what the
/// unsubscribes said they dead-lettered.
async fn coming_and_going(
    ch: PublishSubscribe,
    progress: Arc<Progress>,
) -> (Vec<Vec<MessageId>>, usize) {
    let mut lives = Vec::new();
    let mut unsubscribed = 0;
    for life in 0..LIVES {
        if progress.finished.load(Ordering::SeqCst) == PUBLISHERS {
            break;
        }
        let durable = life % 2 == 0;
        let sub = if durable {
            ch.durable_subscribe("churn")
        } else {
            ch.subscribe()
        };
        // Prefetch 1: nothing is left prefetched when the subscription ends.
        let mut rx = Receiver::clone(&sub).with_prefetch(1);
        let mut got = Vec::new();
        for _ in 0..life % 6 {
            match timeout(Duration::from_millis(2), rx.recv()).await {
                Ok(Some(d)) => {
                    assert_eq!(d.message().redelivery_count().unwrap(), 0);
                    got.push(d.message().id());
                    d.ack();
                }
                Ok(None) => panic!("the coming-and-going subscription closed"),
                Err(_) => break,
            }
        }
        drop(rx);
        if durable {
            unsubscribed += ch.unsubscribe("churn").await.expect("it exists");
        }
        drop(sub);
        lives.push(got);
        tokio::task::yield_now().await;
    }
    (lives, unsubscribed)
}

async fn concurrent_run() {
    let dead = DeadLetterChannel::new("dead", 100_000).unwrap();
    let ch = PublishSubscribe::builder(CHANNEL)
        .capacity(8)
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let progress = Arc::new(Progress::default());
    // Subscribed before anything is published: they must get every message.
    let steady: Vec<_> = [
        ch.subscribe(),
        ch.subscribe(),
        ch.durable_subscribe("audit"),
    ]
    .into_iter()
    .enumerate()
    .map(|(who, sub)| tokio::spawn(steady(ch.clone(), who, sub, progress.clone())))
    .collect();
    let comer = tokio::spawn(coming_and_going(ch.clone(), progress.clone()));
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| tokio::spawn(publisher(ch.clone(), p, progress.clone())))
        .collect();

    // Where each stored message is in its publisher's order.
    let mut position: HashMap<MessageId, (usize, usize)> = HashMap::new();
    for (p, publisher) in publishers.into_iter().enumerate() {
        for (i, id) in publisher.await.unwrap().into_iter().enumerate() {
            position.insert(id, (p, i));
        }
    }
    let mut all: Vec<MessageId> = position.keys().copied().collect();
    all.sort();

    let mut rejected = Vec::new();
    for (who, s) in steady.into_iter().enumerate() {
        let seen = s.await.unwrap();
        let mut first = seen.first.clone();
        first.sort();
        assert_eq!(
            first, all,
            "subscriber {who}: each stored message delivered once"
        );
        let mut settled: Vec<MessageId> =
            seen.acked.iter().chain(&seen.rejected).copied().collect();
        settled.sort();
        assert_eq!(settled, all, "subscriber {who}: each settled once");
        rejected.extend(seen.rejected);
    }

    let (lives, unsubscribed) = comer.await.unwrap();
    for got in &lives {
        // Per publisher, a subscription gets a run of consecutive messages: it misses nothing
        // stored while it existed.
        let mut last: [Option<usize>; PUBLISHERS] = [None; PUBLISHERS];
        for id in got {
            let &(p, i) = position
                .get(id)
                .expect("the coming-and-going subscriber got a message never stored");
            assert!(
                last[p].is_none_or(|l| i == l + 1),
                "a subscription missed or repeated a message of publisher {p}: {:?} then {i}",
                last[p]
            );
            last[p] = Some(i);
        }
    }

    let mut dead_rejected = Vec::new();
    let mut dead_deleted = 0;
    let mut dl = dead.receiver();
    while let Ok(d) = dl.try_recv() {
        let id = d.message().id();
        assert!(position.contains_key(&id), "a dead letter never stored");
        match d.message().death().unwrap().unwrap().reason {
            DeathReason::Rejected => dead_rejected.push(id),
            DeathReason::ChannelDeleted => dead_deleted += 1,
            other => panic!("unexpected dead letter reason {other}"),
        }
        d.ack();
    }
    rejected.sort();
    dead_rejected.sort();
    assert_eq!(dead_rejected, rejected, "every rejected copy, once");
    assert_eq!(
        dead_deleted, unsubscribed,
        "what the unsubscribes counted, and nothing else"
    );

    assert_eq!(ch.unsubscribe("audit").await, Some(0));
    assert_eq!(ch.subscriber_count(), 0);
    let stats = ch.stats();
    assert_eq!((stats.depth, stats.in_flight), (0, 0));
}
