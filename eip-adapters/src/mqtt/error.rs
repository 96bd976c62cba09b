//! What can be wrong with a topic: a template, or a subject that has no topic.

use crate::bridge::{BridgeError, destination_error};

/// Why a topic template does not parse, or a message has no topic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// The template can not make a topic name.
    #[error("topic template `{template}`: {reason}")]
    Template {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The template needs the message's subject and the message has none (or not a string).
    #[error("topic template `{template}` needs a `subject` header, and the message has none")]
    NoSubject {
        /// The template.
        template: String,
    },
    /// Another placeholder the message could not fill, or filled with a value that is not one
    /// topic level.
    #[error("topic template `{template}`: {reason}")]
    Render {
        /// The template.
        template: String,
        /// Why.
        reason: String,
    },
    /// The subject can not be part of a topic name.
    #[error("subject `{subject}` can not be an MQTT topic: {reason}")]
    Subject {
        /// The subject.
        subject: String,
        /// Which character is in the way.
        reason: &'static str,
    },
}

destination_error!(TopicError, NoSubject);

impl TopicError {
    /// The bridge error for a message with no topic: permanent, the message can never be sent.
    pub(crate) fn into_bridge_error(self, broker: &str) -> BridgeError {
        match self {
            TopicError::Template { .. } => BridgeError::Config(self.to_string()),
            _ => BridgeError::Refused {
                broker: broker.to_owned(),
                what: "a message (the bridge found no topic for it)".to_owned(),
                reason: self.to_string(),
                permanent: true,
            },
        }
    }
}
