//! Point-to-Point Channel: each message is received by exactly one consumer.
//!
//! Any number of receivers may compete for a point-to-point channel's messages; each message is
//! delivered to one of them, and delivered again (to any of them) only if that delivery was
//! nacked or dropped without being settled. Messages from one producer are delivered in the
//! order sent (a requeued message goes back to the head). The channel is bounded: `send` waits
//! while it holds `capacity` messages, counting deliveries not yet settled.

use std::fmt;
use std::sync::Arc;

use super::builder::ChannelBuilder;
use super::datatype::DatatypeCheck;
use super::delivery::Receiver;
use super::error::{ChannelError, SendError, TrySendError};
use super::lane::{Lane, Refused};
use super::selector::Selector;
use super::sender::ChannelSender;
use super::stats::ChannelStats;
use super::{LoopGuard, Mode, Moment, Outcome, Refusal, Rules, StoreNow, Stored};
use crate::message::{DeathReason, Message, MessageId};
use crate::store::{MessageStore, Push, Waiting};

/// A channel whose every message goes to exactly one of its competing consumers.
#[derive(Clone)]
pub struct PointToPoint {
    queue: Arc<Lane>,
    /// The lane's store, for senders (see [`Lane::push_into`]).
    store: Arc<dyn MessageStore>,
    datatype: Option<Arc<DatatypeCheck>>,
    guard: Arc<LoopGuard>,
    time_to_live: Option<std::time::Duration>,
    /// Whether it records itself in the messages it stores.
    history: bool,
}

impl PointToPoint {
    /// A channel with default settings and this capacity.
    pub fn new(name: &str, capacity: usize) -> Result<Self, ChannelError> {
        PointToPoint::builder(name).capacity(capacity).build()
    }

    /// A builder for a channel named `name`.
    pub fn builder(name: &str) -> ChannelBuilder<PointToPoint> {
        ChannelBuilder::new(name)
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.queue.name
    }

    /// How many messages it holds at most.
    pub fn capacity(&self) -> usize {
        self.queue.store.capacity()
    }

    /// Whether its messages survive the process (it lives in a durable store).
    pub fn is_durable(&self) -> bool {
        self.queue.store.is_durable()
    }

    /// Where undeliverable messages go, if anywhere.
    pub fn dead_letter_channel(&self) -> Option<&super::DeadLetterChannel> {
        self.queue.dead_letters.as_ref()
    }

    /// Sends a message, waiting while the channel is full. Completes when the channel has
    /// accepted the message (or diverted it to the invalid message channel).
    pub async fn send(&self, msg: Message) -> Result<Outcome, SendError> {
        // Everything before the one await is one statement, and what waits is boxed: a value
        // held across an await (a match's scrutinee included) is part of the future, and every
        // byte of the future is moved at least once per send. The common case, room in a store
        // in memory, waits for nothing.
        let loops = Mode::Store {
            loops: self.guard.clock(),
        };
        let waiting: Result<Waiting<'_, Result<(), Refused>>, Waiting<'_, Stored>> =
            match self.rules().admit(msg, false, loops) {
                Ok(msg) => match self.store.push_now(msg) {
                    Ok(stored @ Push::Stored) => {
                        // It holds nothing: forgotten, it skips the drop glue of a `Push` (a
                        // call that matches on every kind, each message a send stores).
                        std::mem::forget(stored);
                        return Ok(Outcome::Accepted);
                    }
                    Ok(pushed) => Ok(Box::pin(self.queue.pushed(pushed))),
                    Err(msg) => Ok(Box::pin(self.push_waiting(msg))),
                },
                Err(refusal) => match refusal.carry_out(self.name()) {
                    Ok(stored) => return stored.outcome(self.name()),
                    Err(refusing) => Err(refusing),
                },
            };
        match waiting {
            Ok(pushing) => match pushing.await {
                Ok(()) => Ok(Outcome::Accepted),
                Err(refused) => Err(refused.into_send_error(self.name())),
            },
            Err(refusing) => refusing.await.outcome(self.name()),
        }
    }

    /// A send's push that waits: for room, or for the store to say it is stored for good.
    async fn push_waiting(&self, msg: Message) -> Result<(), Refused> {
        let mut slot = Some(msg);
        self.queue.push_into(&*self.store, &mut slot).await
    }

    /// Stores one message here, by the channel's [rules](super::admission): the loop memory
    /// decides given the time (`loops`). Done at once when the store has room; what waits
    /// (for room, or for a durable store's commit) owns handles of its own.
    pub(crate) fn store_now(&self, msg: Message, loops: Option<Moment>) -> StoreNow {
        // Deleted or not, the push finds out.
        let msg = match self.rules().admit(msg, false, Mode::Store { loops }) {
            Ok(msg) => msg,
            Err(refusal) => return refusal.carry_out(self.name()),
        };
        let pushed = match self.store.push_now(msg) {
            // Joins never start at a queue: nothing to follow from here.
            Ok(Push::Stored) => return Ok(Stored::Yes),
            Ok(pushed) => Ok(pushed),
            Err(msg) => Err(msg),
        };
        let this = self.clone();
        Err(Box::pin(async move {
            let done = match pushed {
                Ok(pushed) => this.queue.pushed(pushed).await,
                Err(msg) => this.push_waiting(msg).await,
            };
            match done {
                Ok(()) => Stored::Yes,
                Err(refused) => Stored::Refused(refused),
            }
        }))
    }

    /// Sends a message if there is room now.
    pub fn try_send(&self, msg: Message) -> Result<Outcome, TrySendError> {
        let loops = Mode::Store {
            loops: self.guard.clock(),
        };
        let msg = match self.rules().admit(msg, false, loops) {
            Ok(msg) => msg,
            Err(Refusal::Invalid {
                check,
                reason,
                message,
            }) => {
                check.divert_now(self.name(), message, reason.clone());
                return Ok(Outcome::Invalid { reason });
            }
            Err(Refusal::Duplicate) => return Ok(Outcome::Duplicate),
            Err(Refusal::Closed(message)) => {
                return Err(TrySendError::Closed {
                    channel: self.name().to_owned(),
                    message: Box::new(message),
                });
            }
        };
        match self.store.try_push(msg) {
            Push::Stored => Ok(Outcome::Accepted),
            Push::StoredDropping(oldest) => {
                self.queue
                    .dead_letter_now(oldest, DeathReason::DroppedSlowSubscriber, None);
                Ok(Outcome::Accepted)
            }
            Push::Full(message) => Err(TrySendError::Full {
                channel: self.name().to_owned(),
                capacity: self.capacity(),
                message: Box::new(message),
            }),
            Push::Closed(message) => Err(TrySendError::Closed {
                channel: self.name().to_owned(),
                message: Box::new(message),
            }),
            Push::Failed(message, cause) => Err(TrySendError::Store {
                channel: self.name().to_owned(),
                cause,
                message: Box::new(message),
            }),
        }
    }

    /// A new competing consumer.
    pub fn receiver(&self) -> Receiver {
        Receiver::new(self.queue.clone(), None)
    }

    /// A new competing consumer that takes only what `selector` accepts
    /// (see [Selective Consumer](super::selector)).
    pub fn selective_receiver(&self, selector: Selector) -> Receiver {
        Receiver::new(self.queue.clone(), Some(selector))
    }

    /// The send side as a `tower::Service<Message>`.
    pub fn sender(&self) -> ChannelSender {
        ChannelSender::new(super::Channel::PointToPoint(self.clone()))
    }

    /// The channel's counters.
    pub fn stats(&self) -> ChannelStats {
        ChannelStats {
            duplicates: self.guard.duplicates(),
            invalid: self.datatype.as_ref().map_or(0, |d| d.diverted()),
            ..self.queue.stats()
        }
    }

    /// Deletes the channel: senders get [`SendError::Closed`], receivers drain nothing more, and
    /// every waiting message goes to the dead letter channel with reason `channel-deleted`.
    /// Deliveries in flight may still be acked; nacked ones are dead-lettered the same way.
    /// Returns how many messages were dead-lettered.
    pub async fn delete(&self) -> usize {
        self.queue.close().await
    }

    /// Deletes the channel without waiting: waiting messages are forced into the dead letter
    /// channel. For drop handlers.
    pub(crate) fn delete_now(&self) {
        self.queue.close_now();
    }

    /// Whether the channel was deleted.
    pub fn is_closed(&self) -> bool {
        self.queue.store.is_closed()
    }

    /// The acknowledgement of the message `id`, taken from this channel and not settled yet, for a commit
    /// of the caller's own: see [`MessageStore::durable_ack`].
    /// `None` unless the channel is durable.
    pub fn durable_ack(&self, id: MessageId) -> Option<crate::store::durable::DurableAck> {
        self.queue().store.durable_ack(id)
    }

    pub(crate) fn queue(&self) -> &Arc<Lane> {
        &self.queue
    }

    /// The name of the datatype it carries, for a Datatype Channel.
    pub fn datatype(&self) -> Option<&str> {
        self.datatype.as_deref().map(|d| d.datatype.name())
    }

    /// What the channel applies to a message it stores.
    pub(crate) fn rules(&self) -> Rules<'_> {
        Rules {
            datatype: self.datatype.as_deref(),
            time_to_live: self.time_to_live,
            history: self.history.then(|| self.name()),
            guard: &self.guard,
        }
    }

    pub(crate) fn loop_guard(&self) -> &LoopGuard {
        &self.guard
    }

    /// Identity of the channel (shared by its clones), for visited sets.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.queue) as usize
    }
}

impl ChannelBuilder<PointToPoint> {
    /// The channel, or why this configuration can not work.
    pub fn build(self) -> Result<PointToPoint, ChannelError> {
        let config = self.config.validated()?;
        if config.backend.fans_out() {
            // Its stores publish to every subscription: no store would hold the messages.
            return Err(ChannelError::Store {
                channel: config.name.to_string(),
                source: crate::store::BackendError {
                    store: config.name.to_string(),
                    location: config.backend.location(),
                    cause: crate::store::StoreFailure::new(std::io::Error::other(
                        "this store fans out to subscriptions: it keeps a publish-subscribe \
                         channel, not a point-to-point one",
                    )),
                },
            });
        }
        let lane = config.lane(&config.name)?;
        Ok(PointToPoint {
            store: lane.store.clone(),
            queue: Arc::new(lane),
            datatype: config.datatype.map(Arc::new),
            guard: Arc::new(LoopGuard::new(config.loop_detection)),
            time_to_live: config.time_to_live,
            history: config.history,
        })
    }
}

impl fmt::Debug for PointToPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PointToPoint")
            .field("name", &self.name())
            .field("capacity", &self.capacity())
            .field("datatype", &self.datatype)
            .finish()
    }
}
