//! Message Bus: the registry of named channels that applications share.
//!
//! Channel names are hierarchical, dot-separated words (`trades.nyse.ibm`). A wildcard
//! subscription ([`MessageBus::subscribe`], with the [topic](crate::topic) rules: `*` one word,
//! `#` zero or more) receives from every publish-subscribe channel whose name matches, including
//! channels created after it subscribed: a sender can open `trades.lse.vod` tomorrow and a
//! `trades.#` subscriber hears it without being told. Each message published on a matching
//! channel reaches the wildcard subscriber once. Point-to-point channels are not joined by
//! wildcard subscriptions: their messages belong to one consumer, chosen by name.
//!
//! [Topic exchanges](crate::topic::TopicExchange) are registered by name too, in the same
//! namespace: a name is a channel or an exchange, never both, so a flow that sends "to
//! `market`" means one thing. [`MessageBus::target`] finds whichever the name is, and
//! [`MessageBus::publish`] sends to it.
//!
//! The bus owns a default [`DeadLetterChannel`] (`dead-letters`) that channels made through it
//! use, so nothing undeliverable is lost. Asking for a channel that does not exist is an error
//! that names it and, when one is close, suggests the channel meant.

mod replay;
mod request_reply;
mod resolver;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

pub use replay::{NotReplayed, REPLAYED, ReplayReport, Replayed, Which, replay_copy};
pub use request_reply::RequestError;

use crate::channel::queue_for_subscription;
use crate::channel::{
    Channel, ChannelBuilder, ChannelError, ChannelKind, DEFAULT_CAPACITY, DeadLetterChannel,
    Delivery, Outcome, PointToPoint, PublishSubscribe, Receiver, SendError, Subscriber,
};
use crate::join::{Join, JoinBuilder, JoinError, JoinId};
use crate::message::Message;
use crate::router::{RouteError, Sent, Target};
use crate::topic::{TopicError, TopicExchange, TopicPattern};

/// The name of the bus's default dead letter channel.
pub const DEAD_LETTERS: &str = "dead-letters";

/// What went wrong with a bus operation.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// No channel has this name.
    #[error("unknown channel `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownChannel {
        /// The name asked for.
        name: String,
        /// The closest existing name, if one is close.
        suggestion: Option<String>,
    },
    /// No exchange has this name.
    #[error("unknown exchange `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownExchange {
        /// The name asked for.
        name: String,
        /// The closest existing exchange name, if one is close.
        suggestion: Option<String>,
    },
    /// No channel or exchange has this name.
    #[error("unknown channel or exchange `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownName {
        /// The name asked for.
        name: String,
        /// The closest existing channel or exchange name, if one is close.
        suggestion: Option<String>,
    },
    /// A channel with this name exists already.
    #[error("a channel named `{name}` exists already")]
    DuplicateChannel {
        /// The name.
        name: String,
    },
    /// An exchange with this name exists already.
    #[error("an exchange named `{name}` exists already")]
    DuplicateExchange {
        /// The name.
        name: String,
    },
    /// The channel exists but is of the other kind.
    #[error("channel `{name}` is {found}, not {expected}")]
    WrongKind {
        /// The channel's name.
        name: String,
        /// The kind needed.
        expected: ChannelKind,
        /// The kind it is.
        found: ChannelKind,
    },
    /// A message to replay carries no readable death record.
    #[error("message {id} has no death record to replay from")]
    NotADeadLetter {
        /// The message's id.
        id: String,
    },
    /// A channel could not be built.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// A subscription pattern is malformed.
    #[error(transparent)]
    Pattern(#[from] TopicError),
    /// A send failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A join could not be made.
    #[error(transparent)]
    Join(#[from] JoinError),
    /// A send to a channel or through an exchange failed.
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// A dead letter that could not be replayed, handed back unsettled.
#[derive(Debug, thiserror::Error)]
#[error("replay of message {} failed: {error}", delivery.message().id())]
pub struct ReplayError {
    /// Why the replay failed.
    #[source]
    pub error: BusError,
    /// The dead letter, still unsettled.
    pub delivery: Delivery,
}

/// A registry of named channels, with wildcard subscriptions and a default dead letter channel.
#[derive(Clone)]
pub struct MessageBus {
    inner: Arc<Inner>,
}

struct Inner {
    channels: RwLock<BTreeMap<String, Channel>>,
    /// Taken after `channels` whenever both are held, so a name is checked in both at once.
    exchanges: RwLock<BTreeMap<String, TopicExchange>>,
    wildcards: Mutex<Vec<Wildcard>>,
    dead_letters: DeadLetterChannel,
    capacity: usize,
    next_id: AtomicU64,
}

struct Wildcard {
    id: u64,
    pattern: TopicPattern,
    subscriber: Arc<crate::channel::SubscriptionQueue>,
}

impl Default for MessageBus {
    fn default() -> Self {
        MessageBus::new()
    }
}

impl MessageBus {
    /// A bus whose channels hold [`DEFAULT_CAPACITY`] messages, with a dead letter channel of
    /// ten times that.
    pub fn new() -> Self {
        MessageBus::with_capacity(DEFAULT_CAPACITY)
    }

    /// A bus whose channels (by default) hold `capacity` messages.
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        // The name is a constant that passes validation; building it can not fail.
        let dead_letters = DeadLetterChannel::new(DEAD_LETTERS, capacity.saturating_mul(10))
            .unwrap_or_else(|e| unreachable!("{e}"));
        MessageBus::with_dead_letters(capacity, dead_letters)
    }

    /// A bus whose channels (by default) hold `capacity` messages, and whose default dead
    /// letter channel is `dead_letters` (a durable one, say). It is registered under its own
    /// name.
    pub fn with_dead_letters(capacity: usize, dead_letters: DeadLetterChannel) -> Self {
        let capacity = capacity.max(1);
        let bus = MessageBus {
            inner: Arc::new(Inner {
                channels: RwLock::new(BTreeMap::new()),
                exchanges: RwLock::new(BTreeMap::new()),
                wildcards: Mutex::new(Vec::new()),
                dead_letters: dead_letters.clone(),
                capacity,
                next_id: AtomicU64::new(0),
            }),
        };
        bus.write().insert(
            dead_letters.name().to_owned(),
            Channel::PointToPoint((*dead_letters).clone()),
        );
        bus
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Channel>> {
        self.inner
            .channels
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Channel>> {
        self.inner
            .channels
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn exchanges(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, TopicExchange>> {
        self.inner
            .exchanges
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn exchanges_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, TopicExchange>> {
        self.inner
            .exchanges
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The bus's dead letter channel.
    pub fn dead_letter_channel(&self) -> &DeadLetterChannel {
        &self.inner.dead_letters
    }

    /// A channel builder with the bus's capacity and dead letter channel filled in.
    pub fn builder<K>(&self, name: &str) -> ChannelBuilder<K> {
        ChannelBuilder::new(name)
            .capacity(self.inner.capacity)
            .dead_letter_channel(self.inner.dead_letters.clone())
    }

    /// Creates and registers a point-to-point channel with the bus's defaults.
    pub fn create_point_to_point(&self, name: &str) -> Result<PointToPoint, BusError> {
        let channel = self.builder::<PointToPoint>(name).build()?;
        self.register(channel.clone())?;
        Ok(channel)
    }

    /// Creates and registers a publish-subscribe channel with the bus's defaults.
    pub fn create_publish_subscribe(&self, name: &str) -> Result<PublishSubscribe, BusError> {
        let channel = self.builder::<PublishSubscribe>(name).build()?;
        self.register(channel.clone())?;
        Ok(channel)
    }

    /// Registers a channel under its name. A publish-subscribe channel is joined at once by every
    /// wildcard subscription whose pattern matches its name.
    pub fn register(&self, channel: impl Into<Channel>) -> Result<(), BusError> {
        let channel = channel.into();
        let name = channel.name().to_owned();
        let mut channels = self.write();
        if channels.contains_key(&name) {
            return Err(BusError::DuplicateChannel { name });
        }
        if self.exchanges().contains_key(&name) {
            return Err(BusError::DuplicateExchange { name });
        }
        if let Channel::PublishSubscribe(pubsub) = &channel {
            // Under the channels lock: a wildcard subscribing now either sees this channel in
            // the map or is in the list already, never neither.
            for w in self.wildcards().iter() {
                if w.pattern.matches(&name) {
                    pubsub.attach_foreign(w.subscriber.clone());
                }
            }
        }
        channels.insert(name, channel);
        Ok(())
    }

    fn wildcards(&self) -> std::sync::MutexGuard<'_, Vec<Wildcard>> {
        crate::sync::lock(&self.inner.wildcards)
    }

    /// The channel named `name`.
    pub fn channel(&self, name: &str) -> Result<Channel, BusError> {
        let channels = self.read();
        match channels.get(name) {
            Some(c) => Ok(c.clone()),
            None => Err(BusError::UnknownChannel {
                name: name.to_owned(),
                suggestion: closest(name, channels.keys().map(String::as_str)),
            }),
        }
    }

    /// Registers a topic exchange under its name, which no channel or exchange may have.
    pub fn register_exchange(&self, exchange: TopicExchange) -> Result<(), BusError> {
        let name = exchange.name().to_owned();
        let channels = self.read();
        let mut exchanges = self.exchanges_mut();
        if channels.contains_key(&name) {
            return Err(BusError::DuplicateChannel { name });
        }
        if exchanges.contains_key(&name) {
            return Err(BusError::DuplicateExchange { name });
        }
        exchanges.insert(name, exchange);
        Ok(())
    }

    /// Creates and registers an exchange with no bindings.
    pub fn create_exchange(&self, name: &str) -> Result<TopicExchange, BusError> {
        let exchange = TopicExchange::new(name);
        self.register_exchange(exchange.clone())?;
        Ok(exchange)
    }

    /// The exchange named `name`.
    pub fn exchange(&self, name: &str) -> Result<TopicExchange, BusError> {
        let exchanges = self.exchanges();
        match exchanges.get(name) {
            Some(x) => Ok(x.clone()),
            None => Err(BusError::UnknownExchange {
                name: name.to_owned(),
                suggestion: closest(name, exchanges.keys().map(String::as_str)),
            }),
        }
    }

    /// The names of all exchanges, sorted.
    pub fn exchange_names(&self) -> Vec<String> {
        self.exchanges().keys().cloned().collect()
    }

    /// Unregisters the exchange `name` and returns it. Messages already being routed by it
    /// finish; its bindings stay on the returned value.
    pub fn remove_exchange(&self, name: &str) -> Result<TopicExchange, BusError> {
        let removed = self.exchanges_mut().remove(name);
        removed.ok_or_else(|| match self.exchange(name) {
            Err(e) => e,
            Ok(_) => BusError::UnknownExchange {
                name: name.to_owned(),
                suggestion: None,
            },
        })
    }

    /// The channel or exchange named `name`. An unknown name is an error that suggests the
    /// closest channel or exchange.
    pub fn target(&self, name: &str) -> Result<Target, BusError> {
        let channels = self.read();
        if let Some(channel) = channels.get(name) {
            return Ok(Target::Channel(channel.clone()));
        }
        let exchanges = self.exchanges();
        if let Some(exchange) = exchanges.get(name) {
            return Ok(Target::Exchange(exchange.clone()));
        }
        let names = channels.keys().chain(exchanges.keys()).map(String::as_str);
        Err(BusError::UnknownName {
            name: name.to_owned(),
            suggestion: closest(name, names),
        })
    }

    /// Sends `msg` to the channel or exchange named `name` (see [`target`](Self::target)).
    pub async fn publish(&self, name: &str, msg: Message) -> Result<Sent, BusError> {
        let target = self.target(name)?;
        Ok(target.send(msg).await?)
    }

    /// The point-to-point channel named `name`.
    pub fn point_to_point(&self, name: &str) -> Result<PointToPoint, BusError> {
        match self.channel(name)? {
            Channel::PointToPoint(c) => Ok(c),
            other => Err(wrong_kind(name, ChannelKind::PointToPoint, &other)),
        }
    }

    /// The publish-subscribe channel named `name`.
    pub fn publish_subscribe(&self, name: &str) -> Result<PublishSubscribe, BusError> {
        match self.channel(name)? {
            Channel::PublishSubscribe(c) => Ok(c),
            other => Err(wrong_kind(name, ChannelKind::PublishSubscribe, &other)),
        }
    }

    /// The names of all channels, sorted.
    pub fn channel_names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Sends a message to the channel named `name`.
    pub async fn send(&self, name: &str, msg: Message) -> Result<Outcome, BusError> {
        let channel = self.channel(name)?;
        Ok(channel.send(msg).await?)
    }

    /// A competing consumer of the point-to-point channel `name`.
    pub fn receiver(&self, name: &str) -> Result<Receiver, BusError> {
        Ok(self.point_to_point(name)?.receiver())
    }

    /// Subscribes to every publish-subscribe channel whose name matches `pattern` (a plain name
    /// is a pattern too), now and as they are created, until the subscriber is dropped.
    pub fn subscribe(&self, pattern: &str) -> Result<Subscriber, BusError> {
        let pattern = TopicPattern::parse(pattern)?;
        let queue = queue_for_subscription(
            pattern.as_str(),
            self.inner.capacity,
            Some(self.inner.dead_letters.clone()),
        );
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut joined = Vec::new();
        {
            let channels = self.read();
            self.wildcards().push(Wildcard {
                id,
                pattern: pattern.clone(),
                subscriber: queue.clone(),
            });
            for channel in channels.values() {
                if let Channel::PublishSubscribe(pubsub) = channel
                    && pattern.matches(pubsub.name())
                {
                    pubsub.attach_foreign(queue.clone());
                    joined.push(pubsub.clone());
                }
            }
        }
        let bus = self.clone();
        let detach_queue = queue.clone();
        Ok(Subscriber::new(
            crate::channel::receiver_for_subscription(queue),
            Some(Box::new(move || {
                bus.wildcards().retain(|w| w.id != id);
                for channel in bus.read().values() {
                    if let Channel::PublishSubscribe(pubsub) = channel {
                        pubsub.detach(&detach_queue);
                    }
                }
                drop(joined);
                detach_queue.store.close();
            })),
        ))
    }

    /// A join from the channel `source` to the channel or queue `destination`, to be configured
    /// and [created](JoinBuilder::create). Unknown names are errors with a suggestion.
    pub fn join(&self, source: &str, destination: &str) -> Result<JoinBuilder, BusError> {
        Ok(Join::builder(
            self.channel(source)?,
            self.channel(destination)?,
        ))
    }

    /// Removes the join `id` leaving the channel `source`; whether it was there.
    pub fn remove_join(&self, source: &str, id: JoinId) -> Result<bool, BusError> {
        match self.channel(source)? {
            Channel::PublishSubscribe(c) => Ok(c.remove_join(id)),
            Channel::PointToPoint(_) => Ok(false),
        }
    }

    /// Deletes the channel `name` (see [`Channel::delete`]); returns how many waiting messages
    /// went to the dead letter channel.
    pub async fn remove(&self, name: &str) -> Result<usize, BusError> {
        let channel = self.write().remove(name);
        match channel {
            Some(c) => Ok(c.delete().await),
            None => Err(self
                .channel(name)
                .err()
                .unwrap_or(BusError::UnknownChannel {
                    name: name.to_owned(),
                    suggestion: None,
                })),
        }
    }

    pub(crate) fn remove_now(&self, name: &str) -> Option<Channel> {
        self.write().remove(name)
    }
}

impl std::fmt::Debug for MessageBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageBus")
            .field("channels", &self.channel_names())
            .field("exchanges", &self.exchange_names())
            .finish()
    }
}

fn wrong_kind(name: &str, expected: ChannelKind, found: &Channel) -> BusError {
    BusError::WrongKind {
        name: name.to_owned(),
        expected,
        found: found.kind(),
    }
}

/// The candidate closest to `name` by edit distance, if it is close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c.to_owned())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_near_names_only() {
        let names = ["trades.requests", "quotes", "dead-letters"];
        assert_eq!(
            closest("trade.requests", names).as_deref(),
            Some("trades.requests")
        );
        assert_eq!(closest("orders", names), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
