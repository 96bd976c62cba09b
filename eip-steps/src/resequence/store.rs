//! Where a resequencer keeps the messages it holds back.
//!
//! Each method that changes state is one change a durable store can make atomic with the
//! acknowledgement behind it: `hold` (ack the input and keep it), `release` (the next number
//! arrived: it and the run held after it go out), `skip_gap` (a gap given up: the run after
//! it goes out). A store that keeps its state on disk ([`SequenceStore::keeps`]) also makes
//! each change lasting: [`keep_held`](SequenceStore::keep_held) after a hold,
//! [`keep_released`](SequenceStore::keep_released) once a released run went out.

use std::collections::{BTreeMap, VecDeque};

use eip_core::message::{Message, MessageId};
use tokio::time::Instant;

use crate::Keeping;

/// A gap given up, and the run of messages after it that goes out.
#[derive(Debug)]
pub struct Skipped {
    /// The first number skipped.
    pub from: u64,
    /// The last number skipped.
    pub to: u64,
    /// The messages released after the gap, in order.
    pub messages: Vec<Message>,
}

/// A released run once the inner service had it, for a store to make lasting.
#[derive(Debug)]
pub struct Released<'a> {
    /// The numbers and ids the inner service accepted, in order.
    pub sent: &'a [(u64, MessageId)],
    /// What was not sent, in order, from the one the inner service refused on (only for a
    /// store that [keeps](SequenceStore::keeps)): it stays held in the store, and goes out
    /// again when the store is read back.
    pub unsent: &'a [(u64, Message)],
    /// The next number to release once the run was released (it never goes back: runs are
    /// kept in the order they were released).
    pub next: u64,
}

/// A resequencer's state: the next number to release and the messages held for later.
pub trait SequenceStore: Send + 'static {
    /// The next number to release.
    fn next(&self) -> u64;

    /// Whether `n` is held.
    fn is_held(&self, n: u64) -> bool;

    /// Whether `n` was skipped by a gap given up (remembered for a bounded number of gaps).
    fn was_skipped(&self, n: u64) -> bool;

    /// How many messages are held.
    fn held(&self) -> usize;

    /// How many consecutive numbers after `n` are held.
    fn run_after(&self, n: u64) -> usize;

    /// Since when the resequencer has been waiting for `next` with messages held (`None` when
    /// nothing is held).
    fn waiting_since(&self) -> Option<Instant>;

    /// Holds `msg`, number `n` (greater than `next`).
    fn hold(&mut self, n: u64, msg: Message, now: Instant);

    /// Number `next` arrived: returns it with the run held after it, in order, and moves
    /// `next` past them.
    fn release(&mut self, msg: Message, now: Instant) -> Vec<Message>;

    /// Gives up the gap before the lowest held number: returns the skipped range and the run
    /// held from there, in order, and moves `next` past it. `None` when nothing is held.
    fn skip_gap(&mut self, now: Instant) -> Option<Skipped>;

    /// Whether the store keeps its state on disk: the resequencer then keeps a copy of each
    /// message it sends, so one the inner service refused goes back to the store.
    fn keeps(&self) -> bool {
        false
    }

    /// Makes lasting that number `n` is held (called while it is, right after [`hold`]); the
    /// call that brought it completes once this does. `None` when there is nothing to do.
    ///
    /// [`hold`]: SequenceStore::hold
    fn keep_held(&self, _n: u64) -> Option<Keeping> {
        None
    }

    /// Makes lasting that a released run went out (see [`Released`]); called in the order the
    /// runs were released. `None` when there is nothing to do.
    fn keep_released(&self, _released: &Released<'_>) -> Option<Keeping> {
        None
    }
}

/// How many skipped ranges an [`InMemorySequence`] remembers, for telling late messages from
/// duplicates.
pub const SKIPPED_REMEMBERED: usize = 1024;

/// A resequencer's state in memory.
#[derive(Debug)]
pub struct InMemorySequence {
    next: u64,
    held: BTreeMap<u64, Message>,
    waiting_since: Option<Instant>,
    /// Skipped ranges, first number → last number, the oldest first out.
    skipped: BTreeMap<u64, u64>,
    skipped_order: VecDeque<u64>,
}

impl InMemorySequence {
    /// Nothing held, the next number to release `first`.
    pub fn starting_at(first: u64) -> Self {
        InMemorySequence {
            next: first,
            held: BTreeMap::new(),
            waiting_since: None,
            skipped: BTreeMap::new(),
            skipped_order: VecDeque::new(),
        }
    }

    /// The state a durable store read back: `next`, the messages held (numbers above
    /// `next`), since when the resequencer waits for `next` (`None`: from now, if anything
    /// is held), and the gaps given up (first and last number, oldest first).
    pub fn restored(
        next: u64,
        held: impl IntoIterator<Item = (u64, Message)>,
        waiting_since: Option<Instant>,
        skipped: impl IntoIterator<Item = (u64, u64)>,
    ) -> Self {
        let mut state = InMemorySequence::starting_at(next);
        state.held = held.into_iter().filter(|(n, _)| *n > next).collect();
        if !state.held.is_empty() {
            state.waiting_since = Some(waiting_since.unwrap_or_else(Instant::now));
        }
        for (from, to) in skipped {
            state.remember_skipped(from, to);
        }
        state
    }

    /// The message held as number `n`.
    pub fn message(&self, n: u64) -> Option<&Message> {
        self.held.get(&n)
    }

    /// Takes out the run held from `next` on, moving `next` past it.
    fn take_run(&mut self, out: &mut Vec<Message>) {
        while let Some(msg) = self.held.remove(&self.next) {
            out.push(msg);
            self.next = self.next.saturating_add(1);
        }
    }

    fn waited(&mut self, now: Instant) {
        self.waiting_since = if self.held.is_empty() {
            None
        } else {
            Some(now)
        };
    }

    fn remember_skipped(&mut self, from: u64, to: u64) {
        self.skipped.insert(from, to);
        self.skipped_order.push_back(from);
        if self.skipped_order.len() > SKIPPED_REMEMBERED
            && let Some(old) = self.skipped_order.pop_front()
        {
            self.skipped.remove(&old);
        }
    }
}

impl SequenceStore for InMemorySequence {
    fn next(&self) -> u64 {
        self.next
    }

    fn is_held(&self, n: u64) -> bool {
        self.held.contains_key(&n)
    }

    fn was_skipped(&self, n: u64) -> bool {
        self.skipped
            .range(..=n)
            .next_back()
            .is_some_and(|(_, to)| n <= *to)
    }

    fn held(&self) -> usize {
        self.held.len()
    }

    fn run_after(&self, n: u64) -> usize {
        let mut count = 0;
        let mut k = n;
        while let Some(next) = k.checked_add(1)
            && self.held.contains_key(&next)
        {
            count += 1;
            k = next;
        }
        count
    }

    fn waiting_since(&self) -> Option<Instant> {
        self.waiting_since
    }

    fn hold(&mut self, n: u64, msg: Message, now: Instant) {
        if self.held.is_empty() {
            self.waiting_since = Some(now);
        }
        self.held.insert(n, msg);
    }

    fn release(&mut self, msg: Message, now: Instant) -> Vec<Message> {
        let mut out = vec![msg];
        self.next = self.next.saturating_add(1);
        self.take_run(&mut out);
        self.waited(now);
        out
    }

    fn skip_gap(&mut self, now: Instant) -> Option<Skipped> {
        let (&lowest, _) = self.held.iter().next()?;
        let (from, to) = (self.next, lowest.saturating_sub(1));
        self.remember_skipped(from, to);
        self.next = lowest;
        let mut messages = Vec::new();
        self.take_run(&mut messages);
        self.waited(now);
        Some(Skipped { from, to, messages })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_a_gap_remembers_it_and_releases_the_run_after_it() {
        let now = Instant::now();
        let mut s = InMemorySequence::starting_at(1);
        for n in [4, 5, 7] {
            s.hold(n, Message::new(n.to_string()), now);
        }
        let skipped = s.skip_gap(now).unwrap();
        assert_eq!(
            (skipped.from, skipped.to, skipped.messages.len()),
            (1, 3, 2)
        );
        assert_eq!(s.next(), 6);
        assert!(s.was_skipped(1) && s.was_skipped(3) && !s.was_skipped(4));
        assert_eq!(s.waiting_since(), Some(now), "7 still waits for 6");
        let last = s.skip_gap(now).unwrap();
        assert_eq!((last.from, last.to), (6, 6));
        assert_eq!(s.waiting_since(), None);
        assert!(s.skip_gap(now).is_none());
    }
}
