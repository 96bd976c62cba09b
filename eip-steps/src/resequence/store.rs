//! Where a resequencer keeps the messages it holds back.
//!
//! Each method that changes state is one change a durable store can make atomic with the
//! acknowledgement behind it: `hold` (ack the input and keep it), `release` (the next number
//! arrived: it and the run held after it go out), `skip_gap` (a gap given up: the run after
//! it goes out).

use std::collections::{BTreeMap, VecDeque};

use eip_core::message::Message;
use tokio::time::Instant;

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
}

/// How many skipped ranges an [`InMemorySequence`] remembers, for telling late messages from
/// duplicates.
const SKIPPED_REMEMBERED: usize = 1024;

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
