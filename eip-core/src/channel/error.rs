//! Errors of sending to and creating channels.

use crate::message::Message;

/// A send that could not be accepted. The message is handed back so nothing is lost.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The channel was closed or deleted.
    #[error("channel `{channel}` is closed")]
    Closed {
        /// The channel's name.
        channel: String,
        /// The message that was not sent.
        message: Box<Message>,
    },
    /// The channel's store could not take the message (a durable store full past its limit,
    /// or a disk error); the message is given back.
    #[error("channel `{channel}`: {cause}")]
    Store {
        /// The channel.
        channel: String,
        /// Why.
        cause: crate::store::StoreFailure,
        /// The message, not stored.
        message: Box<Message>,
    },
}

impl SendError {
    /// The message that was not sent.
    pub fn into_message(self) -> Message {
        match self {
            SendError::Closed { message, .. } | SendError::Store { message, .. } => *message,
        }
    }
}

/// A send that could not be accepted at once.
#[derive(Debug, thiserror::Error)]
pub enum TrySendError {
    /// The channel is at capacity; try later, or use the waiting `send`.
    #[error("channel `{channel}` is full ({capacity} messages)")]
    Full {
        /// The channel's name.
        channel: String,
        /// Its capacity.
        capacity: usize,
        /// The message that was not sent.
        message: Box<Message>,
    },
    /// The channel was closed or deleted.
    #[error("channel `{channel}` is closed")]
    Closed {
        /// The channel's name.
        channel: String,
        /// The message that was not sent.
        message: Box<Message>,
    },
    /// The channel's store could not take the message.
    #[error("channel `{channel}`: {cause}")]
    Store {
        /// The channel.
        channel: String,
        /// Why.
        cause: crate::store::StoreFailure,
        /// The message, not stored.
        message: Box<Message>,
    },
}

impl TrySendError {
    /// The message that was not sent.
    pub fn into_message(self) -> Message {
        match self {
            TrySendError::Full { message, .. }
            | TrySendError::Closed { message, .. }
            | TrySendError::Store { message, .. } => *message,
        }
    }
}

/// A channel configuration that can not work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// A capacity of zero would never accept a message.
    #[error("channel `{channel}`: capacity must be at least 1")]
    ZeroCapacity {
        /// The channel's name.
        channel: String,
    },
    /// The name is not a dot-separated list of non-empty words without wildcards or spaces.
    #[error("invalid channel name `{name}`: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A JSON Schema that does not compile.
    #[error("invalid JSON Schema for datatype `{datatype}`: {reason}")]
    InvalidSchema {
        /// The datatype's name.
        datatype: String,
        /// The schema compiler's message.
        reason: String,
    },
    /// The channel's store could not be opened.
    #[error("channel `{channel}`: {source}")]
    Store {
        /// The channel.
        channel: String,
        /// Why.
        source: crate::store::BackendError,
    },
}

/// Checks a channel name: dot-separated non-empty words, no wildcards, no white space.
pub fn validate_channel_name(name: &str) -> Result<(), ChannelError> {
    let bad = |reason| {
        Err(ChannelError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("a name must not be empty");
    }
    if name.len() > 255 {
        return bad("a name must be at most 255 bytes");
    }
    if name.split('.').any(str::is_empty) {
        return bad("a name is dot-separated words, and no word may be empty");
    }
    if name.contains(['*', '#']) {
        return bad("`*` and `#` are wildcards for subscriptions, not part of a name");
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("a name must not contain white space or control characters");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_are_dotted_words() {
        assert!(validate_channel_name("trades.nyse.ibm").is_ok());
        assert!(validate_channel_name("q").is_ok());
        for bad in ["", "a..b", ".a", "a.", "a.*", "a.#", "a b", "a\tb"] {
            assert!(validate_channel_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate_channel_name(&"a".repeat(256)).is_err());
    }
}
