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
use crate::channel::{Channel, HeldJoins};
use crate::message::Message;

/// One store to make: the message arriving at a channel over a join. The message itself is
/// not part of it: along a chain it stays in one place, the caller's, and each crossing edits
/// its hop budget there ([`Walk::stored_then_next`]); only the hops that wait in the queue
/// hold their own copy.
pub(crate) struct Hop<'g> {
    /// The join it crosses.
    pub(crate) via: Via<'g>,
    /// The remaining hop budget the message carries, for [`Walk::stored`].
    pub(crate) budget: u32,
}

/// The join a hop crosses, held as its place among the joins of its source rather than by a
/// clone of the destination: along a chain the set moves from hop to hop, pinned
/// ([`HeldJoins`]), counted by no one.
pub(crate) struct Via<'g> {
    joins: HeldJoins<'g>,
    index: usize,
}

impl Hop<'_> {
    /// The same hop holding its joins counted, to keep past the pin.
    pub(crate) fn counted(self) -> Hop<'static> {
        Hop {
            via: Via {
                joins: self.via.joins.counted(),
                index: self.via.index,
            },
            budget: self.budget,
        }
    }
}

impl Via<'_> {
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
pub(crate) struct Walk<'g> {
    visited: Visited,
    queue: Queue<'g>,
}

impl<'g> Walk<'g> {
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
    pub(crate) fn stored(
        &mut self,
        joins: HeldJoins<'g>,
        mut message: Message,
        arrived_with: Option<u32>,
    ) {
        if let Some(last) = self.cross(joins, &mut message, arrived_with) {
            self.queue.push(last, message);
        }
    }

    /// [`stored`](Self::stored), then [`next_into`](Self::next_into), with the message in
    /// `message`, where the next hop's message is left. Along a chain (one crossing, nothing
    /// else waiting) the crossing is the next hop: its budget is set in place and the message
    /// goes nowhere.
    #[inline(always)]
    pub(crate) fn stored_then_next(
        &mut self,
        joins: HeldJoins<'g>,
        message: &mut Message,
        arrived_with: Option<u32>,
    ) -> Option<Hop<'g>> {
        let hop = self.cross(joins, message, arrived_with);
        match self.queue.pop() {
            // `cross` only adds to the queue: empty now, it was empty before.
            None => match hop {
                Some(hop) if self.admits(&hop) => Some(hop),
                _ => None,
            },
            Some((first, waiting)) => {
                // The crossing queues behind the hops waiting; the first of those is next.
                let crossing = std::mem::replace(message, waiting);
                if let Some(hop) = hop {
                    self.queue.push(hop, crossing);
                }
                if self.admits(&first) {
                    Some(first)
                } else {
                    self.next_into(message)
                }
            }
        }
    }

    /// The hops for the joins the message crosses: all but the last queued with copies of the
    /// message, the last handed back, its budget set in `message` (each crossing is made when
    /// the next is found, so the last takes the set itself, uncloned).
    #[inline(always)]
    fn cross(
        &mut self,
        joins: HeldJoins<'g>,
        message: &mut Message,
        arrived_with: Option<u32>,
    ) -> Option<Hop<'g>> {
        let headers = message.headers();
        let (remaining, budget_only) = match arrived_with {
            // Still the shared budget-only map the hop set: no need to read it.
            Some(budget) if budget::is_shared(headers, budget) => (Some(budget), true),
            _ => {
                let remaining = super::remaining(message);
                // The map holds the budget and nothing else (or nothing at all).
                (remaining, headers.len() == usize::from(remaining.is_some()))
            }
        };
        if remaining == Some(0) {
            return None;
        }
        let mut pending: Option<(usize, u32)> = None;
        for (index, join) in joins.iter().enumerate() {
            if let Some(budget) = join.crossing(message, remaining)
                && let Some((i, b)) = pending.replace((index, budget))
            {
                let mut copy = message.clone();
                budget::set(copy.headers_mut(), b, budget_only);
                let via = Via {
                    joins: joins.share(),
                    index: i,
                };
                self.queue.push(Hop { via, budget: b }, copy);
            }
        }
        let (index, budget) = pending?;
        budget::set(message.headers_mut(), budget, budget_only);
        Some(Hop {
            via: Via { joins, index },
            budget,
        })
    }

    /// The next store to make, if any, and the message it stores: archival arrivals always,
    /// others only at a channel this send has not stored at (once per channel, whatever the
    /// paths and cycles).
    pub(crate) fn next(&mut self) -> Option<(Hop<'g>, Message)> {
        while let Some((hop, message)) = self.queue.pop() {
            if self.admits(&hop) {
                return Some((hop, message));
            }
        }
        None
    }

    /// [`next`](Self::next), its message left in `message`.
    pub(crate) fn next_into(&mut self, message: &mut Message) -> Option<Hop<'g>> {
        let (hop, next) = self.next()?;
        *message = next;
        Some(hop)
    }

    /// The same walk holding every joins set it holds counted, to keep past the pin.
    pub(crate) fn counted(self) -> Walk<'static> {
        let counted = |(hop, message): (Hop<'g>, Message)| (hop.counted(), message);
        Walk {
            visited: self.visited,
            queue: Queue {
                first: self.queue.first.map(counted),
                rest: self.queue.rest.into_iter().map(counted).collect(),
            },
        }
    }

    /// Whether `hop` is made: an archival arrival always, another only at a channel this send
    /// has not stored at (which counts as stored at from now on).
    #[inline(always)]
    fn admits(&mut self, hop: &Hop<'g>) -> bool {
        let via = &hop.via;
        !via.checks_loops() || self.visited.first_time(via.destination().identity())
    }
}

/// The hops waiting, first in first out, each with its message. Along a chain no hop waits
/// (the next is handed over at once); when hops fan out one waits in the `first` slot, and a
/// send allocates a queue only when more do.
#[derive(Default)]
struct Queue<'g> {
    first: Option<(Hop<'g>, Message)>,
    rest: VecDeque<(Hop<'g>, Message)>,
}

impl<'g> Queue<'g> {
    fn push(&mut self, hop: Hop<'g>, message: Message) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some((hop, message));
        } else {
            self.rest.push_back((hop, message));
        }
    }

    fn pop(&mut self) -> Option<(Hop<'g>, Message)> {
        self.first.take().or_else(|| self.rest.pop_front())
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

    /// Whether `id` is seen for the first time (then it is remembered). A clear filter bit
    /// with room inline, every hop of a chain, is answered here, inlined into the walk.
    #[inline(always)]
    fn first_time(&mut self, id: usize) -> bool {
        let bit = Visited::bit(id);
        if self.filter & bit == 0 && self.len < Visited::INLINE {
            self.filter |= bit;
            self.inline[self.len] = id;
            self.len += 1;
            return true;
        }
        self.first_time_searched(id, bit)
    }

    /// [`first_time`](Self::first_time) where the filter may have seen `id`, or the inline
    /// array is full.
    #[inline(never)]
    fn first_time_searched(&mut self, id: usize, bit: u64) -> bool {
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
        walk.stored(entry.joins().into(), msg, None);
        let mut hops = Vec::new();
        while let Some((hop, message)) = walk.next() {
            let to = hop.via.destination().clone();
            hops.push((to.name().to_owned(), message.hop_budget().unwrap()));
            if let Channel::PublishSubscribe(to) = to {
                walk.stored(to.joins().into(), message, Some(hop.budget));
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
    fn a_walk_in_place_makes_the_hops_of_a_walk_through_the_queue() {
        let c = channels(&["a", "b", "c", "d", "e"]);
        for (from, to, hops) in [(0, 1, 3), (0, 2, 10), (1, 3, 10), (2, 3, 10), (3, 4, 10)] {
            Join::builder(c[from].clone(), c[to].clone())
                .hops(hops)
                .create()
                .unwrap();
        }
        let mut in_place = Vec::new();
        let mut in_place_walk = Walk::new(c[0].identity());
        let mut message = Message::new("x");
        let mut next = in_place_walk.stored_then_next(c[0].joins().into(), &mut message, None);
        while let Some(hop) = next {
            let to = hop.via.destination().clone();
            in_place.push((to.name().to_owned(), message.hop_budget().unwrap()));
            next = match to {
                Channel::PublishSubscribe(to) => in_place_walk.stored_then_next(
                    to.joins().into(),
                    &mut message,
                    Some(hop.budget),
                ),
                Channel::PointToPoint(_) => in_place_walk.next_into(&mut message),
            };
        }
        let queued = walk(&c[0], Message::new("x"));
        assert_eq!(in_place, queued);
        assert_eq!(
            queued,
            [
                ("b".into(), Some(3)),
                ("c".into(), Some(10)),
                ("d".into(), Some(2)),
                ("e".into(), Some(1)),
            ]
        );
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
