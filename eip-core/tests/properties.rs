//! Property tests: random producers, consumers, acks, nacks, rejects and dropped deliveries.
//!
//! Whatever the interleaving, every message sent ends exactly once: acked, or in the dead letter
//! channel. None is lost, and a message is delivered again only after a nack or a dropped
//! delivery (its redelivery count says how many).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eip_core::channel::{DeadLetterChannel, PointToPoint, Selector, TryRecvError};
use eip_core::message::{DeathReason, MessageId, now_millis};
use eip_core::{Delivery, Message};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Send a message; `expired` ones carry a past expiration, `tag` feeds the selectors.
    Send {
        expired: bool,
        tag: bool,
    },
    /// Consumer `c` takes what is next for it (consumer 2 selects tagged messages only).
    Recv {
        consumer: usize,
    },
    /// Settle the held delivery at `index` (modulo the number held) in some way.
    Ack(usize),
    Nack(usize),
    Drop(usize),
    Reject(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<bool>().prop_map(|tag| Op::Send { expired: false, tag }),
        1 => any::<bool>().prop_map(|t| Op::Send { expired: true, tag: t }),
        4 => (0..3usize).prop_map(|consumer| Op::Recv { consumer }),
        3 => any::<usize>().prop_map(Op::Ack),
        1 => any::<usize>().prop_map(Op::Nack),
        1 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::Reject),
    ]
}

#[derive(Default)]
struct Ledger {
    sent: Vec<MessageId>,
    acked: HashMap<MessageId, usize>,
    delivered: HashMap<MessageId, usize>,
    requeued: HashMap<MessageId, usize>,
}

impl Ledger {
    fn delivered(&mut self, d: &Delivery) -> Result<(), TestCaseError> {
        let id = d.message().id();
        let n = self.delivered.entry(id).or_default();
        *n += 1;
        let requeues = self.requeued.get(&id).copied().unwrap_or(0);
        prop_assert_eq!(*n, requeues + 1, "a redelivery only after a nack or a drop");
        prop_assert_eq!(d.message().redelivery_count().unwrap() as usize, requeues);
        prop_assert!(!self.acked.contains_key(&id), "delivered after being acked");
        Ok(())
    }
}

fn run(ops: Vec<Op>, capacity: usize, prefetch: [usize; 3]) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dead = DeadLetterChannel::new("dead", 10_000).unwrap();
        let ch = PointToPoint::builder("work")
            .capacity(capacity)
            .dead_letter_channel(dead.clone())
            .build()
            .unwrap();
        let mut consumers = [
            ch.receiver().with_prefetch(prefetch[0]),
            ch.receiver().with_prefetch(prefetch[1]),
            ch.selective_receiver(Selector::header_equals("tag", true))
                .with_prefetch(prefetch[2]),
        ];
        let mut held: Vec<Delivery> = Vec::new();
        let mut ledger = Ledger::default();
        for op in ops {
            match op {
                Op::Send { expired, tag } => {
                    let mut b = Message::builder("m").header("tag", tag);
                    if expired {
                        b = b.expires_at(now_millis().saturating_sub(1));
                    }
                    let msg = b.build();
                    let id = msg.id();
                    match ch.try_send(msg) {
                        Ok(_) => ledger.sent.push(id),
                        Err(e) => prop_assert_eq!(
                            e.into_message().id(),
                            id,
                            "a refused send gives the message back"
                        ),
                    }
                }
                Op::Recv { consumer } => match consumers[consumer].try_recv() {
                    Ok(d) => {
                        ledger.delivered(&d)?;
                        held.push(d);
                    }
                    Err(TryRecvError::Empty) => {}
                    Err(TryRecvError::Closed) => prop_assert!(false, "channel closed"),
                },
                Op::Ack(i) | Op::Nack(i) | Op::Drop(i) | Op::Reject(i) if !held.is_empty() => {
                    let d = held.swap_remove(i % held.len());
                    let id = d.message().id();
                    match op {
                        Op::Ack(_) => {
                            *ledger.acked.entry(id).or_default() += 1;
                            d.ack();
                        }
                        Op::Nack(_) => {
                            *ledger.requeued.entry(id).or_default() += 1;
                            d.nack();
                        }
                        Op::Drop(_) => {
                            *ledger.requeued.entry(id).or_default() += 1;
                            drop(d);
                        }
                        _ => d.reject("refused").await,
                    }
                }
                _ => {}
            }
        }
        // Settle what is held, close the consumers (their prefetched messages go back, not
        // counted as redeliveries), then drain: everything left must come out.
        drop(consumers);
        for d in held.drain(..) {
            *ledger.requeued.entry(d.message().id()).or_default() += 1;
            drop(d);
        }
        let mut drain = ch.receiver();
        while let Ok(d) = drain.try_recv() {
            ledger.delivered(&d)?;
            *ledger.acked.entry(d.message().id()).or_default() += 1;
            d.ack();
        }
        let mut dead_ids: HashMap<MessageId, usize> = HashMap::new();
        let mut dl = dead.receiver();
        while let Ok(d) = dl.try_recv() {
            let death = d.message().death().unwrap().unwrap();
            prop_assert!(matches!(
                death.reason,
                DeathReason::Expired | DeathReason::Rejected
            ));
            *dead_ids.entry(d.message().id()).or_default() += 1;
            d.ack();
        }
        for id in &ledger.sent {
            let acked = ledger.acked.get(id).copied().unwrap_or(0);
            let dead = dead_ids.get(id).copied().unwrap_or(0);
            prop_assert_eq!(
                acked + dead,
                1,
                "message {} acked {} times, dead {} times",
                id,
                acked,
                dead
            );
        }
        prop_assert_eq!(
            ledger.sent.len(),
            ledger.acked.len() + dead_ids.len(),
            "nothing extra appeared"
        );
        let stats = ch.stats();
        prop_assert_eq!((stats.depth, stats.in_flight, stats.discarded), (0, 0, 0));
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_message_ends_acked_once_or_dead_lettered(
        ops in proptest::collection::vec(op(), 0..200),
        capacity in 1usize..8,
        prefetch in proptest::array::uniform3(1usize..4),
    ) {
        run(ops, capacity, prefetch)?;
    }
}

/// The same guarantee with real concurrency: tasks on a multi-thread runtime racing to
/// consume, nacking and dropping at random.
#[test]
fn concurrent_consumers_lose_and_duplicate_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dead = DeadLetterChannel::new("dead", 10_000).unwrap();
        let ch = PointToPoint::builder("work")
            .capacity(16)
            .dead_letter_channel(dead.clone())
            .build()
            .unwrap();
        const PER_PRODUCER: usize = 700;
        const N: usize = 3 * PER_PRODUCER;
        let settled = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<_> = (0..4u64)
            .map(|seed| {
                let settled = settled.clone();
                let mut rx = ch.receiver().with_prefetch(1 + seed as usize % 3);
                tokio::spawn(async move {
                    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    let mut acked = Vec::new();
                    let mut rejected = 0usize;
                    // Consume until every message is settled; the deadline only stops a run
                    // that lost a message, which the assertions below then report.
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
                    while settled.load(Ordering::SeqCst) < N && std::time::Instant::now() < deadline
                    {
                        let wait = std::time::Duration::from_millis(50);
                        let d = match tokio::time::timeout(wait, rx.recv()).await {
                            Ok(Some(d)) => d,
                            Ok(None) => break,
                            Err(_) => continue,
                        };
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        match state % 10 {
                            0 => d.nack(),
                            1 => drop(d),
                            2 => {
                                rejected += 1;
                                d.reject("random").await;
                                settled.fetch_add(1, Ordering::SeqCst);
                            }
                            _ => {
                                acked.push(d.message().id());
                                d.ack();
                                settled.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        if state % 7 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                    (acked, rejected)
                })
            })
            .collect();
        let producers: Vec<_> = (0..3)
            .map(|_| {
                let ch = ch.clone();
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    for _ in 0..PER_PRODUCER {
                        let m = Message::new("x");
                        ids.push(m.id());
                        ch.send(m).await.unwrap();
                    }
                    ids
                })
            })
            .collect();
        let mut sent = Vec::new();
        for p in producers {
            sent.extend(p.await.unwrap());
        }
        let mut acked = Vec::new();
        let mut rejected = 0;
        for c in consumers {
            let (a, r) = c.await.unwrap();
            acked.extend(a);
            rejected += r;
        }
        assert_eq!(dead.stats().depth, rejected);
        let mut outcomes: Vec<MessageId> = acked;
        let mut dl = dead.receiver();
        while let Ok(d) = dl.try_recv() {
            outcomes.push(d.message().id());
            d.ack();
        }
        outcomes.sort();
        sent.sort();
        assert_eq!(
            outcomes, sent,
            "every message exactly once: acked or dead-lettered"
        );
    });
}
