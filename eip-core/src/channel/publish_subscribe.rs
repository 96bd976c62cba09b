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
//! subscriber receives only while it listens. On a channel built on a durable
//! [store](crate::store), durable subscriptions live in that store: they keep their messages
//! and their place across restarts, and come back with the channel.
//!
//! A publish cancelled while waiting for room (its future dropped) has reached no subscription of
//! this channel. (A bus wildcard subscription, or a `DropOldest` channel's subscriptions, take
//! their copies one after another: a cancelled publish may have reached only some of those.)

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use super::builder::{ChannelBuilder, ChannelConfig};
use super::delivery::{Receiver, SUBSCRIPTION_PREFETCH};
use super::error::{ChannelError, SendError};
use super::lane::{Lane, Refused};
use super::outgoing::{Follow, Join, JoinId, Joins};
use super::selector::Selector;
use super::sender::ChannelSender;
use super::stats::ChannelStats;
use super::{LoopGuard, Mode, Outcome, Rules, Stored};
use crate::log::Escaped;
use crate::message::{DeathReason, Message};
use crate::store::memory::shared_log::SharedLog;
use crate::store::{Overflow, Push, SUBSCRIPTION_SEPARATOR, Select};

/// A channel whose every message goes to each of its subscribers.
#[derive(Clone)]
pub struct PublishSubscribe {
    inner: Arc<Inner>,
}

struct Inner {
    config: ChannelConfig,
    /// A publish only appends to the log: there is a log, no foreign queue, no join, and the
    /// channel is not deleted. Kept with every change of the set, so that such a publish (the
    /// common one) takes no lock but the log's.
    log_only: AtomicBool,
    /// What the channel's own subscriptions read from, under `Backpressure`. Under `DropOldest`
    /// a publish pushes to each (the policy acts on each subscription's own queue).
    log: Option<Arc<SharedLog>>,
    /// On a backend that fans out (a broker): where a publish goes, once; the broker fills
    /// every subscription's store.
    fan_out: Option<Lane>,
    subscriptions: Mutex<Subscriptions>,
    guard: LoopGuard,
    /// How a publish follows the joins leaving the channel: set with the first join.
    follow: OnceLock<Follow>,
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
    durable: HashMap<String, Arc<Lane>>,
    /// On a channel kept in a broker: the joins leaving it, each followed by a task reading a
    /// subscription of its own, stopped by its `Notify`.
    through_broker: HashMap<JoinId, (Arc<Join>, Arc<tokio::sync::Notify>)>,
    closed: bool,
}

#[derive(Default, Clone)]
struct Current {
    /// The channel's own subscriptions (reading the log, if there is one).
    own: Vec<Arc<Lane>>,
    /// Queues attached from outside (bus wildcard subscriptions spanning several channels): a
    /// publish pushes to each; deleting this channel detaches them but must not close them.
    foreign: Vec<Arc<Lane>>,
    /// The joins leaving this channel.
    joins: Joins,
}

impl Current {
    fn all(&self) -> impl Iterator<Item = &Arc<Lane>> {
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

    /// Whether its messages survive the process (it lives in a durable store): then its
    /// durable subscriptions do too.
    pub fn is_durable(&self) -> bool {
        self.inner.config.backend.is_durable()
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

    /// Applies `change` to the set and says whether a publish now only appends to the log.
    fn change(&self, subs: &mut Subscriptions, change: impl FnOnce(&mut Current)) {
        subs.change(change);
        let log_only = self.inner.log.is_some()
            && !subs.closed
            && subs.current.foreign.is_empty()
            && subs.current.joins.is_empty();
        self.inner.log_only.store(log_only, Ordering::SeqCst);
    }

    /// The subscriptions and the joins, in one look; `None` once deleted.
    fn snapshot(&self) -> Option<Arc<Current>> {
        let subs = self.lock();
        (!subs.closed).then(|| subs.current.clone())
    }

    /// The queues a publish pushes to one by one.
    fn pushed_to<'a>(&self, current: &'a Current) -> impl Iterator<Item = &'a Arc<Lane>> {
        let own: &[Arc<Lane>] = if self.inner.log.is_some() || self.inner.fan_out.is_some() {
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
        let now = self.inner.guard.clock();
        match self.store(msg, now).await {
            Stored::Forward(stored, joins) => {
                // Joins are attached with the function that follows them (`add_join`).
                if let Some(follow) = self.inner.follow.get() {
                    follow(self, joins, stored, now).await;
                }
                Ok(Outcome::Accepted)
            }
            other => other.outcome(self.name()),
        }
    }

    /// Stores one message in every subscription (joins not followed), by the channel's
    /// [rules](super::admission): the loop memory decides given the time (`loops`).
    pub(crate) async fn store(&self, msg: Message, loops: Option<Instant>) -> Stored {
        if let Some(log) = self
            .inner
            .log
            .as_ref()
            .filter(|_| self.inner.log_only.load(Ordering::SeqCst))
        {
            // A deletion from here on closes the log first: the append sees it. Admitted in a
            // statement of its own, so that its result is not held across the append (that
            // would grow every publish's future).
            let msg = match self.rules().admit(msg, false, Mode::Store { loops }) {
                Ok(msg) => msg,
                Err(refusal) => return refusal.into_stored(self.name()).await,
            };
            return match log.append(msg).await {
                Ok(()) => Stored::Yes,
                Err(msg) => Stored::Refused(Refused::Closed(msg)),
            };
        }
        let current = self.snapshot();
        let deleted = current.is_none();
        let msg = match self.rules().admit(msg, deleted, Mode::Store { loops }) {
            Ok(msg) => msg,
            Err(refusal) => return refusal.into_stored(self.name()).await,
        };
        let Some(current) = current else {
            // Not reached: a deleted channel admits nothing.
            return Stored::Refused(Refused::Closed(msg));
        };
        // The waiting paths are boxed: they are rare, and a future holding them inline would
        // be moved whole for every message.
        if let Some(log) = &self.inner.log {
            // Only foreign queues or joins bring a publish here (see `log_only`): they need
            // the message after the log.
            if let Err(copy) = log.append(msg.clone()).await {
                return Stored::Refused(Refused::Closed(copy));
            }
        }
        if let Some(fan_out) = &self.inner.fan_out {
            let mut slot = Some(msg.clone());
            if let Err(refused) = Box::pin(fan_out.push(&mut slot)).await {
                return Stored::Refused(refused);
            }
            // Bus wildcard subscriptions in this process still get their copies here.
            for queue in &current.foreign {
                let _ = Box::pin(queue.push(&mut Some(msg.clone()))).await;
            }
        } else if self.inner.config.backend.is_durable() {
            if let Some(cause) = Box::pin(self.push_durably(&current, &msg)).await {
                return Stored::Refused(Refused::Failed(msg, cause));
            }
        } else {
            for queue in self.pushed_to(&current) {
                // A subscription closed since the snapshot has just unsubscribed: skipping it
                // is exactly what would have happened a moment later.
                match queue.store.try_push(msg.clone()) {
                    Push::Stored | Push::Closed(_) | Push::Failed(..) => {}
                    Push::StoredDropping(oldest) => {
                        Box::pin(queue.dead_letter(
                            oldest,
                            DeathReason::DroppedSlowSubscriber,
                            None,
                        ))
                        .await
                    }
                    Push::Full(copy) => {
                        let _ = Box::pin(queue.push(&mut Some(copy))).await;
                    }
                }
            }
        }
        if current.joins.is_empty() {
            Stored::Yes
        } else {
            Stored::Forward(msg, current.joins.clone())
        }
    }

    /// Pushes a copy to every subscription at once, so that a durable store writes them in one
    /// commit; the first failure, if any subscription's store could not take its copy.
    async fn push_durably(
        &self,
        current: &Current,
        msg: &Message,
    ) -> Option<crate::store::StoreFailure> {
        let pushes = self.pushed_to(current).map(|lane| async move {
            let mut slot = Some(msg.clone());
            lane.push(&mut slot).await
        });
        futures::future::join_all(pushes)
            .await
            .into_iter()
            .find_map(|pushed| match pushed {
                Err(Refused::Failed(_, cause)) => Some(cause),
                _ => None,
            })
    }

    /// The joins leaving this channel, as of now.
    pub fn joins(&self) -> Arc<[Arc<Join>]> {
        let subs = self.lock();
        if subs.through_broker.is_empty() {
            return subs.current.joins.clone();
        }
        let mut remote: Vec<&Arc<Join>> = subs.through_broker.values().map(|(j, _)| j).collect();
        remote.sort_by_key(|j| j.id);
        subs.current.joins.iter().chain(remote).cloned().collect()
    }

    /// On a channel kept in a broker (one that fans out) a publish does not follow the joins
    /// leaving it in the publishing process: each join reads a durable subscription of its
    /// own, `join-DESTINATION`, shared by every process that has the same join, so each
    /// message published on the channel, in whatever process, crosses the join once, with the
    /// hop budget it carries. False without a tokio runtime to read it on.
    fn join_through_broker(&self, subs: &mut Subscriptions, join: Join, follow: Follow) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(channel = %self.name(), "a join from a channel kept in a broker needs a tokio runtime");
            return false;
        };
        let name = format!("join-{}", join.destination.name());
        let store = self.subscription_store(&name);
        let lane = match subs.durable.get(&name) {
            Some(lane) => lane.clone(),
            None => {
                let lane = self.new_subscription(subs, Some(&store));
                subs.durable.insert(name.clone(), lane.clone());
                lane
            }
        };
        let mut subscriber = Subscriber::new(
            Receiver::new(lane, None).with_prefetch(SUBSCRIPTION_PREFETCH),
            None,
        );
        let join = Arc::new(join);
        let stop = Arc::new(tokio::sync::Notify::new());
        subs.through_broker
            .insert(join.id, (join.clone(), stop.clone()));
        let joins: Joins = Arc::from([join]);
        let channel = self.clone();
        runtime.spawn(async move {
            loop {
                let delivery = tokio::select! {
                    biased;
                    () = stop.notified() => break,
                    delivery = subscriber.recv() => delivery,
                };
                let Some(delivery) = delivery else { break };
                let message = delivery.message().clone();
                follow(&channel, joins.clone(), message, None).await;
                delivery.ack();
            }
        });
        true
    }

    /// Attaches a join, which publishes from now on carry on over with `follow` (the join
    /// module's); false if the channel is deleted.
    pub(crate) fn add_join(&self, join: Join, follow: Follow) -> bool {
        let mut subs = self.lock();
        if subs.closed {
            return false;
        }
        if self.inner.fan_out.is_some() {
            return self.join_through_broker(&mut subs, join, follow);
        }
        // Before the set changes: a publish that sees the join sees how to follow it.
        self.inner.follow.get_or_init(|| follow);
        self.change(&mut subs, |c| {
            c.joins = c.joins.iter().cloned().chain([Arc::new(join)]).collect()
        });
        true
    }

    /// Removes the join `id`; returns whether it was there. Publishes that start after this
    /// returns no longer follow it.
    pub fn remove_join(&self, id: JoinId) -> bool {
        let mut subs = self.lock();
        if let Some((_, stop)) = subs.through_broker.remove(&id) {
            // This process stops following it; its subscription stays on the broker for the
            // other processes that have the same join.
            stop.notify_one();
            return true;
        }
        if !subs.current.joins.iter().any(|j| j.id == id) {
            return false;
        }
        self.change(&mut subs, |c| {
            c.joins = c.joins.iter().filter(|j| j.id != id).cloned().collect()
        });
        true
    }

    pub(crate) fn loop_guard(&self) -> &LoopGuard {
        &self.inner.guard
    }

    /// Identity of the channel (shared by its clones), for visited sets.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// What the channel applies to a message it stores.
    pub(crate) fn rules(&self) -> Rules<'_> {
        Rules {
            datatype: self.inner.config.datatype.as_ref(),
            time_to_live: self.inner.config.time_to_live,
            guard: &self.inner.guard,
        }
    }

    /// Whether a publish would complete now without waiting.
    pub(crate) fn accepts_now(&self) -> bool {
        self.snapshot().is_none_or(|current| {
            self.inner.log.as_ref().is_none_or(|log| log.accepts_now())
                && self
                    .inner
                    .fan_out
                    .as_ref()
                    .is_none_or(|f| f.store.accepts_now())
                && self.pushed_to(&current).all(|q| q.store.accepts_now())
        })
    }

    /// Waits until every subscription has room.
    pub(crate) async fn writable(&self) {
        while let Some(current) = self.snapshot() {
            if let Some(log) = self.inner.log.as_ref().filter(|log| !log.accepts_now()) {
                log.room().await;
                continue;
            }
            if let Some(fan_out) = self
                .inner
                .fan_out
                .as_ref()
                .filter(|f| !f.store.accepts_now())
            {
                fan_out.store.writable().await;
                continue;
            }
            match self.pushed_to(&current).find(|q| !q.store.accepts_now()) {
                Some(full) => full.store.writable().await,
                None => return,
            }
        }
    }

    /// A new lane for an own subscription, in the set; on a deleted channel, a closed one (its
    /// consumers see the end at once). A durable subscription (`durable` names its store)
    /// lives in the channel's backend; any other in memory.
    fn new_subscription(&self, subs: &mut Subscriptions, durable: Option<&str>) -> Arc<Lane> {
        let config = &self.inner.config;
        let memory = || Arc::new(config.lane_over(Arc::new(config.memory_queue())));
        if subs.closed {
            let closed = memory();
            closed.store.close();
            return closed;
        }
        let lane = match (&self.inner.log, durable) {
            _ if self.inner.fan_out.is_some() => {
                let name = durable.and_then(|store| store.split_once(SUBSCRIPTION_SEPARATOR));
                match config.backend.open_subscription(
                    &config.name,
                    name.map(|(_, name)| name),
                    config.capacity,
                    config.overflow,
                ) {
                    Ok(store) => Arc::new(config.lane_over(store)),
                    Err(e) => {
                        // Only a broker refusing what the subscription needs gets here: the
                        // subscriber sees the end at once rather than waiting for nothing.
                        tracing::error!(channel = %config.name, error = %Escaped(&e), "subscription could not be opened");
                        let closed = memory();
                        closed.store.close();
                        closed
                    }
                }
            }
            (_, Some(store)) if config.backend.is_durable() => match config.lane(store) {
                Ok(lane) => Arc::new(lane),
                Err(e) => {
                    // The channel's backend opened when the channel was built: only a disk
                    // failure since gets here. The subscription works, in memory.
                    tracing::error!(channel = %config.name, error = %Escaped(&e), "durable subscription kept in memory");
                    memory()
                }
            },
            (Some(log), _) => {
                match log.attach(|head| config.memory_queue().reading(log.clone(), head)) {
                    Some(fed) => Arc::new(config.lane_over(fed)),
                    // The log closes only after the set is marked deleted, under the lock held here.
                    None => memory(),
                }
            }
            (None, _) => memory(),
        };
        self.change(subs, |c| c.own.push(lane.clone()));
        lane
    }

    /// The name of the store of the durable subscription `name`.
    fn subscription_store(&self, name: &str) -> String {
        format!("{}{SUBSCRIPTION_SEPARATOR}{name}", self.name())
    }

    /// A new non-durable subscription; it ends when the returned [`Subscriber`] is dropped.
    pub fn subscribe(&self) -> Subscriber {
        let queue = self.new_subscription(&mut self.lock(), None);
        let channel = self.clone();
        let detach_queue = queue.clone();
        Subscriber::new(
            Receiver::new(queue, None).with_prefetch(SUBSCRIPTION_PREFETCH),
            Some(Box::new(move || {
                channel.detach(&detach_queue);
                detach_queue.store.close();
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
                let store = self.subscription_store(name);
                let q = self.new_subscription(&mut subs, Some(&store));
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
        let n = queue.close().await;
        if queue.store.is_durable() {
            let store = self.subscription_store(name);
            if let Err(e) = self.inner.config.backend.remove(&store).await {
                tracing::error!(channel = %self.name(), subscription = name, error = %Escaped(&e), "could not remove the durable subscription's store");
            }
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
    pub(crate) fn attach_foreign(&self, queue: Arc<Lane>) {
        let mut subs = self.lock();
        if !subs.closed {
            self.change(&mut subs, |c| c.foreign.push(queue));
        }
    }

    pub(crate) fn detach(&self, queue: &Arc<Lane>) {
        let mut subs = self.lock();
        if subs.current.all().any(|q| Arc::ptr_eq(q, queue)) {
            self.change(&mut subs, |c| {
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
        // What went out through a broker's fan-out counts as accepted (once per publish).
        let published = self.inner.fan_out.as_ref().map(|f| ChannelStats {
            accepted: f.stats().accepted,
            ..ChannelStats::default()
        });
        current
            .all()
            .map(|q| q.stats())
            .chain(published)
            .fold(duplicates, |a, b| a + b)
    }

    /// Purges every subscription (by selector if given); returns how many messages went.
    pub(crate) fn purge(&self, selector: Option<&Selector>) -> usize {
        let current = self.lock().current.clone();
        let select = selector.map(|s| s as &dyn Select);
        current.all().map(|q| q.store.purge(select)).sum()
    }

    /// Deletes the channel: publishers get [`SendError::Closed`] and every message waiting in
    /// a subscription goes to the dead letter channel with reason `channel-deleted`.
    pub async fn delete(&self) -> usize {
        let current = {
            let mut subs = self.lock();
            subs.closed = true;
            self.inner.log_only.store(false, Ordering::SeqCst);
            subs.durable.clear();
            std::mem::take(&mut subs.current)
        };
        if let Some(log) = &self.inner.log {
            log.close();
        }
        let mut n = 0;
        for queue in &current.own {
            n += queue.close().await;
        }
        if let Some(fan_out) = &self.inner.fan_out {
            n += fan_out.close().await;
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
        let durable = config.backend.is_durable();
        let log = (config.overflow == Overflow::Backpressure && !durable)
            .then(|| Arc::new(SharedLog::new(config.capacity)));
        let fan_out = if config.backend.fans_out() {
            Some(config.lane(&config.name)?)
        } else {
            None
        };
        let channel = PublishSubscribe {
            inner: Arc::new(Inner {
                log_only: AtomicBool::new(log.is_some()),
                guard: LoopGuard::new(config.loop_detection),
                follow: OnceLock::new(),
                log,
                fan_out,
                config,
                subscriptions: Mutex::new(Subscriptions::default()),
            }),
        };
        if durable {
            channel.reopen_durable_subscriptions()?;
        }
        Ok(channel)
    }
}

impl PublishSubscribe {
    /// Brings back the durable subscriptions the channel's backend holds (after a restart).
    fn reopen_durable_subscriptions(&self) -> Result<(), ChannelError> {
        let config = &self.inner.config;
        let prefix = format!("{}{SUBSCRIPTION_SEPARATOR}", self.name());
        let mut subs = self.lock();
        for store in config.backend.names(&prefix) {
            let Some(name) = store.strip_prefix(&prefix) else {
                continue;
            };
            let lane = Arc::new(config.lane(&store)?);
            self.change(&mut subs, |c| c.own.push(lane.clone()));
            subs.durable.insert(name.to_owned(), lane);
        }
        Ok(())
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
