//! Errors of configuring a topic exchange and of publishing through one.

use super::BindingId;
use crate::message::Message;
use crate::topic::TopicError;

/// A binding, or a change to an exchange's bindings, that can not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    /// The binding's pattern does not parse.
    #[error(transparent)]
    Pattern(#[from] TopicError),
    /// A binding was given no target.
    #[error("binding `{key}` has no target; a binding needs at least one")]
    NoTarget {
        /// The binding's key, or `(no key)`.
        key: String,
    },
    /// The binding to remove is not on the exchange (never was, or was removed already).
    #[error("exchange `{exchange}` has no binding {id}")]
    UnknownBinding {
        /// The exchange's name.
        exchange: String,
        /// The id asked for.
        id: BindingId,
    },
}

/// A message some of whose targets (or whose alternate) refused it because they are closed.
///
/// Every other target got its copy; the message is handed back so nothing is lost. Publishing it
/// again delivers it again to the targets that accepted it the first time (at-least-once).
#[derive(Debug, thiserror::Error)]
#[error(
    "exchange `{exchange}`: {} refused the message (closed); {delivered} accepted it",
    failed.join(", ")
)]
pub struct PublishError {
    /// The exchange's name.
    pub exchange: String,
    /// The names of the channels that refused the message.
    pub failed: Vec<String>,
    /// How many channels accepted it.
    pub delivered: usize,
    /// The message.
    pub message: Box<Message>,
}

impl PublishError {
    /// The message that was not delivered everywhere.
    pub fn into_message(self) -> Message {
        *self.message
    }
}
