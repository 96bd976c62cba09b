//! What a step's service returns when the step itself, not the service after it, failed.
//!
//! A step that can not make sense of a message (a jq error, a payload that is not JSON) does not
//! pass it on: it hands the message back in [`StepError::Failed`] with the reason, so that the
//! route can send it to the invalid message channel with that reason. Nothing is lost: the
//! message in the error is the one the step was given, unchanged.

use eip_core::Message;

/// A step failed on a message (and gives it back), or the service after it failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError<E, F> {
    /// The step could not process the message; the inner service was not called.
    #[error("{error}")]
    Failed {
        /// Why.
        error: F,
        /// The message as the step received it.
        message: Message,
    },
    /// The inner service's error.
    #[error(transparent)]
    Inner(E),
}

impl<E, F> StepError<E, F> {
    /// The message the step gave back, if the step failed.
    pub fn into_message(self) -> Option<Message> {
        match self {
            StepError::Failed { message, .. } => Some(message),
            StepError::Inner(_) => None,
        }
    }

    /// Whether trying the same message again would fail the same way: a step's own failure is
    /// (it depends on the message alone); the inner service's error is the inner service's to
    /// judge.
    pub fn is_permanent(&self) -> bool {
        matches!(self, StepError::Failed { .. })
    }
}
