//! Following joins from the channel a message was published on: the real run of the
//! [`Walk`](super::walk::Walk)'s decisions, each hop carried out by storing.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use super::walk::Walk;
use crate::channel::{Joins, PublishSubscribe, Stored};
use crate::log::Escaped;
use crate::message::Message;

/// [`propagate`] as the [`Follow`](crate::channel::outgoing::Follow) function a channel calls after a
/// publish has stored a message: boxed, as inline it would double the size of every
/// publish's future.
pub(super) fn follow<'a>(
    entry: &'a PublishSubscribe,
    joins: Joins,
    stored: Message,
    now: Option<Instant>,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    Box::pin(propagate(entry, joins, stored, now))
}

/// Having stored `message` on `entry` (whose joins are `joins`), stores it on every channel the
/// joins take it to, breadth first, each (archival destinations aside) at most once. `now` is
/// the publish's time for loop memory, if it read the clock.
async fn propagate(entry: &PublishSubscribe, joins: Joins, message: Message, now: Option<Instant>) {
    let now = now.unwrap_or_else(Instant::now);
    let mut walk = Walk::new(entry.identity());
    walk.stored(joins, message, None);
    while let Some(hop) = walk.next() {
        let loops = hop.via.checks_loops().then_some(now);
        match hop.via.destination().store(hop.message, loops).await {
            Stored::Forward(message, joins) => walk.stored(joins, message, Some(hop.budget)),
            Stored::Yes | Stored::Invalid(_) | Stored::Duplicate => {}
            Stored::Refused(refused) => {
                let error = refused.into_send_error(hop.via.destination().name());
                tracing::warn!(
                    channel = hop.via.destination().name(),
                    error = %Escaped(&error),
                    "join destination did not take the message: not forwarded"
                )
            }
        }
    }
}
