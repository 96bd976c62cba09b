//! Publish-Subscribe Channel and Durable Subscriber: every subscriber gets its own copy.
//!
//! Each subscription is a bounded queue of its own. A message published goes to every
//! subscription that exists when it is stored, exactly once each; a subscriber that joins later
//! does not see earlier messages. Copies share the payload and headers (no bytes are copied). A
//! subscription's consumer acks, nacks or rejects as on a point-to-point channel, and several
//! receivers on one subscription compete for its messages.
//!
//! Under `Backpressure` a publish stores the message once, in a log the subscriptions read from
//! (each with its own cursor, taking its copy when its consumer asks for more), so publishing
//! costs the same for one subscriber or a hundred. The bound still holds per subscription: what
//! it has not read yet counts, with what it holds waiting or in flight.
//!
//! A **slow subscriber** is handled by the channel's [`Overflow`] policy: `Backpressure` (the
//! default) makes the publisher wait until every subscription has room; `DropOldest` dead-letters
//! a full subscription's oldest waiting message (reason `dropped-slow-subscriber`) so the
//! publisher never waits on that subscriber — right for price ticks, where a newer message
//! replaces an older one.
//!
//! A **durable subscriber** has a name. Its subscription outlives the [`Subscriber`] handle: it
//! keeps queueing (up to its capacity, then by the overflow policy) while no consumer is
//! attached, and [`PublishSubscribe::durable_subscribe`] with the same name re-attaches and
//! resumes. It ends only with [`PublishSubscribe::unsubscribe`]. A non-durable subscription ends
//! when its `Subscriber` is dropped, and what it still held is discarded: a non-durable
//! subscriber receives only while it listens. (Durable across process restarts needs the
//! durable channel store, which comes with Guaranteed Delivery.)
//!
//! A publish cancelled while waiting for room (its future dropped) has reached no subscription of
//! this channel. (A bus wildcard subscription, or a `DropOldest` channel's subscriptions, take
//! their copies one after another: a cancelled publish may have reached only some of those.)

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::builder::{ChannelBuilder, ChannelConfig};
use super::delivery::{Receiver, SUBSCRIPTION_PREFETCH};
use super::error::{ChannelError, SendError};
use super::queue::{Overflow, Push, Queue};
use super::selector::Selector;
use super::sender::ChannelSender;
use super::shared_log::SharedLog;
use super::stats::ChannelStats;
use super::{LoopGuard, Outcome, Stored};
use crate::join::{Join, JoinId};
use crate::message::{DeathReason, Message};

/// The joins leaving a channel: replaced, never changed, so a publish holds a consistent set.
type Joins = Arc<[Arc<Join>]>;

/// A channel whose every message goes to each of its subscribers.
#[derive(Clone)]
pub struct PublishSubscribe {
    inner: Arc<Inner>,
}

struct Inner {
    config: ChannelConfig,
    /// What the channel's own subscriptions read from, under `Backpressure`. Under `DropOldest`
    /// a publish pushes to each (the policy acts on each subscription's own queue).
    log: Option<Arc<SharedLog>>,
    subscriptions: Mutex<Subscriptions>,
    guard: LoopGuard,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The log holds the subscriptions and they hold the log: with the channel gone (and
        // every publisher with it) the log lets go of them.
        if let Some(log) = &self.log {
            log.release_subscriptions();
        }
    }
}

#[derive(Default)]
struct Subscriptions {
    /// Replaced (not changed) on every change, so a publish takes it with one
    /// reference-count increment.
    current: Arc<Current>,
    durable: HashMap<String, Arc<Queue>>,
    closed: bool,
}

#[derive(Default, Clone)]
struct Current {
    /// The channel's own subscriptions (reading the log, if there is one).
    own: Vec<Arc<Queue>>,
    /// Queues attached from outside (bus wildcard subscriptions spanning several channels): a
    /// publish pushes to each; deleting this channel detaches them but must not close them.
    foreign: Vec<Arc<Queue>>,
    /// The joins leaving this channel.
    joins: Joins,
}

impl Current {
    fn all(&self) -> impl Iterator<Item = &Arc<Queue>> {
        self.own.iter().chain(&self.foreign)
    }
}

impl Subscriptions {
    /// Replaces the current set with `change` applied to a copy of it.
    fn change(&mut self, change: impl FnOnce(&mut Current)) {
        let mut next = Current::clone(&self.current);
        change(&mut next);
        self.current = Arc::new(next);
    }
}

impl PublishSubscribe {
    /// A channel with default settings and this capacity per subscription.
    pub fn new(name: &str, capacity: usize) -> Result<Self, ChannelError> {
        PublishSubscribe::builder(name).capacity(capacity).build()
    }

    /// A builder for a channel named `name`.
    pub fn builder(name: &str) -> ChannelBuilder<PublishSubscribe> {
        ChannelBuilder::new(name)
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The capacity of each subscription.
    pub fn capacity(&self) -> usize {
        self.inner.config.capacity
    }

    /// The name of the datatype it carries, for a Datatype Channel.
    pub fn datatype(&self) -> Option<&str> {
        self.inner
            .config
            .datatype
            .as_ref()
            .map(|d| d.datatype.name())
    }

    /// The slow-subscriber policy.
    pub fn overflow(&self) -> Overflow {
        self.inner.config.overflow
    }

    /// Where undeliverable messages go, if anywhere.
    pub fn dead_letter_channel(&self) -> Option<&super::DeadLetterChannel> {
        self.inner.config.dead_letters.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, Subscriptions> {
        self.inner
            .subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The subscriptions and the joins, in one look; `None` once deleted.
    fn snapshot(&self) -> Option<Arc<Current>> {
        let subs = self.lock();
        (!subs.closed).then(|| subs.current.clone())
    }

    /// The queues a publish pushes to one by one.
    fn pushed_to<'a>(&self, current: &'a Current) -> impl Iterator<Item = &'a Arc<Queue>> {
        let own: &[Arc<Queue>] = if self.inner.log.is_some() {
            &[]
        } else {
            &current.own
        };
        own.iter().chain(&current.foreign)
    }

    /// Publishes a message to every current subscriber, then follows the channel's joins (see
    /// [`crate::join`]). Completes when every subscription here and at every join destination
    /// has accepted its copy (waiting for room under `Backpressure`).
    pub async fn publish(&self, msg: Message) -> Result<Outcome, SendError> {
        match self.store(msg, self.inner.guard.clock()).await {
            Stored::Forward(stored, joins) => {
                // Boxed: following joins allocates anyway, and inline it would double the size
                // of every publish's future.
                Box::pin(crate::join::propagate(self, &joins, stored)).await;
                Ok(Outcome::Accepted)
            }
            other => other.outcome(self.name()),
        }
    }

    /// Stores one message in every subscription (joins not followed).
    pub(crate) async fn store(&self, msg: Message, loops: Option<Instant>) -> Stored {
        let mut msg = match &self.inner.config.datatype {
            None => msg,
            Some(check) => match check.divert_misfit(self.name(), msg).await {
                Ok(msg) => msg,
                Err(reason) => return Stored::Invalid(reason),
            },
        };
        if let Some(ttl) = self.inner.config.time_to_live {
            msg.expire_within(ttl);
        }
        let Some(current) = self.snapshot() else {
            return Stored::Closed(msg);
        };
        if loops.is_some_and(|now| !self.inner.guard.admit(msg.id(), now)) {
            return Stored::Duplicate;
        }
        // The waiting paths are boxed: they are rare, and a future holding them inline would
        // be moved whole for every message.
        if let Some(log) = &self.inner.log {
            if current.foreign.is_empty() && current.joins.is_empty() {
                // Nobody needs it after the log: no copy.
                return match log.append(msg).await {
                    Ok(()) => Stored::Yes,
                    Err(msg) => Stored::Closed(msg),
                };
            }
            if let Err(copy) = log.append(msg.clone()).await {
                return Stored::Closed(copy);
            }
        }
        for queue in self.pushed_to(&current) {
            // A subscription closed since the snapshot has just unsubscribed: skipping it is
            // exactly what would have happened a moment later.
            match queue.try_push(msg.clone()) {
                Push::Stored | Push::Closed(_) => {}
                Push::StoredDropping(oldest) => {
                    Box::pin(queue.dead_letter(oldest, DeathReason::DroppedSlowSubscriber, None))
                        .await
                }
                Push::Full(copy) => {
                    let _ = Box::pin(queue.push(&mut Some(copy))).await;
                }
            }
        }
        if current.joins.is_empty() {
            Stored::Yes
        } else {
            Stored::Forward(msg, current.joins.clone())
        }
    }

    /// The joins leaving this channel, as of now.
    pub fn joins(&self) -> Arc<[Arc<Join>]> {
        self.lock().current.joins.clone()
    }

    /// Attaches a join; false if the channel is deleted.
    pub(crate) fn add_join(&self, join: Join) -> bool {
        let mut subs = self.lock();
        if subs.closed {
            return false;
        }
        subs.change(|c| c.joins = c.joins.iter().cloned().chain([Arc::new(join)]).collect());
        true
    }

    /// Removes the join `id`; returns whether it was there. Publishes that start after this
    /// returns no longer follow it.
    pub fn remove_join(&self, id: JoinId) -> bool {
        let mut subs = self.lock();
        if !subs.current.joins.iter().any(|j| j.id() == id) {
            return false;
        }
        subs.change(|c| c.joins = c.joins.iter().filter(|j| j.id() != id).cloned().collect());
        true
    }

    pub(crate) fn loop_guard(&self) -> &LoopGuard {
        &self.inner.guard
    }

    /// Identity of the channel (shared by its clones), for visited sets.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    pub(crate) fn datatype_check(&self) -> Option<&super::datatype::DatatypeCheck> {
        self.inner.config.datatype.as_ref()
    }

    /// Whether a publish would complete now without waiting.
    pub(crate) fn accepts_now(&self) -> bool {
        self.snapshot().is_none_or(|current| {
            self.inner.log.as_ref().is_none_or(|log| log.accepts_now())
                && self.pushed_to(&current).all(|q| q.accepts_now())
        })
    }

    /// Waits until every subscription has room.
    pub(crate) async fn writable(&self) {
        while let Some(current) = self.snapshot() {
            if let Some(log) = self.inner.log.as_ref().filter(|log| !log.accepts_now()) {
                log.room().await;
                continue;
            }
            match self.pushed_to(&current).find(|q| !q.accepts_now()) {
                Some(full) => full.writable().await,
                None => return,
            }
        }
    }

    /// A new queue for an own subscription, in the set; on a deleted channel, a closed one (its
    /// consumers see the end at once).
    fn new_subscription(&self, subs: &mut Subscriptions) -> Arc<Queue> {
        let config = &self.inner.config;
        let queue = || config.queue(config.name.clone());
        if subs.closed {
            let closed = Arc::new(queue());
            closed.close();
            return closed;
        }
        let attached = match &self.inner.log {
            Some(log) => log.attach(|head| queue().reading(log.clone(), head)),
            None => Some(Arc::new(queue())),
        };
        // The log closes only after the set is marked deleted, under the lock held here.
        let queue = attached.unwrap_or_else(|| Arc::new(queue()));
        subs.change(|c| c.own.push(queue.clone()));
        queue
    }

    /// A new non-durable subscription; it ends when the returned [`Subscriber`] is dropped.
    pub fn subscribe(&self) -> Subscriber {
        let queue = self.new_subscription(&mut self.lock());
        let channel = self.clone();
        let detach_queue = queue.clone();
        Subscriber::new(
            Receiver::new(queue, None).with_prefetch(SUBSCRIPTION_PREFETCH),
            Some(Box::new(move || {
                channel.detach(&detach_queue);
                detach_queue.close();
            })),
        )
    }

    /// Attaches to the durable subscription `name`, creating it on first use. Its messages are
    /// kept while no consumer is attached; several attached consumers compete for them.
    pub fn durable_subscribe(&self, name: &str) -> Subscriber {
        let mut subs = self.lock();
        let queue = match subs.durable.get(name) {
            Some(q) => q.clone(),
            None => {
                let q = self.new_subscription(&mut subs);
                if !subs.closed {
                    subs.durable.insert(name.to_owned(), q.clone());
                }
                q
            }
        };
        drop(subs);
        Subscriber::new(
            Receiver::new(queue, None).with_prefetch(SUBSCRIPTION_PREFETCH),
            None,
        )
    }

    /// Ends the durable subscription `name`. What it still held goes to the dead letter channel
    /// with reason `channel-deleted`; returns how many, or `None` if there was no such
    /// subscription.
    pub async fn unsubscribe(&self, name: &str) -> Option<usize> {
        let queue = self.lock().durable.remove(name)?;
        self.detach(&queue);
        let rest = queue.close();
        let n = rest.len();
        for msg in rest {
            queue
                .dead_letter(msg, DeathReason::ChannelDeleted, None)
                .await;
        }
        Some(n)
    }

    /// The names of the durable subscriptions.
    pub fn durable_subscriptions(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock().durable.keys().cloned().collect();
        names.sort();
        names
    }

    /// How many subscriptions there are (durable ones included, attached or not).
    pub fn subscriber_count(&self) -> usize {
        self.lock().current.all().count()
    }

    /// Attaches a subscription queue owned elsewhere (a bus wildcard subscription).
    pub(crate) fn attach_foreign(&self, queue: Arc<Queue>) {
        let mut subs = self.lock();
        if !subs.closed {
            subs.change(|c| c.foreign.push(queue));
        }
    }

    pub(crate) fn detach(&self, queue: &Arc<Queue>) {
        let mut subs = self.lock();
        if subs.current.all().any(|q| Arc::ptr_eq(q, queue)) {
            subs.change(|c| {
                c.own.retain(|q| !Arc::ptr_eq(q, queue));
                c.foreign.retain(|q| !Arc::ptr_eq(q, queue));
            });
        }
    }

    /// The send side as a `tower::Service<Message>`.
    pub fn sender(&self) -> ChannelSender {
        ChannelSender::new(super::Channel::PublishSubscribe(self.clone()))
    }

    /// The counters of all subscriptions added up (`accepted` counts one per copy), and the
    /// channel's loop-detection duplicates.
    pub fn stats(&self) -> ChannelStats {
        let current = self.lock().current.clone();
        let duplicates = ChannelStats {
            duplicates: self.inner.guard.duplicates(),
            invalid: self
                .inner
                .config
                .datatype
                .as_ref()
                .map_or(0, |d| d.diverted()),
            ..ChannelStats::default()
        };
        current
            .all()
            .map(|q| q.stats())
            .fold(duplicates, |a, b| a + b)
    }

    /// Purges every subscription (by selector if given); returns how many messages went.
    pub(crate) fn purge(&self, selector: Option<&Selector>) -> usize {
        let current = self.lock().current.clone();
        current.all().map(|q| q.purge(selector)).sum()
    }

    /// Deletes the channel: publishers get [`SendError::Closed`] and every message waiting in
    /// a subscription goes to the dead letter channel with reason `channel-deleted`.
    pub async fn delete(&self) -> usize {
        let current = {
            let mut subs = self.lock();
            subs.closed = true;
            subs.durable.clear();
            std::mem::take(&mut subs.current)
        };
        if let Some(log) = &self.inner.log {
            log.close();
        }
        let mut n = 0;
        for queue in &current.own {
            for msg in queue.close() {
                n += 1;
                queue
                    .dead_letter(msg, DeathReason::ChannelDeleted, None)
                    .await;
            }
        }
        n
    }

    /// Whether the channel was deleted.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

impl ChannelBuilder<PublishSubscribe> {
    /// The slow-subscriber policy (default [`Overflow::Backpressure`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.config.overflow = overflow;
        self
    }

    /// The channel, or why this configuration can not work.
    pub fn build(self) -> Result<PublishSubscribe, ChannelError> {
        let config = self.config.validated()?;
        let log = (config.overflow == Overflow::Backpressure)
            .then(|| Arc::new(SharedLog::new(config.capacity)));
        Ok(PublishSubscribe {
            inner: Arc::new(Inner {
                guard: LoopGuard::new(config.loop_detection),
                log,
                config,
                subscriptions: Mutex::new(Subscriptions::default()),
            }),
        })
    }
}

impl fmt::Debug for PublishSubscribe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublishSubscribe")
            .field("name", &self.name())
            .field("capacity", &self.capacity())
            .field("overflow", &self.overflow())
            .field("subscribers", &self.subscriber_count())
            .finish()
    }
}

/// A subscriber's handle: a [`Receiver`] over its subscription (it derefs to one).
pub struct Subscriber {
    receiver: Receiver,
    detach: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Subscriber {
    pub(crate) fn new(receiver: Receiver, detach: Option<Box<dyn FnOnce() + Send + Sync>>) -> Self {
        Subscriber { receiver, detach }
    }

    /// Whether the subscription outlives this handle.
    pub fn is_durable(&self) -> bool {
        self.detach.is_none()
    }
}

impl Deref for Subscriber {
    type Target = Receiver;
    fn deref(&self) -> &Receiver {
        &self.receiver
    }
}

impl DerefMut for Subscriber {
    fn deref_mut(&mut self) -> &mut Receiver {
        &mut self.receiver
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        if let Some(detach) = self.detach.take() {
            // Back into the subscription first, so ending it discards them with the rest
            // rather than finding them in a closed queue later.
            self.receiver.return_prefetched();
            detach();
        }
    }
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("channel", &self.receiver.channel())
            .field("durable", &self.is_durable())
            .finish()
    }
}
