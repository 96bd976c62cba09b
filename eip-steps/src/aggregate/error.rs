//! What an aggregator hands back when it can not take a message.

use eip_core::message::Message;

/// A message the aggregator could not take, or a completed group it could not send on. The
/// messages are in the error: nothing is dropped.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError<E> {
    /// No correlation key, or malformed sequence headers: the message is invalid.
    #[error("message {} can not be aggregated: {reason}", message.id())]
    Invalid {
        /// Why.
        reason: String,
        /// The message.
        message: Box<Message>,
    },
    /// It would open a group beyond the bound, and the aggregator refuses (see
    /// [`Overflow::Refuse`](super::Overflow::Refuse)). Worth retrying later.
    #[error("{open} groups are open, the most allowed: message {} refused", message.id())]
    Full {
        /// How many groups are open.
        open: usize,
        /// The message.
        message: Box<Message>,
    },
    /// The group completed but its messages could not be combined, and no dead letter
    /// destination is set.
    #[error("group `{group}` could not be combined: {reason}")]
    Combine {
        /// The correlation key.
        group: String,
        /// Why.
        reason: String,
        /// The group's messages.
        messages: Vec<Message>,
    },
    /// The inner service refused the aggregate, and no dead letter destination is set.
    #[error("the aggregate of group `{group}` was refused: {error}")]
    Inner {
        /// The correlation key.
        group: String,
        /// The inner service's error.
        error: E,
        /// The group's messages.
        messages: Vec<Message>,
    },
    /// The inner service failed its readiness check; no message was taken.
    #[error("the inner service is not available: {0}")]
    Unavailable(E),
    /// The message joined its group, but its store could not make that last (a durable store
    /// could not write it): the message is handed back, to be redelivered.
    #[error("group `{group}`: the message could not be kept: {error}")]
    Keep {
        /// The correlation key.
        group: String,
        /// What the store said.
        error: tower::BoxError,
    },
}

impl<E> AggregateError<E> {
    /// Whether trying again can not help: invalid messages, groups that do not combine.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            AggregateError::Invalid { .. } | AggregateError::Combine { .. }
        )
    }

    /// The messages the error holds.
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            AggregateError::Invalid { message, .. } | AggregateError::Full { message, .. } => {
                vec![*message]
            }
            AggregateError::Combine { messages, .. } | AggregateError::Inner { messages, .. } => {
                messages
            }
            AggregateError::Unavailable(_) | AggregateError::Keep { .. } => Vec::new(),
        }
    }
}
