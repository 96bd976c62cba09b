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
//!
//! The channel's parts: its subscriptions and durable subscribers (`subscriptions`), the
//! joins leaving it (`joins`), and the [`Subscriber`] handle (`subscriber`).

mod browse;
mod joins;
mod subscriber;
mod subscriptions;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::builder::{ChannelBuilder, ChannelConfig};
use super::error::{ChannelError, SendError};
use super::lane::{Lane, Refused};
use super::outgoing::Follow;
use super::outgoing::Joins;
use super::selector::Selector;
use super::sender::ChannelSender;
use super::stats::ChannelStats;
use super::{Copied, Guard, LoopGuard, Mode, Moment, Outcome, Rules, StoreNow, Stored};
use crate::message::{DeathReason, Message};
use crate::store::memory::shared_log::{Append, SharedLog};
use crate::store::{Overflow, Push, Select, Waiting};
use subscriptions::{Current, Subscriptions};

pub use subscriber::Subscriber;

/// A channel whose every message goes to each of its subscribers.
#[derive(Clone)]
pub struct PublishSubscribe {
    inner: Arc<Inner>,
}

struct Inner {
    config: ChannelConfig,
    /// A publish only appends to the log and follows the joins the log carries: there is a
    /// log, no foreign queue, no broker fan-out, and the channel is not deleted. Kept with
    /// every change of the set (the log's copy of the joins too), so that such a publish (the
    /// common one, a join chain's stores included) takes no lock but the log's.
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
        crate::sync::lock(&self.inner.subscriptions)
    }

    /// Applies `change` to the set and says whether a publish now only appends to the log.
    fn change(&self, subs: &mut Subscriptions, change: impl FnOnce(&mut Current)) {
        subs.change(change);
        let Some(log) = &self.inner.log else {
            return;
        };
        let log_only =
            !subs.closed && subs.current.foreign.is_empty() && self.inner.fan_out.is_none();
        let joins = &subs.current.joins;
        // The log's joins first: a publish that sees the flag sees the joins it goes with.
        log.carry_joins((log_only && !joins.is_empty()).then(|| joins.clone()));
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
        // Everything up to the one await is one statement, and what waits is boxed: a value
        // held across an await (a match's scrutinee included) is part of the future, and every
        // byte of the future is moved at least once per publish. The common case, a log with
        // room (and joins whose stores have room), waits for nothing. In a block: a local
        // stays in the future until its scope ends, moved or not.
        let waiting: Waiting<'_, Result<Outcome, SendError>> = {
            let storing = match self.log_only() {
                // Only the log to append to, the most common publish: written out here, as its
                // every step is paid per message.
                // The log keeps the loop memory and consults it as it appends.
                Some(log) => match self.rules().admit(msg, false, Mode::Store { loops: None }) {
                    Ok(msg) => match log.try_append_following(msg, now) {
                        Append::Stored(None) => return Ok(Outcome::Accepted),
                        Append::Stored(Some((stored, joins))) => Ok(Stored::Forward(stored, joins)),
                        Append::Closed(msg) => {
                            return Err(Refused::Closed(msg).into_send_error(self.name()));
                        }
                        Append::Full(msg) => Err(append_waiting(log.clone(), msg, now)),
                        Append::Duplicate(_) => Ok(Stored::Duplicate),
                    },
                    Err(refusal) => refusal.carry_out(self.name()),
                },
                None => self.store_now(msg, now),
            };
            match storing {
                Ok(Stored::Forward(stored, joins)) => match self.follow(joins, stored, now) {
                    None => return Ok(Outcome::Accepted),
                    Some(following) => Box::pin(async move {
                        following.await;
                        Ok(Outcome::Accepted)
                    }),
                },
                Ok(stored) => return stored.outcome(self.name()),
                Err(storing) => Box::pin(async move {
                    match storing.await {
                        Stored::Forward(stored, joins) => {
                            if let Some(following) = self.follow(joins, stored, now) {
                                following.await;
                            }
                            Ok(Outcome::Accepted)
                        }
                        other => other.outcome(self.name()),
                    }
                }),
            }
        };
        waiting.await
    }

    /// Follows `joins` with the message as stored here: what is left to wait for, if the
    /// stores they lead to did not all complete at once.
    fn follow(
        &self,
        joins: Joins,
        stored: Message,
        now: Option<Moment>,
    ) -> Option<Waiting<'_, ()>> {
        // Joins are attached with the function that follows them (`add_join`).
        let follow = self.inner.follow.get()?;
        follow(self, joins, stored, now)
    }

    /// Stores one message in every subscription (joins not followed), by the channel's
    /// [rules](super::admission): the loop memory decides given the time (`loops`). Done at
    /// once when the channel's log has room and it is all a store writes to (its own
    /// subscriptions, and joins to follow afterwards); the rest (a full log, bus wildcard
    /// subscriptions, a broker's fan-out, a durable store, `DropOldest`) is boxed, owning a
    /// handle of the channel.
    pub(crate) fn store_now(&self, msg: Message, loops: Option<Moment>) -> StoreNow {
        let Some(log) = self.log_only() else {
            return self.store_later(msg, loops);
        };
        // The log keeps the loop memory and consults it as it appends.
        let msg = match self.rules().admit(msg, false, Mode::Store { loops: None }) {
            Ok(msg) => msg,
            Err(refusal) => return refusal.carry_out(self.name()),
        };
        // The joins to follow come with the append; a deletion from here on closes the log
        // first, and the append sees it.
        match log.try_append_following(msg, loops) {
            Append::Stored(None) => Ok(Stored::Yes),
            Append::Stored(Some((stored, joins))) => Ok(Stored::Forward(stored, joins)),
            Append::Full(msg) => Err(append_waiting(log.clone(), msg, loops)),
            refused => Ok(stored(refused)),
        }
    }

    /// [`Channel::store_copy`](super::Channel::store_copy) here: done when only the log is
    /// stored to, it has room, and the rules change nothing (the loop memory, which the log
    /// keeps, decides under the append's lock as for [`store_now`](Self::store_now)).
    #[inline]
    pub(crate) fn store_copy<'g>(
        &self,
        msg: &Message,
        loops: Option<Moment>,
        guard: &'g Guard,
    ) -> Copied<'g> {
        match self.log_only() {
            Some(log) if self.rules().change_nothing() => log.try_append_copy(msg, loops, guard),
            _ => Copied::Declined,
        }
    }

    /// The log, when a publish does nothing but append to it (see `log_only`).
    #[inline]
    fn log_only(&self) -> Option<&Arc<SharedLog>> {
        self.inner
            .log
            .as_ref()
            .filter(|_| self.inner.log_only.load(Ordering::SeqCst))
    }

    /// [`store_now`](Self::store_now)'s general path, all of it to be awaited.
    fn store_later(&self, msg: Message, loops: Option<Moment>) -> StoreNow {
        let this = self.clone();
        Err(Box::pin(
            async move { this.store_in_each(msg, loops).await },
        ))
    }

    /// A store wherever a publish pushes (see [`store_now`](Self::store_now)): foreign
    /// queues, a broker's fan-out, a durable store, or `DropOldest`, and the log.
    async fn store_in_each(&self, msg: Message, loops: Option<Moment>) -> Stored {
        let current = self.snapshot();
        let deleted = current.is_none();
        let msg = match self.rules().admit(msg, deleted, Mode::Store { loops }) {
            Ok(msg) => msg,
            Err(refusal) => {
                return match refusal.carry_out(self.name()) {
                    Ok(stored) => stored,
                    Err(refusing) => refusing.await,
                };
            }
        };
        let Some(current) = current else {
            // Not reached: a deleted channel admits nothing.
            return Stored::Refused(Refused::Closed(msg));
        };
        // The waiting paths are boxed: they are rare, and a future holding them inline would
        // be moved whole for every message.
        if let Some(log) = &self.inner.log {
            // Only foreign queues (or a set changing under a publish) bring one here with a
            // log (see `log_only`): they need the message after the log.
            if let Err(copy) = log.append(msg.clone()).await {
                return Stored::Refused(Refused::Closed(copy));
            }
        }
        if let Err(refused) = self.push_copies(&current, &msg).await {
            return Stored::Refused(refused);
        }
        if current.joins.is_empty() {
            Stored::Yes
        } else {
            Stored::Forward(msg, current.joins.clone())
        }
    }

    /// Pushes `msg` where a publish pushes it (the log aside): once to a broker's fan-out,
    /// else a copy into each subscription's store; bus wildcard subscriptions in this process
    /// get their copies either way.
    async fn push_copies(&self, current: &Current, msg: &Message) -> Result<(), Refused> {
        if let Some(fan_out) = &self.inner.fan_out {
            let mut slot = Some(msg.clone());
            Box::pin(fan_out.push(&mut slot)).await?;
            // Bus wildcard subscriptions in this process still get their copies here.
            for queue in &current.foreign {
                let _ = Box::pin(queue.push(&mut Some(msg.clone()))).await;
            }
        } else if self.inner.config.backend.is_durable() {
            if let Some(cause) = Box::pin(self.push_durably(current, msg)).await {
                return Err(Refused::Failed(msg.clone(), cause));
            }
        } else {
            for queue in self.pushed_to(current) {
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
        Ok(())
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
            history: self.inner.config.history.then(|| &*self.inner.config.name),
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

/// An append's outcome as a store's.
fn stored(appended: Append) -> Stored {
    match appended {
        Append::Stored(None) => Stored::Yes,
        Append::Stored(Some((stored, joins))) => Stored::Forward(stored, joins),
        Append::Closed(msg) | Append::Full(msg) => Stored::Refused(Refused::Closed(msg)),
        Append::Duplicate(_) => Stored::Duplicate,
    }
}

/// The rest of a store that found the log full: the append, once there is room, and the
/// joins the log carries then.
fn append_waiting(
    log: Arc<SharedLog>,
    msg: Message,
    loops: Option<Moment>,
) -> Waiting<'static, Stored> {
    Box::pin(async move { stored(log.append_waiting(msg, loops).await) })
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
                log_only: AtomicBool::new(log.is_some() && fan_out.is_none()),
                guard: match &log {
                    Some(log) => LoopGuard::in_log(config.loop_detection, log.clone()),
                    None => LoopGuard::new(config.loop_detection),
                },
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
