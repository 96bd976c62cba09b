//! Where an aggregator's dead letters go: a channel or a caller's callback.

use std::fmt;
use std::sync::Arc;

use eip_core::channel::Channel;
use eip_core::message::{DeathReason, DeathRecord, Message};

/// A group handed to the dead letters, with why.
#[derive(Debug, Clone)]
pub struct IncompleteGroup {
    /// The group's correlation key.
    pub key: String,
    /// `incomplete` (given up before it completed) or `invalid` (could not be combined).
    pub reason: &'static str,
    /// What happened, for people.
    pub detail: String,
    /// Its messages, in arrival order.
    pub messages: Vec<Message>,
}

/// The reason given to a group that was given up before it completed.
pub const INCOMPLETE: &str = "incomplete";
/// The reason given to a group whose messages could not be combined.
pub const INVALID: &str = "invalid";

/// A dead letter destination.
#[derive(Clone)]
pub enum DeadLetters {
    /// A channel: each message is sent with a death record (reason `incomplete`, or `invalid`
    /// for a group that could not be combined), waiting for room.
    Channel(Channel),
    /// A function given the whole group.
    Callback(Arc<dyn Fn(IncompleteGroup) + Send + Sync>),
}

impl fmt::Debug for DeadLetters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeadLetters::Channel(c) => write!(f, "DeadLetters::Channel({})", c.name()),
            DeadLetters::Callback(_) => f.write_str("DeadLetters::Callback(..)"),
        }
    }
}

impl DeadLetters {
    /// Hands `group` over; returns the messages a closed channel did not take.
    pub(crate) async fn deliver(&self, group: IncompleteGroup) -> Vec<Message> {
        match self {
            DeadLetters::Callback(f) => {
                f(group);
                Vec::new()
            }
            DeadLetters::Channel(channel) => {
                let error = format!("group `{}`: {}", group.key, group.detail);
                let reason = match group.reason {
                    INCOMPLETE => DeathReason::Incomplete,
                    _ => DeathReason::Invalid,
                };
                let mut refused = Vec::new();
                for mut msg in group.messages {
                    let fresh = DeathRecord::new(channel.name(), reason, Some(error.clone()));
                    let record = DeathRecord::died_again(msg.death().ok().flatten(), fresh);
                    msg.set_death(&record);
                    if let Err(e) = channel.send(msg).await {
                        refused.push(e.into_message());
                    }
                }
                refused
            }
        }
    }
}
