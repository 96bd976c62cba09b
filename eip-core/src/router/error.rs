//! Errors of building and running routers.

use crate::channel::SendError;
use crate::message::Message;
use crate::topic::PublishError;

/// A router configuration that could lose messages or can never route one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    /// No `otherwise` and no dead letter channel: an unmatched message would have nowhere to go.
    #[error(
        "router `{router}` has neither an `otherwise` channel nor a dead letter channel: a message \
         no `when` clause matches would be lost"
    )]
    Unroutable {
        /// The router's name.
        router: String,
    },
    /// A router without a single `when` clause.
    #[error("router `{router}` has no `when` clause")]
    NoClauses {
        /// The router's name.
        router: String,
    },
    /// A static recipient list without recipients.
    #[error("recipient list `{name}` has no recipients")]
    NoRecipients {
        /// The recipient list's name.
        name: String,
    },
}

/// A message a router could not deliver anywhere. It is handed back, so nothing is lost: a
/// [consumer](crate::endpoint) applies its redelivery policy.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The chosen channel is closed (deleted).
    #[error(transparent)]
    Send(#[from] SendError),
    /// The chosen exchange could not deliver to every channel its bindings picked.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The dead letter channel the message was meant for is closed.
    #[error("dead letter channel `{channel}` is closed")]
    DeadLetterClosed {
        /// The dead letter channel's name.
        channel: String,
        /// The message (with the death record it was given).
        message: Box<Message>,
    },
}

impl RouteError {
    /// The message that was not delivered.
    pub fn into_message(self) -> Message {
        match self {
            RouteError::Send(e) => e.into_message(),
            RouteError::Publish(e) => e.into_message(),
            RouteError::DeadLetterClosed { message, .. } => *message,
        }
    }
}
