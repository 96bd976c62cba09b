//! One builder for every channel kind: name, capacity, dead letter channel, redelivery policy,
//! datatype, and (for subscriptions) the slow-subscriber policy.

use std::marker::PhantomData;
use std::sync::Arc;

use super::datatype::{Datatype, DatatypeCheck};
use super::dead_letter::{DeadLetterChannel, InvalidMessageChannel};
use super::error::{ChannelError, validate_channel_name};
use super::lane::Lane;
use super::loop_guard::LoopDetection;
use super::redelivery::RedeliveryPolicy;
use crate::store::{Backend, Memory, MessageStore, Overflow};

/// The capacity of a channel built without one.
pub const DEFAULT_CAPACITY: usize = 1024;

/// What every channel kind is configured with.
#[derive(Debug, Clone)]
pub(crate) struct ChannelConfig {
    pub(crate) name: Arc<str>,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) dead_letters: Option<DeadLetterChannel>,
    pub(crate) redelivery: RedeliveryPolicy,
    pub(crate) datatype: Option<DatatypeCheck>,
    pub(crate) loop_detection: LoopDetection,
    pub(crate) time_to_live: Option<std::time::Duration>,
    /// Whether the channel records itself in the messages it stores (Message History).
    pub(crate) history: bool,
    pub(crate) backend: Arc<dyn Backend>,
}

impl ChannelConfig {
    pub(crate) fn validated(self) -> Result<Self, ChannelError> {
        validate_channel_name(&self.name)?;
        if self.capacity == 0 {
            return Err(ChannelError::ZeroCapacity {
                channel: self.name.to_string(),
            });
        }
        Ok(self)
    }

    /// A lane over `store`, with this configuration's dead letters and redelivery.
    pub(crate) fn lane_over(&self, store: Arc<dyn MessageStore>) -> Lane {
        Lane::new(
            self.name.clone(),
            store,
            self.dead_letters.clone(),
            self.redelivery.clone(),
        )
    }

    /// A memory queue with this configuration.
    pub(crate) fn memory_queue(&self) -> crate::store::memory::Queue {
        crate::store::memory::Queue::new(self.capacity, self.overflow)
    }

    /// A lane over the store `store_name` of this configuration's backend.
    pub(crate) fn lane(&self, store_name: &str) -> Result<Lane, ChannelError> {
        let store = self
            .backend
            .open(store_name, self.capacity, self.overflow)
            .map_err(|source| ChannelError::Store {
                channel: self.name.to_string(),
                source,
            })?;
        Ok(self.lane_over(store))
    }
}

/// Builds a channel of kind `K` ([`PointToPoint`](super::PointToPoint) or
/// [`PublishSubscribe`](super::PublishSubscribe)).
#[derive(Debug, Clone)]
#[must_use]
pub struct ChannelBuilder<K> {
    pub(crate) config: ChannelConfig,
    kind: PhantomData<fn() -> K>,
}

impl<K> ChannelBuilder<K> {
    pub(crate) fn new(name: &str) -> Self {
        ChannelBuilder {
            config: ChannelConfig {
                name: name.into(),
                capacity: DEFAULT_CAPACITY,
                overflow: Overflow::Backpressure,
                dead_letters: None,
                redelivery: RedeliveryPolicy::default(),
                datatype: None,
                loop_detection: LoopDetection::default(),
                time_to_live: None,
                history: false,
                backend: Arc::new(Memory),
            },
            kind: PhantomData,
        }
    }

    /// How many messages the channel holds (for publish-subscribe: each subscription), counting
    /// those delivered and not yet settled. Senders wait when it is full.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.config.capacity = capacity;
        self
    }

    /// Where undeliverable messages go. Without one they are logged and counted as discarded.
    pub fn dead_letter_channel(mut self, channel: DeadLetterChannel) -> Self {
        self.config.dead_letters = Some(channel);
        self
    }

    /// How consumer endpoints retry a message whose processing failed.
    pub fn redelivery(mut self, policy: RedeliveryPolicy) -> Self {
        self.config.redelivery = policy;
        self
    }

    /// How many message ids the channel remembers for loop detection once it takes part in a
    /// join (see [`LoopDetection`]).
    pub fn loop_detection(mut self, config: LoopDetection) -> Self {
        self.config.loop_detection = config;
        self
    }

    /// How long a message may wait here: entering the channel, it is made to expire `ttl`
    /// from then at the latest (an earlier expiration it carries is kept), and an expired
    /// message is dead-lettered with reason `expired` instead of being delivered. The deadline
    /// stays on the message when it is forwarded, as with any expiration.
    pub fn time_to_live(mut self, ttl: std::time::Duration) -> Self {
        self.config.time_to_live = Some(ttl);
        self
    }

    /// Message History: with `true`, every message the channel stores gets an entry naming the
    /// channel at the end of its `history` header (see [`crate::message::history`]).
    pub fn history(mut self, on: bool) -> Self {
        self.config.history = on;
        self
    }

    /// Where the channel keeps its messages: in memory (the default), or the durable store of
    /// a data directory ([`crate::store::durable`]), or any other [`Backend`]. The channel's
    /// meaning does not change with it; what a crash costs does. Give a durable channel a
    /// durable dead letter channel (and invalid message channel) too, or what goes there is lost
    /// with the process; flow files do this for you.
    pub fn store(mut self, backend: Arc<dyn Backend>) -> Self {
        self.config.backend = backend;
        self
    }

    /// Makes it a Datatype Channel: messages that do not fit `datatype` go to `invalid`.
    pub fn datatype(mut self, datatype: impl Datatype, invalid: InvalidMessageChannel) -> Self {
        self.config.datatype = Some(DatatypeCheck {
            diverted: Arc::default(),
            datatype: Arc::new(datatype),
            invalid,
        });
        self
    }
}
