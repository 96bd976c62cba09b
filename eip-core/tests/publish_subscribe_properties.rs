//! Property tests of the Publish-Subscribe Channel: random subscribers (durable or not, attached
//! and detached), publishes, receives, acks, nacks, rejects, dropped deliveries, purges and
//! unsubscribes.
//!
//! A model follows what each subscription must hold: the messages waiting for it, in the order it
//! must hand them out, those its consumer prefetched, and its deliveries not yet settled. Every
//! step is checked against it: what a receive hands out (and its redelivery count), when a
//! publish waits for room and whether it is woken when there is some, what a purge or an
//! unsubscribe removes, the channel's counters. At the end every message stored for a
//! subscription has ended exactly once: acked, dead-lettered for the right reason, purged, or
//! discarded with its non-durable subscription. A publish cancelled while waiting stored nothing.
//!
//! The same guarantees under real concurrency: `publish_subscribe_concurrency.rs`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use eip_core::channel::{
    ChannelPurger, ChannelSender, DeadLetterChannel, PublishSubscribe, Receiver, Selector,
    SendError, Subscriber, TryRecvError,
};
use eip_core::message::{DeathReason, MessageId};
use eip_core::{Delivery, Message, Outcome};
use proptest::prelude::*;
use tower::Service;

#[path = "publish_subscribe_model/receiving.rs"]
mod receiving;

const CHANNEL: &str = "events";
/// The durable subscription names the operations pick from.
const NAMES: [&str; 2] = ["audit", "archive"];
/// Open subscriptions at most, so that each gets some traffic.
const MAX_SUBSCRIPTIONS: usize = 4;
/// Publishes waiting for room at most (each stands for a publisher).
const MAX_WAITING: usize = 2;

#[derive(Debug, Clone)]
enum Op {
    /// A non-durable subscription, consumed with this prefetch (`None`: the subscriber's own).
    Subscribe {
        prefetch: Option<usize>,
    },
    /// Attach a consumer to the durable subscription `name` (creating it), if none is attached.
    Attach {
        name: usize,
        prefetch: Option<usize>,
    },
    /// Drop the consumer at this index (among those attached); a non-durable subscription ends.
    Detach(usize),
    Unsubscribe {
        name: usize,
    },
    /// Publish a message; `tag` feeds the selective purge.
    Publish {
        tag: bool,
    },
    /// Drop the waiting publish at this index.
    Cancel(usize),
    /// The consumer at this index (among those attached) takes what is next for it.
    Recv(usize),
    /// Settle the held delivery at this index (modulo the number held) in some way.
    Ack(usize),
    Nack(usize),
    Drop(usize),
    Reject(usize),
    /// Ack a delivery and, before any waiting publish runs, cancel one: a wake-up it was given
    /// must pass on to the other.
    AckThenCancel(usize, usize),
    Purge,
    PurgeTagged,
    /// Ask the channel's `tower` sender whether it is ready.
    PollReady,
}

fn prefetch() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![Just(None), (1usize..4).prop_map(Some)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => prefetch().prop_map(|prefetch| Op::Subscribe { prefetch }),
        2 => (0..NAMES.len(), prefetch()).prop_map(|(name, prefetch)| Op::Attach { name, prefetch }),
        1 => any::<usize>().prop_map(Op::Detach),
        1 => (0..NAMES.len()).prop_map(|name| Op::Unsubscribe { name }),
        6 => any::<bool>().prop_map(|tag| Op::Publish { tag }),
        1 => any::<usize>().prop_map(Op::Cancel),
        6 => any::<usize>().prop_map(Op::Recv),
        4 => any::<usize>().prop_map(Op::Ack),
        1 => any::<usize>().prop_map(Op::Nack),
        1 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::Reject),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(d, p)| Op::AckThenCancel(d, p)),
        1 => Just(Op::Purge),
        1 => Just(Op::PurgeTagged),
        1 => Just(Op::PollReady),
    ]
}

/// How a message stored for a subscription ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Acked,
    Dead(DeathReason),
    Purged,
    /// Its non-durable subscription ended (the subscriber was dropped).
    Discarded,
}

/// Dead-lettered with reason `channel-deleted`: left in a subscription that was unsubscribed, or
/// prefetched or requeued once its subscription had ended.
const DELETED: Fate = Fate::Dead(DeathReason::ChannelDeleted);

/// A waker that records being woken: a waiting future must be woken when it can go on.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Flag {
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

fn poll_with<T>(flag: &Arc<Flag>, poll: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
    let waker = Waker::from(flag.clone());
    poll(&mut Context::from_waker(&waker))
}

type Publishing = Pin<Box<dyn Future<Output = Result<Outcome, SendError>>>>;

/// A publish polled and found waiting for room.
struct WaitingPublish {
    seq: usize,
    publish: Publishing,
    woken: Arc<Flag>,
}

/// A `tower` sender that said it was not ready.
struct NotReady {
    sender: ChannelSender,
    woken: Arc<Flag>,
}

/// A consumer attached to a subscription.
struct Consumer {
    /// A receiver of its own with another prefetch, if any. Declared first, so it is dropped
    /// first: what it prefetched goes back before a non-durable subscription ends.
    own: Option<Receiver>,
    subscriber: Subscriber,
    prefetch: usize,
    /// Prefetched by the receiver, not yet handed out (messages by sequence number).
    buffer: VecDeque<usize>,
}

impl Consumer {
    fn new(subscriber: Subscriber, prefetch: Option<usize>) -> Self {
        let own = prefetch.map(|p| Receiver::clone(&subscriber).with_prefetch(p));
        let prefetch = own
            .as_ref()
            .map_or(subscriber.prefetch(), Receiver::prefetch);
        Consumer {
            own,
            subscriber,
            prefetch,
            buffer: VecDeque::new(),
        }
    }

    fn receiver(&mut self) -> &mut Receiver {
        match &mut self.own {
            Some(own) => own,
            None => &mut self.subscriber,
        }
    }
}

#[derive(Default)]
struct Subscription {
    /// The index of its name in [`NAMES`], for a durable one.
    durable: Option<usize>,
    /// Not unsubscribed, and (non-durable) its subscriber not dropped.
    open: bool,
    /// Waiting in the channel (read from the log or not), in the order it must hand them out.
    waiting: VecDeque<usize>,
    consumer: Option<Consumer>,
    /// Deliveries handed out and not settled.
    in_flight: usize,
    /// Every message stored for it.
    given: Vec<usize>,
    deliveries: HashMap<usize, u32>,
    requeues: HashMap<usize, u32>,
    /// The store position of the last message delivered for the first time.
    last_first: Option<usize>,
}

impl Subscription {
    /// What counts against its capacity.
    fn holds(&self) -> usize {
        self.waiting.len() + self.consumer.as_ref().map_or(0, |c| c.buffer.len()) + self.in_flight
    }
}

struct Held {
    sub: usize,
    seq: usize,
    delivery: Delivery,
}

struct Published {
    id: MessageId,
    tag: bool,
    /// Its position among stored messages, once stored.
    order: Option<usize>,
}

type Fates = HashMap<(usize, usize), Fate>;

fn end(fates: &mut Fates, sub: usize, seq: usize, fate: Fate) -> Result<(), TestCaseError> {
    let before = fates.insert((sub, seq), fate);
    prop_assert!(
        before.is_none(),
        "message {} of subscription {} ended twice: {:?}, then {:?}",
        seq,
        sub,
        before,
        fate
    );
    Ok(())
}

struct Model {
    channel: PublishSubscribe,
    dead: DeadLetterChannel,
    capacity: usize,
    messages: Vec<Published>,
    seqs: HashMap<MessageId, usize>,
    stored: usize,
    subs: Vec<Subscription>,
    /// The open durable subscription of each name.
    durable: [Option<usize>; NAMES.len()],
    held: Vec<Held>,
    publishes: Vec<WaitingPublish>,
    not_ready: Option<NotReady>,
    fates: Fates,
}

impl Model {
    fn new(capacity: usize) -> Self {
        let dead = DeadLetterChannel::new("dead", 100_000).unwrap();
        let channel = PublishSubscribe::builder(CHANNEL)
            .capacity(capacity)
            .dead_letter_channel(dead.clone())
            .build()
            .unwrap();
        Model {
            channel,
            dead,
            capacity,
            messages: Vec::new(),
            seqs: HashMap::new(),
            stored: 0,
            subs: Vec::new(),
            durable: [None; NAMES.len()],
            held: Vec::new(),
            publishes: Vec::new(),
            not_ready: None,
            fates: Fates::new(),
        }
    }

    /// A subscription holding its capacity, if there is one: a publish must wait.
    fn full(&self) -> Option<usize> {
        (0..self.subs.len()).find(|&s| self.subs[s].open && self.subs[s].holds() >= self.capacity)
    }

    fn open(&self) -> impl Iterator<Item = &Subscription> {
        self.subs.iter().filter(|s| s.open)
    }

    /// The subscription of the consumer at `index` among those attached.
    fn attached(&self, index: usize) -> Option<usize> {
        let attached: Vec<usize> = (0..self.subs.len())
            .filter(|&s| self.subs[s].consumer.is_some())
            .collect();
        (!attached.is_empty()).then(|| attached[index % attached.len()])
    }

    async fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Subscribe { prefetch } => {
                if self.open().count() < MAX_SUBSCRIPTIONS {
                    let subscriber = self.channel.subscribe();
                    prop_assert!(!subscriber.is_durable());
                    self.subs.push(Subscription {
                        open: true,
                        consumer: Some(Consumer::new(subscriber, prefetch)),
                        ..Subscription::default()
                    });
                }
            }
            Op::Attach { name, prefetch } => self.attach(name, prefetch)?,
            Op::Detach(index) => {
                if let Some(s) = self.attached(index) {
                    self.detach(s)?;
                }
            }
            Op::Unsubscribe { name } => self.unsubscribe(name).await?,
            Op::Publish { tag } => self.publish(tag)?,
            Op::Cancel(index) => self.cancel(index),
            Op::Recv(index) => {
                if let Some(s) = self.attached(index) {
                    self.recv(s)?;
                }
            }
            Op::Ack(i) | Op::Nack(i) | Op::Drop(i) | Op::Reject(i) => self.settle(op, i).await?,
            Op::AckThenCancel(delivery, publish) => {
                self.settle(Op::Ack(delivery), delivery).await?;
                self.cancel(publish);
            }
            Op::Purge => self.purge(None)?,
            Op::PurgeTagged => self.purge(Some(Selector::header_equals("tag", true)))?,
            Op::PollReady => self.poll_ready()?,
        }
        self.run_woken()?;
        self.check_stats()
    }

    /// Drops a waiting publish.
    fn cancel(&mut self, index: usize) {
        if !self.publishes.is_empty() {
            let len = self.publishes.len();
            drop(self.publishes.remove(index % len));
        }
    }

    fn attach(&mut self, name: usize, prefetch: Option<usize>) -> Result<(), TestCaseError> {
        let s = match self.durable[name] {
            Some(s) if self.subs[s].consumer.is_some() => return Ok(()),
            Some(s) => s,
            None if self.open().count() >= MAX_SUBSCRIPTIONS => return Ok(()),
            None => {
                self.subs.push(Subscription {
                    durable: Some(name),
                    open: true,
                    ..Subscription::default()
                });
                self.durable[name] = Some(self.subs.len() - 1);
                self.subs.len() - 1
            }
        };
        let subscriber = self.channel.durable_subscribe(NAMES[name]);
        prop_assert!(subscriber.is_durable());
        self.subs[s].consumer = Some(Consumer::new(subscriber, prefetch));
        Ok(())
    }

    fn detach(&mut self, s: usize) -> Result<(), TestCaseError> {
        let sub = &mut self.subs[s];
        let Some(consumer) = sub.consumer.take() else {
            return Ok(());
        };
        let buffer = consumer.buffer.clone();
        drop(consumer);
        if !sub.open {
            // Unsubscribed while attached: what it had prefetched is dead-lettered.
            for seq in buffer {
                end(&mut self.fates, s, seq, DELETED)?;
            }
            return Ok(());
        }
        // Prefetched messages go back to the head, in their order.
        for seq in buffer.into_iter().rev() {
            sub.waiting.push_front(seq);
        }
        if sub.durable.is_none() {
            sub.open = false;
            for seq in sub.waiting.drain(..) {
                end(&mut self.fates, s, seq, Fate::Discarded)?;
            }
        }
        Ok(())
    }

    async fn unsubscribe(&mut self, name: usize) -> Result<(), TestCaseError> {
        let got = self.channel.unsubscribe(NAMES[name]).await;
        let Some(s) = self.durable[name].take() else {
            prop_assert_eq!(got, None, "unsubscribed from {} twice", NAMES[name]);
            return Ok(());
        };
        let sub = &mut self.subs[s];
        prop_assert_eq!(
            got,
            Some(sub.waiting.len()),
            "unsubscribe counts what was waiting"
        );
        sub.open = false;
        for seq in sub.waiting.drain(..) {
            end(&mut self.fates, s, seq, DELETED)?;
        }
        Ok(())
    }

    fn publish(&mut self, tag: bool) -> Result<(), TestCaseError> {
        if self.publishes.len() >= MAX_WAITING {
            return Ok(());
        }
        let msg = Message::builder("m").header("tag", tag).build();
        let seq = self.messages.len();
        self.seqs.insert(msg.id(), seq);
        self.messages.push(Published {
            id: msg.id(),
            tag,
            order: None,
        });
        let channel = self.channel.clone();
        let publish = WaitingPublish {
            seq,
            publish: Box::pin(async move { channel.publish(msg).await }),
            woken: Arc::default(),
        };
        if let Some(waiting) = self.poll_publish(publish)? {
            self.publishes.push(waiting);
        }
        Ok(())
    }

    /// Polls a publish: it must complete exactly when no subscription is full (so none ever
    /// holds more than its capacity). Gives it back if it waits.
    fn poll_publish(
        &mut self,
        mut publish: WaitingPublish,
    ) -> Result<Option<WaitingPublish>, TestCaseError> {
        let full = self.full();
        match poll_with(&publish.woken, |cx| publish.publish.as_mut().poll(cx)) {
            Poll::Ready(result) => {
                prop_assert_eq!(
                    full,
                    None,
                    "a publish completed while that subscription was full"
                );
                prop_assert!(matches!(result, Ok(Outcome::Accepted)), "{:?}", result);
                self.store(publish.seq);
                Ok(None)
            }
            Poll::Pending => {
                prop_assert!(
                    full.is_some(),
                    "a publish waits though every subscription has room"
                );
                Ok(Some(publish))
            }
        }
    }

    /// The message is stored: every open subscription gets it, at the end of what it waits for.
    fn store(&mut self, seq: usize) {
        self.messages[seq].order = Some(self.stored);
        self.stored += 1;
        for sub in self.subs.iter_mut().filter(|s| s.open) {
            sub.waiting.push_back(seq);
            sub.given.push(seq);
        }
    }

    /// Runs, as an executor would, what was woken, until nothing is; then whatever still waits
    /// must have a reason to.
    fn run_woken(&mut self) -> Result<(), TestCaseError> {
        loop {
            if let Some(i) = self.publishes.iter().position(|w| w.woken.take()) {
                let publish = self.publishes.remove(i);
                if let Some(publish) = self.poll_publish(publish)? {
                    self.publishes.insert(i, publish);
                }
            } else if let Some(not_ready) = self.not_ready.take_if(|n| n.woken.take()) {
                self.poll_sender(not_ready)?;
            } else {
                break;
            }
        }
        if self.full().is_none() {
            prop_assert!(
                self.publishes.is_empty(),
                "a waiting publish was not woken, though every subscription has room"
            );
            prop_assert!(
                self.not_ready.is_none(),
                "a waiting sender was not woken, though every subscription has room"
            );
        }
        Ok(())
    }

    fn poll_ready(&mut self) -> Result<(), TestCaseError> {
        if self.not_ready.is_none() {
            let sender = self.channel.sender();
            self.poll_sender(NotReady {
                sender,
                woken: Arc::default(),
            })?;
        }
        Ok(())
    }

    /// The sender is ready exactly when no subscription is full.
    fn poll_sender(&mut self, mut s: NotReady) -> Result<(), TestCaseError> {
        let full = self.full();
        match poll_with(&s.woken, |cx| s.sender.poll_ready(cx)) {
            Poll::Ready(ready) => {
                prop_assert!(ready.is_ok(), "{:?}", ready);
                prop_assert_eq!(
                    full,
                    None,
                    "the sender is ready with that subscription full"
                );
            }
            Poll::Pending => {
                prop_assert!(
                    full.is_some(),
                    "the sender is not ready though every subscription has room"
                );
                self.not_ready = Some(s);
            }
        }
        Ok(())
    }
}

fn run(ops: Vec<Op>, capacity: usize) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut model = Model::new(capacity);
        for op in ops {
            model.apply(op).await?;
        }
        model.finish().await
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_subscription_gets_each_message_once_within_its_capacity(
        ops in proptest::collection::vec(op(), 0..160),
        capacity in 1usize..6,
    ) {
        run(ops, capacity)?;
    }
}
