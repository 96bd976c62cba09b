//! A publish-subscribe channel's subscriptions: the set a publish reads, durable ones by
//! name, and where each one's store lives (the shared log, the channel's backend, memory).

use std::collections::HashMap;
use std::sync::Arc;

use super::{PublishSubscribe, Subscriber};
use crate::channel::delivery::{Receiver, SUBSCRIPTION_PREFETCH};
use crate::channel::error::ChannelError;
use crate::channel::lane::Lane;
use crate::channel::outgoing::{Join, JoinId, Joins};
use crate::channel::ready::Awaited;
use crate::log::Escaped;
use crate::message::MessageId;
use crate::store::SUBSCRIPTION_SEPARATOR;

/// The channel's subscriptions, under its lock.
#[derive(Default)]
pub(super) struct Subscriptions {
    /// Replaced (not changed) on every change, so a publish takes it with one
    /// reference-count increment.
    pub(super) current: Arc<Current>,
    pub(super) durable: HashMap<String, Arc<Lane>>,
    /// On a channel kept in a broker: the joins leaving it, each followed by a task reading a
    /// subscription of its own, stopped by its `Notify`.
    pub(super) through_broker: HashMap<JoinId, (Arc<Join>, Arc<tokio::sync::Notify>)>,
    pub(super) closed: bool,
}

/// What a publish reads, in one look: replaced whole on every change.
#[derive(Default, Clone)]
pub(super) struct Current {
    /// The channel's own subscriptions (reading the log, if there is one).
    pub(super) own: Vec<Arc<Lane>>,
    /// Queues attached from outside (bus wildcard subscriptions spanning several channels): a
    /// publish pushes to each; deleting this channel detaches them but must not close them.
    pub(super) foreign: Vec<Arc<Lane>>,
    /// The joins leaving this channel.
    pub(super) joins: Joins,
}

impl Current {
    pub(super) fn all(&self) -> impl Iterator<Item = &Arc<Lane>> {
        self.own.iter().chain(&self.foreign)
    }
}

impl Subscriptions {
    /// Replaces the current set with `change` applied to a copy of it.
    pub(super) fn change(&mut self, change: impl FnOnce(&mut Current)) {
        let mut next = Current::clone(&self.current);
        change(&mut next);
        self.current = Arc::new(next);
    }
}

impl PublishSubscribe {
    /// A new lane for an own subscription, in the set; on a deleted channel, a closed one (its
    /// consumers see the end at once). A durable subscription (`durable` names its store)
    /// lives in the channel's backend; any other in memory.
    pub(super) fn new_subscription(
        &self,
        subs: &mut Subscriptions,
        durable: Option<&str>,
    ) -> Arc<Lane> {
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
    pub(super) fn subscription_store(&self, name: &str) -> String {
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

    /// The acknowledgement of the message `id`, taken through the durable subscription `name` and not
    /// settled yet, for a commit of the caller's own: see
    /// [`MessageStore::durable_ack`](crate::store::MessageStore::durable_ack). `None` unless the
    /// subscription is durable.
    pub fn durable_ack(
        &self,
        name: &str,
        id: MessageId,
    ) -> Option<crate::store::durable::DurableAck> {
        let queue = self.lock().durable.get(name)?.clone();
        queue.store.durable_ack(id)
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
}

impl PublishSubscribe {
    /// Brings back the durable subscriptions the channel's backend holds (after a restart).
    pub(super) fn reopen_durable_subscriptions(&self) -> Result<(), ChannelError> {
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

impl PublishSubscribe {
    /// The stores [`ready`](PublishSubscribe::ready) waits for: where a publish goes on a
    /// broker, and every subscription's, each named.
    pub(crate) fn awaited(&self) -> Vec<Awaited> {
        let location = self.inner.config.backend.location();
        let channel = self.name();
        let subs = self.lock();
        let named = |lane: &Arc<Lane>| {
            subs.durable
                .iter()
                .find(|(_, durable)| Arc::ptr_eq(durable, lane))
                .map(|(name, _)| name.as_str())
        };
        let mut awaited: Vec<Awaited> = subs
            .current
            .own
            .iter()
            .map(|lane| {
                let what = match named(lane) {
                    Some(name) => format!("channel `{channel}` subscription `{name}` ({location})"),
                    None => format!("channel `{channel}`, a subscription ({location})"),
                };
                (what, lane.store.clone())
            })
            .collect();
        if let Some(fan_out) = &self.inner.fan_out {
            awaited.push((
                format!("channel `{channel}` ({location})"),
                fan_out.store.clone(),
            ));
        }
        awaited
    }
}
