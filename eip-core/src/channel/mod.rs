//! Message channels: the pipes between endpoints, and what they guarantee.
//!
//! - [`PointToPoint`]: each message to exactly one of competing consumers.
//! - [`PublishSubscribe`]: each message to every subscriber, with durable subscriptions and a
//!   slow-subscriber policy.
//! - [Datatype Channel](datatype): a channel that checks the type of what it carries.
//! - [`DeadLetterChannel`] and [`InvalidMessageChannel`]: where undeliverable and unprocessable
//!   messages go, with a death record.
//! - [Selective Consumer](selector), [Channel Purger](purger), and Message Expiration (an expired
//!   message is never delivered: it is dead-lettered with reason `expired` when it would be).
//!
//! Every channel is bounded: its capacity is backpressure, never unbounded memory. Receiving
//! yields a [`Delivery`] that is acked, nacked or rejected (see [`delivery`]). The send side of
//! any channel is a `tower::Service<Message>` ([`ChannelSender`]).
//!
//! What a channel does with a message before storing it (datatype, time-to-live, deletion, loop
//! memory) is decided in one place (`admission.rs`) for sends, joins and dry runs alike. A
//! publish-subscribe channel holds the [joins](crate::join) leaving it as plain data and follows
//! them through a function the join module attaches (`outgoing.rs`): `channel` does not depend
//! on `join`. The dry run of a send through joins, [`Channel::trace`], is the join module's.

mod admission;
mod anchor;
pub mod browse;
mod builder;
pub mod datatype;
pub mod dead_letter;
pub mod delivery;
mod error;
mod held_joins;
mod lane;
mod loop_guard;
pub(crate) mod outgoing;
pub mod point_to_point;
pub mod publish_subscribe;
pub mod purger;
mod ready;
mod redelivery;
pub mod selector;
pub mod sender;
mod stats;
mod walking;

pub use crate::store::Overflow;
pub(crate) use admission::{Mode, Refusal, Rules};
pub use builder::{ChannelBuilder, DEFAULT_CAPACITY};
pub use datatype::{Datatype, JsonSchema, JsonType};
pub use dead_letter::{DeadLetterChannel, InvalidMessageChannel, marked_dead};
pub use delivery::{Delivery, Receiver, SUBSCRIPTION_PREFETCH, TryRecvError};
pub use error::{ChannelError, SendError, TrySendError, validate_channel_name};
pub(crate) use held_joins::{HeldJoins, JoinsSlot};
pub use loop_guard::LoopDetection;
pub(crate) use loop_guard::{LoopGuard, Moment, RecentIds};
pub(crate) use outgoing::Joins;
pub use point_to_point::PointToPoint;
pub use publish_subscribe::{PublishSubscribe, Subscriber};
pub use purger::ChannelPurger;
pub use ready::{NotReady, all_ready};
pub use redelivery::RedeliveryPolicy;
pub use selector::Selector;
pub use sender::ChannelSender;
pub use stats::ChannelStats;
pub(crate) use walking::{Guard, pin};

use std::sync::Arc;

use crate::message::Message;

/// What became of a message a channel was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The channel accepted it (for publish-subscribe: every current subscription did).
    Accepted,
    /// It did not fit the channel's datatype and went to the invalid message channel.
    Invalid {
        /// Why it did not fit.
        reason: String,
    },
    /// The channel takes part in joins and had stored this message id already (loop
    /// detection): it was not stored again.
    Duplicate,
}

/// What storing one message at one channel did.
pub(crate) enum Stored {
    /// Stored, and no join leaves the channel.
    Yes,
    /// Stored; these joins leave the channel, to be followed with the message as stored.
    Forward(Message, Joins),
    /// Diverted to the invalid message channel.
    Invalid(String),
    /// Refused by loop detection.
    Duplicate,
    /// The channel is deleted, or its store could not take the message.
    Refused(lane::Refused),
}

/// What a store of a copy did ([`Channel::store_copy`]): the message stays with the caller.
pub(crate) enum Copied<'g> {
    /// Stored as given; the joins that leave the channel, if any, to follow with it, held
    /// while the store's guard lasts.
    Stored(Option<HeldJoins<'g>>),
    /// Refused by loop detection.
    Duplicate,
    /// Not done: this store needs the message itself ([`Channel::store_now`]).
    Declined,
}

/// A store at one channel: what it did, if it is done, or the rest of it, to be awaited. A store
/// that waits for nothing (room in memory, the common case) is done without a future; the rest
/// owns what it needs (the channel's handles), so a caller can keep it beside whatever told it
/// where to store (a join chain's walk) without borrowing from that.
pub(crate) type StoreNow = Result<Stored, crate::store::Waiting<'static, Stored>>;

impl Stored {
    #[inline]
    fn outcome(self, channel: &str) -> Result<Outcome, SendError> {
        match self {
            Stored::Yes | Stored::Forward(..) => Ok(Outcome::Accepted),
            Stored::Invalid(reason) => Ok(Outcome::Invalid { reason }),
            Stored::Duplicate => Ok(Outcome::Duplicate),
            Stored::Refused(refused) => Err(refused.into_send_error(channel)),
        }
    }
}

/// The two kinds of channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// See [`PointToPoint`].
    PointToPoint,
    /// See [`PublishSubscribe`].
    PublishSubscribe,
}

impl std::fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ChannelKind::PointToPoint => "point-to-point",
            ChannelKind::PublishSubscribe => "publish-subscribe",
        })
    }
}

/// A channel of either kind, as the [`MessageBus`](crate::bus::MessageBus) holds them.
#[derive(Debug, Clone)]
pub enum Channel {
    /// A point-to-point channel.
    PointToPoint(PointToPoint),
    /// A publish-subscribe channel.
    PublishSubscribe(PublishSubscribe),
}

impl Channel {
    /// The channel's name.
    pub fn name(&self) -> &str {
        match self {
            Channel::PointToPoint(c) => c.name(),
            Channel::PublishSubscribe(c) => c.name(),
        }
    }

    /// The channel's kind.
    pub fn kind(&self) -> ChannelKind {
        match self {
            Channel::PointToPoint(_) => ChannelKind::PointToPoint,
            Channel::PublishSubscribe(_) => ChannelKind::PublishSubscribe,
        }
    }

    /// Sends (or publishes) a message, waiting for room.
    pub async fn send(&self, msg: Message) -> Result<Outcome, SendError> {
        match self {
            Channel::PointToPoint(c) => c.send(msg).await,
            Channel::PublishSubscribe(c) => c.publish(msg).await,
        }
    }

    /// The send side as a `tower::Service<Message>`.
    pub fn sender(&self) -> ChannelSender {
        ChannelSender::new(self.clone())
    }

    /// Stores one message here (no joins followed), checking the datatype and, given the time
    /// (`loops`), the loop memory: done at once where that waits for nothing (see
    /// [`StoreNow`]).
    pub(crate) fn store_now(&self, msg: Message, loops: Option<Moment>) -> StoreNow {
        match self {
            Channel::PointToPoint(c) => c.store_now(msg, loops),
            Channel::PublishSubscribe(c) => c.store_now(msg, loops),
        }
    }

    /// Stores a copy of `msg` here, as [`store_now`](Self::store_now) would store `msg`, if
    /// that can be done at once and the channel's rules change nothing in what it stores (so
    /// the caller's message is the message as stored); otherwise stores nothing and declines.
    /// A join chain's message then stays in one place from hop to hop. The joins it hands
    /// back are held pinned by `guard` (see [`HeldJoins`]).
    #[inline]
    pub(crate) fn store_copy<'g>(
        &self,
        msg: &Message,
        loops: Option<Moment>,
        guard: &'g Guard,
    ) -> Copied<'g> {
        match self {
            Channel::PointToPoint(_) => Copied::Declined,
            Channel::PublishSubscribe(c) => c.store_copy(msg, loops, guard),
        }
    }

    /// Where undeliverable messages go, if anywhere.
    pub fn dead_letter_channel(&self) -> Option<&DeadLetterChannel> {
        match self {
            Channel::PointToPoint(c) => c.dead_letter_channel(),
            Channel::PublishSubscribe(c) => c.dead_letter_channel(),
        }
    }

    /// Whether its messages survive the process (it lives in a durable store).
    pub fn is_durable(&self) -> bool {
        match self {
            Channel::PointToPoint(c) => c.is_durable(),
            Channel::PublishSubscribe(c) => c.is_durable(),
        }
    }

    /// The acknowledgement of the message `id`, taken from this channel (a publish-subscribe channel:
    /// through its durable subscription `subscription`) and not settled yet, for a commit of
    /// the caller's own: see [`MessageStore::durable_ack`](crate::store::MessageStore::durable_ack).
    /// `None` unless that is durable.
    pub fn durable_ack(
        &self,
        subscription: &str,
        id: crate::message::MessageId,
    ) -> Option<crate::store::durable::DurableAck> {
        match self {
            Channel::PointToPoint(c) => c.durable_ack(id),
            Channel::PublishSubscribe(c) => c.durable_ack(subscription, id),
        }
    }

    /// Whether the channel is deleted.
    pub fn is_closed(&self) -> bool {
        match self {
            Channel::PointToPoint(c) => c.is_closed(),
            Channel::PublishSubscribe(c) => c.is_closed(),
        }
    }

    /// The message as this channel would store it, or why it would not (see [`admission`]).
    /// Asks whether the channel is deleted: for dry runs, which have no push to find out.
    pub(crate) fn admit(&self, msg: Message, mode: Mode) -> Result<Message, Refusal<'_>> {
        self.rules().admit(msg, self.is_closed(), mode)
    }

    pub(crate) fn rules(&self) -> Rules<'_> {
        match self {
            Channel::PointToPoint(c) => c.rules(),
            Channel::PublishSubscribe(c) => c.rules(),
        }
    }

    pub(crate) fn identity(&self) -> usize {
        match self {
            Channel::PointToPoint(c) => c.identity(),
            Channel::PublishSubscribe(c) => c.identity(),
        }
    }

    pub(crate) fn loop_guard(&self) -> &LoopGuard {
        match self {
            Channel::PointToPoint(c) => c.loop_guard(),
            Channel::PublishSubscribe(c) => c.loop_guard(),
        }
    }

    /// The channel's counters.
    pub fn stats(&self) -> ChannelStats {
        match self {
            Channel::PointToPoint(c) => c.stats(),
            Channel::PublishSubscribe(c) => c.stats(),
        }
    }

    /// Deletes the channel (see [`PointToPoint::delete`], [`PublishSubscribe::delete`]).
    pub async fn delete(&self) -> usize {
        match self {
            Channel::PointToPoint(c) => c.delete().await,
            Channel::PublishSubscribe(c) => c.delete().await,
        }
    }

    /// Sends `msg` only if the channel takes it without waiting; whether it did. On a
    /// publish-subscribe channel the message is published only when every subscription has
    /// room. If one fills up at that very moment the answer is `false` and no subscription got
    /// it, except those that take their copies one by one (bus wildcard subscriptions, and a
    /// `DropOldest` channel's): of those, some may have it. On a durable channel an offer
    /// never waits for the disk: a point-to-point channel answers `true` once the write is
    /// queued, and a publish-subscribe channel, whose publish must wait for the disk, answers
    /// `false` although its copies will still be written. For copies that may be lost, such as
    /// a [wire tap's](crate::router::WireTap).
    pub fn offer(&self, msg: Message) -> bool {
        match self {
            Channel::PointToPoint(channel) => channel.try_send(msg).is_ok(),
            Channel::PublishSubscribe(channel) => {
                // Publishing never waits while every subscription has room: one poll completes
                // it. If a subscription filled up since the check, the poll is pending and the
                // dropped future gives up on the rest.
                self.accepts_now() && !channel.is_closed() && {
                    let publish = std::pin::pin!(channel.publish(msg));
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    matches!(publish.poll(&mut cx), std::task::Poll::Ready(Ok(_)))
                }
            }
        }
    }

    pub(crate) fn accepts_now(&self) -> bool {
        match self {
            Channel::PointToPoint(c) => c.queue().store.accepts_now(),
            Channel::PublishSubscribe(c) => c.accepts_now(),
        }
    }

    pub(crate) async fn writable(&self) {
        match self {
            Channel::PointToPoint(c) => c.queue().store.writable().await,
            Channel::PublishSubscribe(c) => c.writable().await,
        }
    }
}

impl From<PointToPoint> for Channel {
    fn from(c: PointToPoint) -> Self {
        Channel::PointToPoint(c)
    }
}

impl From<PublishSubscribe> for Channel {
    fn from(c: PublishSubscribe) -> Self {
        Channel::PublishSubscribe(c)
    }
}

pub(crate) use lane::Lane as SubscriptionQueue;

/// A subscription queue not tied to one channel (a bus wildcard subscription).
pub(crate) fn queue_for_subscription(
    name: &str,
    capacity: usize,
    dead_letters: Option<DeadLetterChannel>,
) -> Arc<SubscriptionQueue> {
    let store = crate::store::memory::Queue::new(capacity, Overflow::Backpressure);
    Arc::new(SubscriptionQueue::new(
        name.into(),
        Arc::new(store),
        dead_letters,
        RedeliveryPolicy::default(),
    ))
}

pub(crate) fn receiver_for_subscription(queue: Arc<SubscriptionQueue>) -> Receiver {
    Receiver::new(queue, None).with_prefetch(SUBSCRIPTION_PREFETCH)
}
