//! Browsing a publish-subscribe channel: each subscription's waiting messages (see
//! [`crate::channel::browse`]).

use super::PublishSubscribe;
use crate::channel::Selector;
use crate::channel::browse::SubscriptionPage;
use crate::store::Select;

impl PublishSubscribe {
    /// Each of its own subscriptions' waiting messages (those `selector` selects, if given)
    /// from the `offset`-th on, at most `limit`, without taking them: in the order they were
    /// made, durable ones with their names.
    pub fn browse(
        &self,
        selector: Option<&Selector>,
        offset: usize,
        limit: usize,
    ) -> Vec<SubscriptionPage> {
        let (current, durable) = {
            let subs = self.lock();
            let durable: Vec<_> = subs
                .durable
                .iter()
                .map(|(name, lane)| (name.clone(), lane.clone()))
                .collect();
            (subs.current.clone(), durable)
        };
        let select = selector.map(|s| s as &dyn Select);
        current
            .own
            .iter()
            .map(|lane| SubscriptionPage {
                name: durable
                    .iter()
                    .find(|(_, d)| std::sync::Arc::ptr_eq(d, lane))
                    .map(|(name, _)| name.clone()),
                page: lane.store.browse(select, offset, limit),
            })
            .collect()
    }
}
