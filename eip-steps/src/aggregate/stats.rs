//! An aggregator's counters.

use std::sync::atomic::{AtomicU64, Ordering};

use super::config::Rule;

/// What an aggregator did so far (shared by its clones and its timer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AggregatorStats {
    /// Messages taken into a group.
    pub held: u64,
    /// Groups completed by a rule and sent on.
    pub completed: u64,
    /// Parts whose sequence number their group held already: ignored.
    pub duplicates: u64,
    /// Messages handed back as invalid.
    pub invalid: u64,
    /// Messages refused because the bound on open groups was reached.
    pub refused: u64,
    /// Groups given up at their timeout.
    pub timed_out: u64,
    /// Groups given up to make room for a new one.
    pub overflowed: u64,
    /// Groups still open when the aggregator was stopped, and handled as its `OnStop` says.
    pub stopped: u64,
    /// Messages of groups dropped at stop (`OnStop::Drop`).
    pub dropped: u64,
    /// Given-up groups released (combined and sent on).
    pub released_incomplete: u64,
    /// Messages handed to the dead letters.
    pub dead_lettered: u64,
    /// Messages no dead letter destination took (logged).
    pub lost: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    held: AtomicU64,
    completed: AtomicU64,
    duplicates: AtomicU64,
    invalid: AtomicU64,
    refused: AtomicU64,
    timed_out: AtomicU64,
    overflowed: AtomicU64,
    stopped: AtomicU64,
    dropped: AtomicU64,
    released_incomplete: AtomicU64,
    dead_lettered: AtomicU64,
    lost: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn held(&self) {
        bump(&self.held, 1);
    }
    pub(crate) fn completed(&self) {
        bump(&self.completed, 1);
    }
    pub(crate) fn duplicate(&self) {
        bump(&self.duplicates, 1);
    }
    pub(crate) fn invalid(&self) {
        bump(&self.invalid, 1);
    }
    pub(crate) fn refused(&self) {
        bump(&self.refused, 1);
    }
    pub(crate) fn given_up(&self, rule: Rule) {
        match rule {
            Rule::Overflow => bump(&self.overflowed, 1),
            Rule::Stop => bump(&self.stopped, 1),
            _ => bump(&self.timed_out, 1),
        }
    }
    pub(crate) fn dropped(&self, messages: usize) {
        bump(&self.stopped, 1);
        bump(&self.dropped, messages as u64);
    }
    pub(crate) fn released(&self) {
        bump(&self.released_incomplete, 1);
    }
    pub(crate) fn dead_lettered(&self, taken: usize, lost: usize) {
        bump(&self.dead_lettered, taken as u64);
        bump(&self.lost, lost as u64);
    }

    pub(crate) fn snapshot(&self) -> AggregatorStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        AggregatorStats {
            held: get(&self.held),
            completed: get(&self.completed),
            duplicates: get(&self.duplicates),
            invalid: get(&self.invalid),
            refused: get(&self.refused),
            timed_out: get(&self.timed_out),
            overflowed: get(&self.overflowed),
            stopped: get(&self.stopped),
            dropped: get(&self.dropped),
            released_incomplete: get(&self.released_incomplete),
            dead_lettered: get(&self.dead_lettered),
            lost: get(&self.lost),
        }
    }
}
