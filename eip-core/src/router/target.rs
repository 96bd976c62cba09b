//! Where a router sends a message: a channel, or a topic exchange that routes it on.
//!
//! Routers, recipient lists and the [`MessageBus`](crate::MessageBus) address both the same
//! way, so a flow can send "to `market`" without caring whether `market` stores messages (a
//! channel) or only routes them by subject (an [exchange](crate::topic::TopicExchange)).
//!
//! Where a name must be looked up as a message passes (a [recipient list](super::RecipientList)
//! read from a header), a [`TargetResolver`] does it: the bus is one, so is a closure. Routing
//! needs only the trait, not the bus.

use super::RouteError;
use crate::channel::{Channel, DeadLetterChannel, Outcome, PointToPoint, PublishSubscribe};
use crate::message::Message;
use crate::topic::{Routed, TopicExchange};

/// A channel or an exchange.
#[derive(Debug, Clone)]
pub enum Target {
    /// A channel: the message is stored there.
    Channel(Channel),
    /// A topic exchange: the message goes on to the channels its bindings pick.
    Exchange(TopicExchange),
}

/// Finds the channel or exchange a name stands for.
///
/// The [`MessageBus`](crate::MessageBus) is one (its channels and exchanges); so is any
/// `Fn(&str) -> Result<Target, String>`.
pub trait TargetResolver: Send + Sync + 'static {
    /// The channel or exchange named `name`; else why there is none, the text a dead letter
    /// carries (with a "did you mean" suggestion when a name is close).
    fn resolve(&self, name: &str) -> Result<Target, String>;
}

impl<F> TargetResolver for F
where
    F: Fn(&str) -> Result<Target, String> + Send + Sync + 'static,
{
    fn resolve(&self, name: &str) -> Result<Target, String> {
        self(name)
    }
}

/// What sending to a [`Target`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// The target was a channel; what the channel answered.
    Channel(Outcome),
    /// The target was an exchange; how it routed the message.
    Exchange(Routed),
}

impl Target {
    /// The channel's or exchange's name.
    pub fn name(&self) -> &str {
        match self {
            Target::Channel(c) => c.name(),
            Target::Exchange(x) => x.name(),
        }
    }

    /// The channel, if the target is one.
    pub fn as_channel(&self) -> Option<&Channel> {
        match self {
            Target::Channel(c) => Some(c),
            Target::Exchange(_) => None,
        }
    }

    /// The exchange, if the target is one.
    pub fn as_exchange(&self) -> Option<&TopicExchange> {
        match self {
            Target::Channel(_) => None,
            Target::Exchange(x) => Some(x),
        }
    }

    /// Sends `msg` (waiting for room). A closed channel, or an exchange some of whose targets
    /// are closed, hands the message back in the error.
    pub async fn send(&self, msg: Message) -> Result<Sent, RouteError> {
        match self {
            Target::Channel(c) => Ok(Sent::Channel(c.send(msg).await?)),
            Target::Exchange(x) => Ok(Sent::Exchange(x.publish(msg).await?)),
        }
    }
}

impl From<Channel> for Target {
    fn from(channel: Channel) -> Self {
        Target::Channel(channel)
    }
}

impl From<PointToPoint> for Target {
    fn from(channel: PointToPoint) -> Self {
        Target::Channel(channel.into())
    }
}

impl From<PublishSubscribe> for Target {
    fn from(channel: PublishSubscribe) -> Self {
        Target::Channel(channel.into())
    }
}

impl From<DeadLetterChannel> for Target {
    fn from(channel: DeadLetterChannel) -> Self {
        Target::Channel(Channel::PointToPoint((*channel).clone()))
    }
}

impl From<TopicExchange> for Target {
    fn from(exchange: TopicExchange) -> Self {
        Target::Exchange(exchange)
    }
}
