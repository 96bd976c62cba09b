//! The joins leaving a publish-subscribe channel, as the channel holds them.
//!
//! A channel keeps the [`Join`]s that start at it and, when a publish has stored a message, hands
//! the message and that set to the [`Follow`] function the [join module](crate::join) attached
//! with them. That is all a channel knows of joins: which ones a message crosses, in what order,
//! with what hop budget, and what a join may connect are the join module's rules (the methods of
//! [`Join`] are defined there). The data both sides need lives here, below both, so that modules
//! depend one way: `join` uses `channel`, never the reverse.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use std::sync::Arc;

use super::{Channel, Moment, PublishSubscribe, Selector};
use crate::message::Message;

/// A route from a source channel to a destination channel or queue: see [the join
/// module](crate::join) for what joins guarantee, and [`Join::builder`] to make one.
pub struct Join {
    pub(crate) id: JoinId,
    pub(crate) source: String,
    pub(crate) destination: Channel,
    pub(crate) filter: Option<Selector>,
    pub(crate) hops: u32,
    pub(crate) archival: bool,
}

/// Identifies a join on its source channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JoinId(pub(crate) u64);

impl fmt::Display for JoinId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "join-{}", self.0)
    }
}

/// The joins leaving a channel, as one store there saw them: the set is replaced on every
/// change, never changed, so a publish holds a consistent one.
pub(crate) type Joins = Arc<[Arc<Join>]>;

/// Carries a message on from `entry`, where a publish has just stored it (as stored), over
/// `joins`, the joins that store saw leaving `entry`. `now` is the publish's time for loop
/// memory, if it read the clock. Makes at once every store that waits for nothing, and returns
/// what is left to wait for, if anything: done when every store the joins lead to is.
pub(crate) type Follow = for<'a> fn(
    entry: &'a PublishSubscribe,
    joins: Joins,
    stored: Message,
    now: Option<Moment>,
) -> Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>;
