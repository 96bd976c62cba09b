//! Browsing a channel: the messages waiting on it, shown page by page and left where they are.
//!
//! A point-to-point channel shows its one store's waiting messages; a publish-subscribe
//! channel each of its subscriptions' ([`SubscriptionPage`]): what one subscriber has not
//! taken yet is not what another has not. Either way a page holds the messages waiting (not
//! those delivered and not yet settled), in the order they will be delivered, from an offset,
//! at most a limit, with how many wait in all; with a [`Selector`] only those it selects
//! count. Nothing is taken: every message shown is still delivered as if it had not been
//! looked at (see [`MessageStore::browse`](crate::store::MessageStore::browse)). A channel
//! kept in a broker answers [`NotBrowsable`]: the broker shows its queues itself.

use super::{PointToPoint, Selector};
use crate::store::Select;
pub use crate::store::{Browse, NotBrowsable};

/// One subscription's page of a publish-subscribe channel.
#[derive(Debug, Clone)]
pub struct SubscriptionPage {
    /// The durable subscription's name; `None` for one that ends with its subscriber.
    pub name: Option<String>,
    /// Its page, or why it can not be shown.
    pub page: Result<Browse, NotBrowsable>,
}

impl PointToPoint {
    /// The messages waiting (those `selector` selects, if given) from the `offset`-th on, at
    /// most `limit`, without taking them.
    pub fn browse(
        &self,
        selector: Option<&Selector>,
        offset: usize,
        limit: usize,
    ) -> Result<Browse, NotBrowsable> {
        let select = selector.map(|s| s as &dyn Select);
        self.queue().store.browse(select, offset, limit)
    }
}
