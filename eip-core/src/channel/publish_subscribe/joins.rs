//! The joins leaving a publish-subscribe channel: followed by the publish in this process,
//! or, on a channel kept in a broker, through a durable subscription of their own.

use std::sync::Arc;

use super::{PublishSubscribe, Subscriber, Subscriptions};
use crate::channel::delivery::{Receiver, SUBSCRIPTION_PREFETCH};
use crate::channel::outgoing::{Follow, Join, JoinId, Joins};

impl PublishSubscribe {
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
                if let Some(following) = follow(&channel, joins.clone(), message, None) {
                    following.await;
                }
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
}
