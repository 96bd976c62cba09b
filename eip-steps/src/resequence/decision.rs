//! The resequencer's configuration and its decision, a pure function of the state and a number.

use std::fmt;
use std::time::Duration;

use crate::aggregate::{Key, SEQUENCE_NUMBER};

use super::store::SequenceStore;

/// A resequencer's configuration.
#[derive(Debug, Clone)]
pub struct ResequencerConfig {
    pub(crate) sequence: Key,
    pub(crate) first: u64,
    pub(crate) gap_timeout: Option<Duration>,
    pub(crate) max_held: usize,
}

impl Default for ResequencerConfig {
    fn default() -> Self {
        ResequencerConfig {
            sequence: Key::header(SEQUENCE_NUMBER),
            first: 1,
            gap_timeout: None,
            max_held: 10_000,
        }
    }
}

impl ResequencerConfig {
    /// The `sequence-number` header, starting at 1, no gap timeout, at most 10 000 held.
    pub fn new() -> Self {
        ResequencerConfig::default()
    }

    /// Reads the sequence number from `key` (a whole number from 1).
    #[must_use]
    pub fn sequence_by(mut self, key: Key) -> Self {
        self.sequence = key;
        self
    }

    /// The first number to release (1 by default; sequence numbers start at 1, so 0 counts
    /// as 1).
    #[must_use]
    pub fn starting_at(mut self, first: u64) -> Self {
        self.first = first.max(1);
        self
    }

    /// Gives up waiting for a missing number after `timeout`: what is held goes out in order.
    #[must_use]
    pub fn gap_timeout(mut self, timeout: Duration) -> Self {
        self.gap_timeout = Some(timeout);
        self
    }

    /// Holds at most `max` messages (at least 1): beyond, the first gap is given up.
    #[must_use]
    pub fn max_held(mut self, max: usize) -> Self {
        self.max_held = max.max(1);
        self
    }
}

/// What a resequencer does, or would do, with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The next number: it goes out with `count - 1` held after it.
    Releases {
        /// Its number.
        number: u64,
        /// How many go out, it included.
        count: usize,
    },
    /// Held until the numbers before it arrive.
    Held {
        /// Its number.
        number: u64,
        /// The number waited for.
        waiting_for: u64,
    },
    /// Held, and holding it passes the bound: the first gap is given up.
    Overflows {
        /// Its number.
        number: u64,
        /// The number waited for, now skipped.
        waiting_for: u64,
    },
    /// A number released already, or held already: dropped (counted).
    Duplicate {
        /// Its number.
        number: u64,
    },
    /// A number skipped by a gap given up, arriving after all: it goes out at once, out of
    /// order (counted), rather than be lost.
    Late {
        /// Its number.
        number: u64,
    },
    /// No sequence number could be read.
    Invalid {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Releases { number, count } => {
                write!(
                    f,
                    "releases {number} and {} held after it",
                    count.saturating_sub(1)
                )
            }
            Decision::Held {
                number,
                waiting_for,
            } => {
                write!(f, "holds {number}, waiting for {waiting_for}")
            }
            Decision::Overflows {
                number,
                waiting_for,
            } => write!(f, "holds {number}; too many held: skips {waiting_for}"),
            Decision::Duplicate { number } => write!(f, "duplicate of {number}: dropped"),
            Decision::Late { number } => {
                write!(f, "{number} arrives after its gap was skipped: sent on")
            }
            Decision::Invalid { reason } => write!(f, "invalid: {reason}"),
        }
    }
}

/// What to do with number `n`, given the state.
pub(crate) fn decide(config: &ResequencerConfig, store: &dyn SequenceStore, n: u64) -> Decision {
    let next = store.next();
    if n < next {
        return if store.was_skipped(n) {
            Decision::Late { number: n }
        } else {
            Decision::Duplicate { number: n }
        };
    }
    if store.is_held(n) {
        return Decision::Duplicate { number: n };
    }
    if n == next {
        return Decision::Releases {
            number: n,
            count: 1 + store.run_after(n),
        };
    }
    if store.held() >= config.max_held {
        return Decision::Overflows {
            number: n,
            waiting_for: next,
        };
    }
    Decision::Held {
        number: n,
        waiting_for: next,
    }
}
