//! The decision of where joins take a message: one function for the real publish and the dry
//! run.
//!
//! A [`Walk`] is the state of one send as it follows joins: the hops queued (breadth first) and
//! the channels already stored at. It decides, and only decides: [`Walk::stored`] says which
//! joins a message stored at a channel crosses (filter, hop arithmetic, the budget it carries
//! on), and [`Walk::next`] hands out the next store to make, skipping a non-archival arrival at
//! a channel this send has stored at already. [`propagate`](super::propagate) carries the hops
//! out by storing; [`Tracer`](super::Tracer) by recording. Whether a channel then takes the
//! message (datatype, loop memory, deleted) is the channel's answer, fed back through
//! [`Walk::stored`].

use std::collections::VecDeque;

use super::{Join, budget};
use crate::channel::{Channel, Joins};
use crate::message::Message;

/// One store to make: a message arriving at a channel over a join.
pub(crate) struct Hop {
    /// The join it crosses.
    pub(crate) via: Via,
    /// The message as it arrives, carrying its remaining hop budget.
    pub(crate) message: Message,
    /// That budget, for [`Walk::stored`].
    pub(crate) budget: u32,
}

/// The join a hop crosses, held as its place among the joins of its source rather than by a
/// clone of the destination: along a chain the set moves from hop to hop, counted by no one.
pub(crate) struct Via {
    joins: Joins,
    index: usize,
}

impl Hop {
    // Inlined into `Walk::stored` (its two calls), where the message is moved once, not twice.
    #[inline(always)]
    fn new(joins: Joins, index: usize, mut message: Message, budget: u32, only: bool) -> Hop {
        budget::set(message.headers_mut(), budget, only);
        Hop {
            via: Via { joins, index },
            message,
            budget,
        }
    }
}

impl Via {
    fn join(&self) -> &Join {
        &self.joins[self.index]
    }

    /// Where the message arrives.
    pub(crate) fn destination(&self) -> &Channel {
        self.join().destination()
    }

    /// Whether the destination's loop memory decides if it stores the message: not over an
    /// archival join.
    pub(crate) fn checks_loops(&self) -> bool {
        !self.join().is_archival()
    }
}

/// The breadth-first walk of one send through joins (see the module documentation).
pub(crate) struct Walk {
    visited: Visited,
    queue: Queue,
}

impl Walk {
    /// A walk from the channel with identity `entry`, which has stored the message.
    pub(crate) fn new(entry: usize) -> Self {
        Walk {
            visited: Visited::new(entry),
            queue: Queue::default(),
        }
    }

    /// A channel stored `message` (as stored, after its own rules) and `joins` leave it:
    /// queues a hop for each join the message crosses, in the joins' order. `arrived_with` is
    /// the budget of the hop that brought it, if one did ([`Hop::budget`]).
    pub(crate) fn stored(&mut self, joins: Joins, message: Message, arrived_with: Option<u32>) {
        if let Some(last) = self.cross(joins, message, arrived_with) {
            self.queue.push(last);
        }
    }

    /// [`stored`](Self::stored), then [`next`](Self::next). Along a chain (one crossing,
    /// nothing else waiting) the crossing is the next hop: it is handed over without going
    /// through the queue.
    #[inline(always)]
    pub(crate) fn stored_then_next(
        &mut self,
        joins: Joins,
        message: Message,
        arrived_with: Option<u32>,
    ) -> Option<Hop> {
        match self.cross(joins, message, arrived_with) {
            // `cross` only adds to the queue: empty now, it was empty before.
            Some(hop) if self.queue.is_empty() => self.admits(&hop).then_some(hop),
            Some(hop) => {
                self.queue.push(hop);
                self.next()
            }
            None => self.next(),
        }
    }

    /// The hops for the joins the message crosses: all but the last queued, the last handed
    /// back (each crossing is made when the next is found, so the last takes the message and
    /// the set itself, uncloned).
    #[inline(always)]
    fn cross(&mut self, joins: Joins, message: Message, arrived_with: Option<u32>) -> Option<Hop> {
        let headers = message.headers();
        let (remaining, budget_only) = match arrived_with {
            // Still the shared budget-only map the hop set: no need to read it.
            Some(budget) if budget::is_shared(headers, budget) => (Some(budget), true),
            _ => {
                let remaining = super::remaining(&message);
                // The map holds the budget and nothing else (or nothing at all).
                (remaining, headers.len() == usize::from(remaining.is_some()))
            }
        };
        if remaining == Some(0) {
            return None;
        }
        let mut pending: Option<(usize, u32)> = None;
        for (index, join) in joins.iter().enumerate() {
            if let Some(budget) = join.crossing(&message, remaining)
                && let Some((i, b)) = pending.replace((index, budget))
            {
                let hop = Hop::new(joins.clone(), i, message.clone(), b, budget_only);
                self.queue.push(hop);
            }
        }
        let (i, b) = pending?;
        Some(Hop::new(joins, i, message, b, budget_only))
    }

    /// The next store to make, if any: archival arrivals always, others only at a channel this
    /// send has not stored at (once per channel, whatever the paths and cycles).
    pub(crate) fn next(&mut self) -> Option<Hop> {
        while let Some(hop) = self.queue.pop() {
            if self.admits(&hop) {
                return Some(hop);
            }
        }
        None
    }

    /// Whether `hop` is made: an archival arrival always, another only at a channel this send
    /// has not stored at (which counts as stored at from now on).
    #[inline(always)]
    fn admits(&mut self, hop: &Hop) -> bool {
        let via = &hop.via;
        !via.checks_loops() || self.visited.first_time(via.destination().identity())
    }
}

/// The hops waiting, first in first out. Along a chain one hop waits at a time: it takes the
/// `first` slot, and a send allocates a queue only when hops fan out.
#[derive(Default)]
struct Queue {
    first: Option<Hop>,
    rest: VecDeque<Hop>,
}

impl Queue {
    fn push(&mut self, hop: Hop) {
        if self.is_empty() {
            self.first = Some(hop);
        } else {
            self.rest.push_back(hop);
        }
    }

    fn pop(&mut self) -> Option<Hop> {
        self.first.take().or_else(|| self.rest.pop_front())
    }

    fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

/// Channels stored at in one send. A send touches few channels: a small inline array beats
/// hashing and, up to [`Visited::INLINE`] channels, allocates nothing. A 64-bit filter of the
/// identities seen answers most first visits (every hop of a chain) without a search.
struct Visited {
    inline: [usize; Visited::INLINE],
    len: usize,
    more: Vec<usize>,
    /// A bit per identity seen ([`Visited::bit`]): a clear bit proves an identity new.
    filter: u64,
}

impl Visited {
    const INLINE: usize = 16;

    fn new(entry: usize) -> Self {
        let mut inline = [0; Visited::INLINE];
        inline[0] = entry;
        Visited {
            inline,
            len: 1,
            more: Vec::new(),
            filter: Visited::bit(entry),
        }
    }

    /// The filter's bit for `id`: identities are addresses, so the bits above their alignment
    /// are mixed into six.
    fn bit(id: usize) -> u64 {
        1 << ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
    }

    fn first_time(&mut self, id: usize) -> bool {
        let bit = Visited::bit(id);
        if self.filter & bit != 0
            && (self.inline[..self.len].contains(&id) || self.more.contains(&id))
        {
            return false;
        }
        self.filter |= bit;
        if self.len < Visited::INLINE {
            self.inline[self.len] = id;
            self.len += 1;
        } else {
            self.more.push(id);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PublishSubscribe;

    fn channels(names: &[&str]) -> Vec<PublishSubscribe> {
        names
            .iter()
            .map(|n| PublishSubscribe::new(n, 10).unwrap())
            .collect()
    }

    /// Walks from `entry` as if every channel stored what reached it: (channel, budget) each.
    fn walk(entry: &PublishSubscribe, msg: Message) -> Vec<(String, Option<u32>)> {
        let mut walk = Walk::new(entry.identity());
        walk.stored(entry.joins(), msg, None);
        let mut hops = Vec::new();
        while let Some(hop) = walk.next() {
            let to = hop.via.destination().clone();
            hops.push((to.name().to_owned(), hop.message.hop_budget().unwrap()));
            if let Channel::PublishSubscribe(to) = to {
                walk.stored(to.joins(), hop.message, Some(hop.budget));
            }
        }
        hops
    }

    #[test]
    fn a_walk_carries_the_smaller_budget_and_stops_when_it_is_spent() {
        let c = channels(&["a", "b", "c", "d"]);
        for (i, hops) in [(0, 1), (1, 10), (2, 10)] {
            Join::builder(c[i].clone(), c[i + 1].clone())
                .hops(hops)
                .create()
                .unwrap();
        }
        let hops = walk(&c[0], Message::new("x"));
        assert_eq!(hops, [("b".into(), Some(1)), ("c".into(), Some(0))]);
    }

    #[test]
    fn a_walk_stores_once_per_channel_around_a_cycle() {
        let c = channels(&["a", "b"]);
        Join::builder(c[0].clone(), c[1].clone()).create().unwrap();
        Join::builder(c[1].clone(), c[0].clone()).create().unwrap();
        assert_eq!(walk(&c[0], Message::new("x")), [("b".into(), Some(10))]);
    }

    #[test]
    fn visited_remembers_past_its_inline_capacity() {
        let mut visited = Visited::new(0);
        assert!(!visited.first_time(0));
        for id in 1..40 {
            assert!(visited.first_time(id), "{id}");
        }
        for id in 0..40 {
            assert!(!visited.first_time(id), "{id}");
        }
    }
}
