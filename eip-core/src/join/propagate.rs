//! Following joins from the channel a message was published on: the real run of the
//! [`Walk`](super::walk::Walk)'s decisions, each hop carried out by storing.
//!
//! The walk is synchronous for as long as every store completes at once (channels in memory
//! with room, the common case): a publish through a chain of joins then allocates nothing and
//! awaits nothing. At the first store that has to wait (for room, or for a durable commit), the
//! walk moves into a boxed future that awaits that store and carries on the same way.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use uuid::Uuid;

use super::walk::{Hop, Walk};
use crate::channel::{Copied, Guard, Joins, Moment, PublishSubscribe, Stored, pin};
use crate::log::Escaped;
use crate::message::{Headers, Message, MessageId};
use crate::store::Waiting;

/// The [`Follow`](crate::channel::outgoing::Follow) function a channel calls after a publish
/// has stored a message on `entry` (whose joins are `joins`): stores it on every channel the
/// joins take it to, breadth first, each (archival destinations aside) at most once. `now` is
/// the publish's time for loop memory, if it read the clock. What is left once a store has to
/// wait, if one does.
pub(super) fn follow<'a>(
    entry: &'a PublishSubscribe,
    joins: Joins,
    mut stored: Message,
    now: Option<Moment>,
) -> Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>> {
    let now = now.unwrap_or_else(Moment::now);
    // Pinned for the synchronous stretch: the walk holds the joins sets it reads pinned.
    let guard = pin();
    let mut walk = Walk::new(entry.identity());
    let first = walk.stored_then_next(joins.into(), &mut stored, None);
    let waiting = store_until_waiting(&mut walk, &mut stored, first, now, &guard)?;
    Some(Box::pin(finish(walk.counted(), waiting.counted(), now)))
}

/// A store that has to wait: the rest of it, and the hop it is for.
struct Pending<'g> {
    storing: Waiting<'static, Stored>,
    hop: Hop<'g>,
}

impl Pending<'_> {
    /// The same, its hop holding its joins counted, to keep past the pin.
    fn counted(self) -> Pending<'static> {
        Pending {
            storing: self.storing,
            hop: self.hop.counted(),
        }
    }
}

/// Makes the walk's stores, from `next` on, while each completes at once; the first that has
/// to wait. `message` is the message `next` stores, and where each later hop's is left: a
/// store that can leaves it there and stores a copy ([`Channel::store_copy`]), so along a
/// chain of channels in memory the message stays in this one place.
fn store_until_waiting<'g>(
    walk: &mut Walk<'g>,
    message: &mut Message,
    mut next: Option<Hop<'g>>,
    now: Moment,
    guard: &'g Guard,
) -> Option<Pending<'g>> {
    // The hop is read where it is, field by field: moved out whole, it would be read in wider
    // pieces than it was just written in, and wait for those writes.
    while let Some(hop) = &next {
        let loops = hop.via.checks_loops().then_some(now);
        let destination = hop.via.destination();
        let after = match destination.store_copy(message, loops, guard) {
            Copied::Stored(Some(joins)) => walk.stored_then_next(joins, message, Some(hop.budget)),
            Copied::Stored(None) | Copied::Duplicate => walk.next_into(message),
            Copied::Declined => match destination.store_now(take(message), loops) {
                Ok(stored) => settle(walk, message, hop, stored),
                Err(storing) => return next.map(|hop| Pending { storing, hop }),
            },
        };
        next = after;
    }
    None
}

/// The message out of `slot`, which holds a [`stand_in`] until the walk puts the next hop's
/// message there (nothing reads the slot before that).
fn take(slot: &mut Message) -> Message {
    std::mem::replace(slot, stand_in())
}

/// What a message slot holds while the walk has no message in it: nothing allocated, no id
/// made.
fn stand_in() -> Message {
    Message::from_parts(MessageId::from(Uuid::nil()), Headers::new(), Bytes::new())
}

/// The walk from a store that has to wait on. Each synchronous stretch is pinned on its own;
/// what waits holds its joins counted.
async fn finish(mut walk: Walk<'static>, mut pending: Pending<'static>, now: Moment) {
    let mut message = stand_in();
    loop {
        let stored = pending.storing.await;
        let guard = pin();
        let mut pinned: Walk<'_> = walk;
        let next = settle(&mut pinned, &mut message, &pending.hop, stored);
        let waiting = store_until_waiting(&mut pinned, &mut message, next, now, &guard);
        (walk, pending) = match waiting {
            Some(waiting) => (pinned.counted(), waiting.counted()),
            None => return,
        };
    }
}

/// What one store did, fed back into the walk (a channel that stored the message and has
/// joins leaving it adds their hops), and the next hop to make, its message left in `message`.
#[inline(always)]
fn settle<'g>(
    walk: &mut Walk<'g>,
    message: &mut Message,
    hop: &Hop<'_>,
    stored: Stored,
) -> Option<Hop<'g>> {
    match stored {
        Stored::Forward(stored, joins) => {
            *message = stored;
            return walk.stored_then_next(joins.into(), message, Some(hop.budget));
        }
        Stored::Yes | Stored::Invalid(_) | Stored::Duplicate => {}
        Stored::Refused(refused) => {
            let destination = hop.via.destination();
            let error = refused.into_send_error(destination.name());
            tracing::warn!(
                channel = destination.name(),
                error = %Escaped(&error),
                "join destination did not take the message: not forwarded"
            )
        }
    }
    walk.next_into(message)
}
