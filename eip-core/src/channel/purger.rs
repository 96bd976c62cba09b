//! Channel Purger: empties a channel of the messages waiting on it.
//!
//! Useful in tests and after an incident: left-over messages on a channel would otherwise be
//! processed before anything new. A purge removes waiting messages only (all of them, or those a
//! [`Selector`] accepts) and returns how many it removed; deliveries in flight are untouched.
//! Purged messages are gone (not dead-lettered): purging is a deliberate act.

use super::selector::Selector;
use super::{Channel, PointToPoint, PublishSubscribe};

/// Removes waiting messages from a channel.
pub trait ChannelPurger {
    /// Removes every waiting message; returns how many.
    fn purge(&self) -> usize;
    /// Removes the waiting messages `selector` accepts; returns how many.
    fn purge_matching(&self, selector: &Selector) -> usize;
}

impl ChannelPurger for PointToPoint {
    fn purge(&self) -> usize {
        self.queue().store.purge(None)
    }
    fn purge_matching(&self, selector: &Selector) -> usize {
        self.queue().store.purge(Some(selector))
    }
}

impl ChannelPurger for PublishSubscribe {
    fn purge(&self) -> usize {
        PublishSubscribe::purge(self, None)
    }
    fn purge_matching(&self, selector: &Selector) -> usize {
        PublishSubscribe::purge(self, Some(selector))
    }
}

impl ChannelPurger for Channel {
    fn purge(&self) -> usize {
        match self {
            Channel::PointToPoint(c) => c.purge(),
            Channel::PublishSubscribe(c) => ChannelPurger::purge(c),
        }
    }
    fn purge_matching(&self, selector: &Selector) -> usize {
        match self {
            Channel::PointToPoint(c) => c.purge_matching(selector),
            Channel::PublishSubscribe(c) => c.purge_matching(selector),
        }
    }
}
