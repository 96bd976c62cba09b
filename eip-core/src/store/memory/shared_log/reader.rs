//! A subscription's place in the log.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::State;

/// A subscription's place in the log, kept in the log's lock domain: its position and the
/// messages it took straight from the log are read and written only under the log's lock, so a
/// take that finds nothing waiting in the subscription's own queue takes that one lock, not the
/// queue's too. They are atomics only so that they can live in the queue, where looks that do
/// not need them exact (fill levels, statistics) read them without the log's lock.
pub(crate) struct Reader {
    /// The log position read next.
    pub(super) at: AtomicU64,
    /// Messages taken straight from the log ([`SharedLog::take_first`](super::SharedLog::take_first)): each counts as
    /// accepted, taken and delivered by the subscription.
    pub(super) taken: AtomicU64,
    /// Whether a take may go straight to the log: the subscription is attached and nothing
    /// waits in its own queue (put back, or read ahead). Cleared under either lock, set only
    /// under the queue's (by the queue, which knows what it holds).
    pub(super) direct: AtomicBool,
}

impl Reader {
    /// A reader at `at`, taking straight from the log.
    pub(crate) fn new(at: u64) -> Self {
        Reader {
            at: AtomicU64::new(at),
            taken: AtomicU64::new(0),
            direct: AtomicBool::new(true),
        }
    }

    /// The position read next: exact under the log's lock, otherwise a position the reader
    /// has reached (it only grows).
    pub(crate) fn position(&self) -> u64 {
        self.at.load(Ordering::Relaxed)
    }

    /// The messages taken straight from the log so far.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Says whether a take may go straight to the log (see `direct`).
    pub(crate) fn set_direct(&self, direct: bool) {
        self.direct.store(direct, Ordering::Relaxed);
    }

    /// Moves the position to `to`. Only under the log's lock, which the state borrowed
    /// stands for: the one writer at a time makes a load and a store enough.
    #[inline(always)]
    pub(super) fn advance(&self, _locked: &State, to: u64) {
        self.at.store(to, Ordering::Relaxed);
    }

    /// Counts `n` more messages taken straight from the log; under its lock, as `advance`.
    #[inline(always)]
    pub(super) fn count_taken(&self, _locked: &State, n: u64) {
        self.taken.store(self.taken() + n, Ordering::Relaxed);
    }
}
