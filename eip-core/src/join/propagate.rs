//! Following joins from the channel a message was published on: the real run of the
//! [`Walk`](super::walk::Walk)'s decisions, each hop carried out by storing.
//!
//! The walk is synchronous for as long as every store completes at once (channels in memory
//! with room, the common case): a publish through a chain of joins then allocates nothing and
//! awaits nothing. At the first store that has to wait (for room, or for a durable commit), the
//! walk moves into a boxed future that awaits that store and carries on the same way.

use std::future::Future;
use std::pin::Pin;

use super::walk::{Hop, Via, Walk};
use crate::channel::{Joins, Moment, PublishSubscribe, Stored};
use crate::log::Escaped;
use crate::message::Message;
use crate::store::Waiting;

/// The [`Follow`](crate::channel::outgoing::Follow) function a channel calls after a publish
/// has stored a message on `entry` (whose joins are `joins`): stores it on every channel the
/// joins take it to, breadth first, each (archival destinations aside) at most once. `now` is
/// the publish's time for loop memory, if it read the clock. What is left once a store has to
/// wait, if one does.
pub(super) fn follow<'a>(
    entry: &'a PublishSubscribe,
    joins: Joins,
    stored: Message,
    now: Option<Moment>,
) -> Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>> {
    let now = now.unwrap_or_else(Moment::now);
    let mut walk = Walk::new(entry.identity());
    let first = walk.stored_then_next(joins, stored, None);
    let waiting = store_until_waiting(&mut walk, first, now)?;
    Some(Box::pin(finish(walk, waiting, now)))
}

/// A store that has to wait: the rest of it, and the hop it is for.
struct Pending {
    storing: Waiting<'static, Stored>,
    via: Via,
    budget: u32,
}

/// Makes the walk's stores, from `next` on, while each completes at once; the first that has
/// to wait.
fn store_until_waiting(walk: &mut Walk, mut next: Option<Hop>, now: Moment) -> Option<Pending> {
    while let Some(hop) = next {
        let loops = hop.via.checks_loops().then_some(now);
        next = match hop.via.destination().store_now(hop.message, loops) {
            Ok(stored) => settle(walk, &hop.via, hop.budget, stored),
            Err(storing) => {
                return Some(Pending {
                    storing,
                    via: hop.via,
                    budget: hop.budget,
                });
            }
        };
    }
    None
}

/// The walk from a store that has to wait on.
async fn finish(mut walk: Walk, mut pending: Pending, now: Moment) {
    loop {
        let stored = pending.storing.await;
        let next = settle(&mut walk, &pending.via, pending.budget, stored);
        match store_until_waiting(&mut walk, next, now) {
            Some(waiting) => pending = waiting,
            None => return,
        }
    }
}

/// What one store did, fed back into the walk (a channel that stored the message and has
/// joins leaving it adds their hops), and the next hop to make.
#[inline(always)]
fn settle(walk: &mut Walk, via: &Via, budget: u32, stored: Stored) -> Option<Hop> {
    match stored {
        Stored::Forward(message, joins) => {
            return walk.stored_then_next(joins, message, Some(budget));
        }
        Stored::Yes | Stored::Invalid(_) | Stored::Duplicate => {}
        Stored::Refused(refused) => {
            let error = refused.into_send_error(via.destination().name());
            tracing::warn!(
                channel = via.destination().name(),
                error = %Escaped(&error),
                "join destination did not take the message: not forwarded"
            )
        }
    }
    walk.next()
}
