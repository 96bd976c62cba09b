//! A lane: one store, with the channel's rules for what leaves it other than by an ack.
//!
//! A point-to-point channel has one lane; each subscription of a publish-subscribe channel has
//! one. The [store](crate::store) keeps the messages; the lane knows the channel's name, its
//! dead letter channel and its redelivery policy, puts there what the store hands back
//! (dropped for a slow subscriber, expired, requeued after the channel was deleted), and
//! counts it. Every store gets these rules the same way, so no store implements them.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::dead_letter::DeadLetterChannel;
use super::error::SendError;
use super::redelivery::RedeliveryPolicy;
use super::stats::ChannelStats;
use crate::log::Escaped;
use crate::message::{DeathReason, Message};
use crate::store::{MessageStore, Push, StoreFailure};

pub(crate) struct Lane {
    pub(crate) store: Arc<dyn MessageStore>,
    pub(crate) name: Arc<str>,
    pub(crate) dead_letters: Option<DeadLetterChannel>,
    pub(crate) redelivery: RedeliveryPolicy,
    dead_lettered: AtomicU64,
    discarded: AtomicU64,
}

/// Why a push did not store.
pub(crate) enum Refused {
    Closed(Message),
    Failed(Message, StoreFailure),
}

impl Refused {
    pub(crate) fn into_send_error(self, channel: &str) -> SendError {
        match self {
            Refused::Closed(message) => SendError::Closed {
                channel: channel.to_owned(),
                message: Box::new(message),
            },
            Refused::Failed(message, cause) => SendError::Store {
                channel: channel.to_owned(),
                cause,
                message: Box::new(message),
            },
        }
    }

    pub(crate) fn into_message(self) -> Message {
        match self {
            Refused::Closed(m) | Refused::Failed(m, _) => m,
        }
    }
}

impl Lane {
    pub(crate) fn new(
        name: Arc<str>,
        store: Arc<dyn MessageStore>,
        dead_letters: Option<DeadLetterChannel>,
        redelivery: RedeliveryPolicy,
    ) -> Self {
        Lane {
            store,
            name,
            dead_letters,
            redelivery,
            dead_lettered: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
        }
    }

    /// Pushes the message in `slot`, waiting for room; dead-letters what a `DropOldest` store
    /// drops to make room. Cancel-safe as [`MessageStore::push`].
    pub(crate) async fn push(&self, slot: &mut Option<Message>) -> Result<(), Refused> {
        self.push_into(&*self.store, slot).await
    }

    /// [`push`](Self::push) into `store`, this lane's store as the sender holds it: a sender
    /// that goes through its own handle does not read the lane, whose reference count every
    /// delivery changes on the consumer's core.
    pub(crate) async fn push_into(
        &self,
        store: &dyn MessageStore,
        slot: &mut Option<Message>,
    ) -> Result<(), Refused> {
        self.pushed(store.push(slot).await).await
    }

    /// Carries out what a push into this lane's store answered.
    pub(crate) async fn pushed(&self, push: Push) -> Result<(), Refused> {
        match push {
            Push::Stored => Ok(()),
            Push::StoredDropping(oldest) => {
                // Boxed: dead-lettering pushes onto another lane, a recursive await.
                Box::pin(self.dead_letter(oldest, DeathReason::DroppedSlowSubscriber, None)).await;
                Ok(())
            }
            Push::Closed(msg) | Push::Full(msg) => Err(Refused::Closed(msg)),
            Push::Failed(msg, cause) => Err(Refused::Failed(msg, cause)),
        }
    }

    /// A delivered message goes back to the head, its redelivery count raised; after the
    /// channel was deleted, to the dead letter channel.
    pub(crate) fn requeue(&self, mut msg: Message) {
        msg.mark_redelivered();
        if let Err(msg) = self.store.requeue(msg) {
            self.dead_letter_now(msg, DeathReason::ChannelDeleted, None);
        }
    }

    /// Prefetched messages a receiver gives back undelivered.
    pub(crate) fn unprefetch(&self, messages: &mut VecDeque<Message>) {
        for msg in self.store.unprefetch(messages) {
            self.dead_letter_now(msg, DeathReason::ChannelDeleted, None);
        }
    }

    /// Moves `msg` to the dead letter channel, waiting for room there; without one, logs and
    /// counts the loss. Cancel-safe: if the wait is cancelled the message is forced in.
    pub(crate) async fn dead_letter(
        &self,
        msg: Message,
        reason: DeathReason,
        error: Option<String>,
    ) {
        self.dead_lettered.fetch_add(1, Ordering::Relaxed);
        match &self.dead_letters {
            Some(dlc) => {
                if let Err(msg) = dlc.bury(msg, &self.name, reason, error).await {
                    self.discard(&msg, reason);
                }
            }
            None => self.discard(&msg, reason),
        }
    }

    /// Like [`dead_letter`](Self::dead_letter) for paths that can not wait.
    pub(crate) fn dead_letter_now(&self, msg: Message, reason: DeathReason, error: Option<String>) {
        match &self.dead_letters {
            Some(dlc) => match dlc.bury_now(msg, &self.name, reason, error) {
                Ok(()) => {
                    self.dead_lettered.fetch_add(1, Ordering::Relaxed);
                }
                Err(msg) => self.discard(&msg, reason),
            },
            None => self.discard(&msg, reason),
        }
    }

    fn discard(&self, msg: &Message, reason: DeathReason) {
        self.discarded.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            channel = %self.name,
            message = %msg.id(),
            reason = %Escaped(&reason),
            "no open dead letter channel: message discarded"
        );
    }

    /// Closes the store and dead-letters what was waiting (reason `channel-deleted`); how many.
    pub(crate) async fn close(&self) -> usize {
        let rest = self.store.close();
        let n = rest.len();
        for msg in rest {
            self.dead_letter(msg, DeathReason::ChannelDeleted, None)
                .await;
        }
        n
    }

    /// Like [`close`](Self::close) for paths that can not wait.
    pub(crate) fn close_now(&self) {
        for msg in self.store.close() {
            self.dead_letter_now(msg, DeathReason::ChannelDeleted, None);
        }
    }

    pub(crate) fn stats(&self) -> ChannelStats {
        let s = self.store.stats();
        ChannelStats {
            depth: s.depth,
            in_flight: s.in_flight,
            accepted: s.accepted,
            delivered: s.delivered,
            acked: s.acked,
            requeued: s.requeued,
            dead_lettered: self.dead_lettered.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
            duplicates: 0,
            invalid: 0,
        }
    }
}
