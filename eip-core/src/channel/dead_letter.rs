//! Dead Letter Channel and Invalid Message Channel: where messages go that can not go on.
//!
//! Two channels, two different failures. The **dead letter channel** is where the messaging
//! system puts what it could not deliver: the message expired, no route took it, its channel was
//! deleted, a consumer rejected it, or redelivery gave up. The **invalid message channel** is
//! where a receiver (or a [Datatype Channel](super::datatype)) puts a message it received but can
//! not process: the delivery worked, the content is wrong. Keep them apart: the first points at
//! a plumbing problem, the second at a sender producing bad data.
//!
//! Both are point-to-point channels (they deref to [`PointToPoint`], so they are consumed the
//! usual way). A message entering one gets a [`DeathRecord`] in its `death` header naming the
//! channel it came from, the reason, a count, the first and last time, the error text and the
//! host; its expiration is removed, so a dead letter never expires again. A dead letter can be
//! replayed to the channel it came from (see [`MessageBus::replay`](crate::bus::MessageBus::replay)).

use std::ops::Deref;

use super::lane::Lane;
use super::point_to_point::PointToPoint;
use crate::log::Escaped;
use crate::message::{DeathReason, DeathRecord, Message, names};

/// Where the messaging system puts messages it could not deliver.
#[derive(Clone, Debug)]
pub struct DeadLetterChannel {
    channel: PointToPoint,
}

/// Where receivers put messages they could not process (reason `invalid`).
#[derive(Clone, Debug)]
pub struct InvalidMessageChannel {
    channel: PointToPoint,
}

impl DeadLetterChannel {
    /// A dead letter channel holding at most `capacity` messages (senders of dead letters wait
    /// when it is full, so drain it).
    pub fn new(name: &str, capacity: usize) -> Result<Self, super::ChannelError> {
        Ok(DeadLetterChannel {
            channel: PointToPoint::builder(name).capacity(capacity).build()?,
        })
    }

    /// Puts `msg` here with a death record naming `origin`, `reason` and `error`: directly,
    /// without this channel's datatype or loop checks. Cancel-safe (a cancelled wait forces the
    /// message in). Gives the message back if this channel is closed. For routers that carry
    /// out their own decisions, as a flow's routes do.
    pub async fn bury(
        &self,
        msg: Message,
        origin: &str,
        reason: DeathReason,
        error: Option<String>,
    ) -> Result<(), Message> {
        bury(self.channel.queue(), mark_dead(msg, origin, reason, error)).await
    }

    pub(crate) fn bury_now(
        &self,
        msg: Message,
        origin: &str,
        reason: DeathReason,
        error: Option<String>,
    ) -> Result<(), Message> {
        self.channel
            .queue()
            .store
            .force_push(mark_dead(msg, origin, reason, error))
    }
}

impl InvalidMessageChannel {
    /// An invalid message channel holding at most `capacity` messages.
    pub fn new(name: &str, capacity: usize) -> Result<Self, super::ChannelError> {
        Ok(InvalidMessageChannel {
            channel: PointToPoint::builder(name).capacity(capacity).build()?,
        })
    }

    /// Puts a message a receiver could not process here, with the reason it gives.
    /// Cancel-safe. Gives the message back if this channel is closed.
    pub async fn put(
        &self,
        msg: Message,
        origin: &str,
        reason: impl Into<String>,
    ) -> Result<(), Message> {
        bury(
            self.channel.queue(),
            mark_dead(msg, origin, DeathReason::Invalid, Some(reason.into())),
        )
        .await
    }

    /// Like [`put`](Self::put) for paths that can not wait: ignores the capacity.
    pub(crate) fn put_now(&self, msg: Message, origin: &str, reason: String) {
        let msg = mark_dead(msg, origin, DeathReason::Invalid, Some(reason));
        if let Err(msg) = self.channel.queue().store.force_push(msg) {
            tracing::warn!(channel = %self.name(), message = %msg.id(), "invalid message channel closed: message discarded");
        }
    }
}

/// Makes an existing channel, with its own configuration, the place for dead letters.
impl From<PointToPoint> for DeadLetterChannel {
    fn from(channel: PointToPoint) -> Self {
        DeadLetterChannel { channel }
    }
}

/// Makes an existing channel, with its own configuration, the place for invalid messages.
impl From<PointToPoint> for InvalidMessageChannel {
    fn from(channel: PointToPoint) -> Self {
        InvalidMessageChannel { channel }
    }
}

impl Deref for DeadLetterChannel {
    type Target = PointToPoint;
    fn deref(&self) -> &PointToPoint {
        &self.channel
    }
}

impl Deref for InvalidMessageChannel {
    type Target = PointToPoint;
    fn deref(&self) -> &PointToPoint {
        &self.channel
    }
}

/// The message as it enters a dead letter or invalid message channel: with a death record
/// (counting on from one it has) naming `origin`, `reason` and the `error`, and without an
/// expiration. For dry runs that show what a dead letter would look like.
pub fn marked_dead(
    msg: Message,
    origin: &str,
    reason: DeathReason,
    error: Option<String>,
) -> Message {
    mark_dead(msg, origin, reason, error)
}

/// The message as it enters a dead letter or invalid message channel.
fn mark_dead(
    mut msg: Message,
    origin: &str,
    reason: DeathReason,
    error: Option<String>,
) -> Message {
    let previous = msg.death().ok().flatten();
    let record = DeathRecord::died_again(previous, DeathRecord::new(origin, reason, error));
    msg.set_death(&record);
    msg.headers_mut().remove(names::EXPIRES_AT);
    msg
}

/// Forces the message in if the waiting push is cancelled, so a dead letter is never lost.
struct ForceOnDrop<'a> {
    queue: &'a Lane,
    msg: Option<Message>,
}

impl Drop for ForceOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(msg) = self.msg.take()
            && let Err(msg) = self.queue.store.force_push(msg)
        {
            tracing::warn!(channel = %self.queue.name, message = %msg.id(), "dead letter channel closed: message discarded");
        }
    }
}

async fn bury(queue: &Lane, msg: Message) -> Result<(), Message> {
    let mut guard = ForceOnDrop {
        queue,
        msg: Some(msg),
    };
    let pushed = guard.queue.push(&mut guard.msg).await;
    pushed.map_err(|refused| {
        if let super::lane::Refused::Failed(msg, cause) = &refused {
            tracing::error!(channel = %guard.queue.name, message = %msg.id(), error = %Escaped(&cause), "dead letter not stored");
        }
        refused.into_message()
    })
}
