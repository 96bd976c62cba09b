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
//! A second test checks the same guarantees with real concurrency: publishers, subscribers and a
//! subscriber that comes and goes, on a multi-thread runtime.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use eip_core::channel::{
    ChannelPurger, ChannelSender, DeadLetterChannel, PublishSubscribe, Receiver, Selector,
    SendError, Subscriber, TryRecvError,
};
use eip_core::message::{DeathReason, MessageId};
use eip_core::{Delivery, Message, Outcome};
use proptest::prelude::*;
use tokio::time::timeout;
use tower::Service;

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

    /// The consumer of subscription `s` takes what is next; returns whether it got something.
    fn recv(&mut self, s: usize) -> Result<bool, TestCaseError> {
        let in_flight_before = self.channel.stats().in_flight;
        let sub = &mut self.subs[s];
        let Some(consumer) = sub.consumer.as_mut() else {
            return Ok(false);
        };
        let got = consumer.receiver().try_recv();
        if !sub.open {
            prop_assert!(
                matches!(got, Err(TryRecvError::Closed)),
                "an unsubscribed consumer got {:?}",
                got
            );
            for seq in consumer.buffer.drain(..) {
                end(&mut self.fates, s, seq, DELETED)?;
            }
            return Ok(false);
        }
        let delivery = match got {
            Ok(delivery) => delivery,
            Err(e) => {
                prop_assert_eq!(e, TryRecvError::Empty);
                prop_assert!(
                    consumer.buffer.is_empty() && sub.waiting.is_empty(),
                    "subscription {} says empty with {:?} prefetched and {:?} waiting",
                    s,
                    consumer.buffer,
                    sub.waiting
                );
                return Ok(false);
            }
        };
        let id = delivery.message().id();
        let Some(&seq) = self.seqs.get(&id) else {
            return Err(TestCaseError::fail("a message nobody published"));
        };
        if consumer.buffer.is_empty() {
            // It took a batch (its prefetch at most); what it took is in flight now.
            let taken = self.channel.stats().in_flight - in_flight_before;
            let most = consumer.prefetch.min(sub.waiting.len());
            prop_assert!(
                (1..=most).contains(&taken),
                "took {} with prefetch {} and {} waiting",
                taken,
                consumer.prefetch,
                sub.waiting.len()
            );
            consumer.buffer.extend(sub.waiting.drain(..taken));
        }
        prop_assert_eq!(
            consumer.buffer.pop_front(),
            Some(seq),
            "subscription {} handed out the wrong message",
            s
        );
        let deliveries = sub.deliveries.entry(seq).or_default();
        *deliveries += 1;
        let requeues = sub.requeues.get(&seq).copied().unwrap_or(0);
        prop_assert_eq!(
            *deliveries,
            requeues + 1,
            "delivered again without a nack or a drop"
        );
        prop_assert_eq!(delivery.message().redelivery_count().unwrap(), requeues);
        if requeues == 0 {
            let order = self.messages[seq].order;
            prop_assert!(
                order > sub.last_first,
                "first deliveries out of publish order"
            );
            sub.last_first = order;
        }
        sub.in_flight += 1;
        self.held.push(Held {
            sub: s,
            seq,
            delivery,
        });
        Ok(true)
    }

    async fn settle(&mut self, op: Op, index: usize) -> Result<(), TestCaseError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let len = self.held.len();
        let Held {
            sub: s,
            seq,
            delivery,
        } = self.held.swap_remove(index % len);
        let sub = &mut self.subs[s];
        sub.in_flight -= 1;
        let fate = match op {
            Op::Ack(_) => {
                delivery.ack();
                Fate::Acked
            }
            Op::Reject(_) => {
                delivery.reject("refused").await;
                Fate::Dead(DeathReason::Rejected)
            }
            _ => {
                if matches!(op, Op::Nack(_)) {
                    delivery.nack();
                } else {
                    drop(delivery);
                }
                if sub.open {
                    // Back to the head of its subscription.
                    sub.waiting.push_front(seq);
                    *sub.requeues.entry(seq).or_default() += 1;
                    return Ok(());
                }
                DELETED
            }
        };
        end(&mut self.fates, s, seq, fate)
    }

    fn purge(&mut self, selector: Option<Selector>) -> Result<(), TestCaseError> {
        let tagged_only = selector.is_some();
        let purged = match &selector {
            Some(selector) => ChannelPurger::purge_matching(&self.channel, selector),
            None => ChannelPurger::purge(&self.channel),
        };
        let mut expected = 0;
        for (s, sub) in self.subs.iter_mut().enumerate().filter(|(_, s)| s.open) {
            let (gone, kept) = sub
                .waiting
                .drain(..)
                .partition(|&seq| !tagged_only || self.messages[seq].tag);
            sub.waiting = kept;
            for seq in Vec::from(gone) {
                expected += 1;
                end(&mut self.fates, s, seq, Fate::Purged)?;
            }
        }
        prop_assert_eq!(purged, expected, "a purge removes what is waiting");
        Ok(())
    }

    fn check_stats(&self) -> Result<(), TestCaseError> {
        let stats = self.channel.stats();
        let depth: usize = self.open().map(|s| s.waiting.len()).sum();
        let in_flight: usize = self.open().map(|s| s.holds() - s.waiting.len()).sum();
        let accepted: usize = self.open().map(|s| s.given.len()).sum();
        prop_assert_eq!(
            (stats.depth, stats.in_flight, stats.accepted),
            (depth, in_flight, accepted as u64),
            "(depth, in flight, accepted)"
        );
        prop_assert_eq!(self.channel.subscriber_count(), self.open().count());
        let mut names: Vec<&str> = self
            .open()
            .filter_map(|s| s.durable.map(|n| NAMES[n]))
            .collect();
        names.sort();
        prop_assert_eq!(self.channel.durable_subscriptions(), names);
        Ok(())
    }

    /// Cancels what waits, settles what is held, drains every subscription, ends them all; then
    /// every message stored for a subscription must have ended once, the dead letters matching.
    async fn finish(mut self) -> Result<(), TestCaseError> {
        // A publish still waiting is cancelled: it must have stored nothing.
        self.publishes.clear();
        self.not_ready = None;
        while !self.held.is_empty() {
            self.settle(Op::Ack(0), 0).await?;
        }
        for s in 0..self.subs.len() {
            if !self.subs[s].open {
                self.detach(s)?;
                continue;
            }
            if let (Some(name), None) = (self.subs[s].durable, &self.subs[s].consumer) {
                self.attach(name, None)?;
            }
            while self.recv(s)? {
                self.settle(Op::Ack(0), self.held.len() - 1).await?;
            }
        }
        self.check_stats()?;
        let stats = self.channel.stats();
        prop_assert_eq!((stats.depth, stats.in_flight), (0, 0));
        for (name, s) in NAMES.iter().zip(&mut self.durable) {
            if let Some(s) = s.take() {
                let left = self.channel.unsubscribe(name).await;
                prop_assert_eq!(left, Some(0), "subscription {} was drained", s);
                self.subs[s].open = false;
            }
        }
        for s in 0..self.subs.len() {
            self.detach(s)?;
        }
        prop_assert_eq!(self.channel.subscriber_count(), 0);

        let mut expected: HashMap<(MessageId, DeathReason), usize> = HashMap::new();
        for (&(_, seq), fate) in &self.fates {
            if let Fate::Dead(reason) = fate {
                *expected
                    .entry((self.messages[seq].id, *reason))
                    .or_default() += 1;
            }
        }
        let mut dead: HashMap<(MessageId, DeathReason), usize> = HashMap::new();
        let mut dl = self.dead.receiver();
        while let Ok(d) = dl.try_recv() {
            let death = d.message().death().unwrap().unwrap();
            prop_assert_eq!(death.channel.as_str(), CHANNEL);
            *dead.entry((d.message().id(), death.reason)).or_default() += 1;
            d.ack();
        }
        prop_assert_eq!(dead, expected, "the dead letters");
        for (s, sub) in self.subs.iter().enumerate() {
            for &seq in &sub.given {
                prop_assert!(
                    self.fates.contains_key(&(s, seq)),
                    "message {} stored for subscription {} never ended",
                    seq,
                    s
                );
            }
        }
        let given: usize = self.subs.iter().map(|s| s.given.len()).sum();
        prop_assert_eq!(self.fates.len(), given, "nothing ended that was not stored");
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
