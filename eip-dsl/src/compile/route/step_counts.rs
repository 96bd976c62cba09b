//! What each step of a route did in a running flow: the messages that went into it, those it
//! passed on (a splitter passes on more than it took, a filter or an aggregator fewer), and the
//! calls that failed. Counted by the live path only ([`Route::run_from`](super::Route)); the
//! dry run counts nothing. A step that wraps the rest of the route (it hands messages on
//! later, as a delay or an aggregator does) counts what it passed on when it hands it on.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// One step's counters.
#[derive(Debug, Default)]
pub(super) struct StepCounters {
    received: AtomicU64,
    sent: AtomicU64,
    failed: AtomicU64,
}

/// What a step did, as counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepStats {
    /// Messages that went into the step.
    #[serde(rename = "in")]
    pub received: u64,
    /// Messages it passed on to what follows it.
    #[serde(rename = "out")]
    pub sent: u64,
    /// Calls of the step that failed.
    pub failed: u64,
}

impl StepCounters {
    pub(super) fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn sent(&self, messages: usize) {
        self.sent.fetch_add(messages as u64, Ordering::Relaxed);
    }

    pub(super) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn stats(&self) -> StepStats {
        StepStats {
            received: self.received.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}
