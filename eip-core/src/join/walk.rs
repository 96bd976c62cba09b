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
use std::sync::Arc;

use super::Join;
use crate::channel::Channel;
use crate::message::Message;

/// One store to make: a message arriving at a channel over a join.
pub(crate) struct Hop {
    /// Where the message arrives.
    pub(crate) destination: Channel,
    /// The message as it arrives, carrying its remaining hop budget.
    pub(crate) message: Message,
    /// Whether it came over an archival join (no duplicate check at the destination).
    pub(crate) archival: bool,
}

impl Hop {
    /// Whether the destination's loop memory decides if it stores the message.
    pub(crate) fn checks_loops(&self) -> bool {
        !self.archival
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
    /// queues a hop for each join the message crosses.
    pub(crate) fn stored(&mut self, joins: &[Arc<Join>], message: Message) {
        let Some((last, others)) = joins.split_last() else {
            return;
        };
        for join in others {
            if let Some(budget) = join.crossing(&message) {
                self.queue.push(join.hop(message.clone(), budget));
            }
        }
        if let Some(budget) = last.crossing(&message) {
            self.queue.push(last.hop(message, budget));
        }
    }

    /// The next store to make, if any: archival arrivals always, others only at a channel this
    /// send has not stored at (once per channel, whatever the paths and cycles).
    pub(crate) fn next(&mut self) -> Option<Hop> {
        while let Some(hop) = self.queue.pop() {
            if hop.archival || self.visited.first_time(hop.destination.identity()) {
                return Some(hop);
            }
        }
        None
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
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(hop);
        } else {
            self.rest.push_back(hop);
        }
    }

    fn pop(&mut self) -> Option<Hop> {
        self.first.take().or_else(|| self.rest.pop_front())
    }
}

/// Channels stored at in one send. A send touches few channels: a small inline array beats
/// hashing and, up to [`Visited::INLINE`] channels, allocates nothing.
struct Visited {
    inline: [usize; Visited::INLINE],
    len: usize,
    more: Vec<usize>,
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
        }
    }

    fn first_time(&mut self, id: usize) -> bool {
        if self.inline[..self.len].contains(&id) || self.more.contains(&id) {
            return false;
        }
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
