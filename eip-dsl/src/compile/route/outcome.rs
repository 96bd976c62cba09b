//! How a route's calls ended: handled, or failed (and then redelivered, dead-lettered or
//! diverted by its consumer), with the last failure's text and time, for those who watch a
//! running flow (the admin server, its metrics).
//!
//! Counting is two relaxed atomic adds per call; the last failure is kept under a lock taken
//! only when a call fails.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::RouteFailure;

/// A route's last failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastError {
    /// What failed, as the route's consumer logs it.
    pub error: String,
    /// When.
    pub at: SystemTime,
}

/// The outcomes of a route's calls since the flow was compiled.
#[derive(Debug, Default)]
pub(super) struct Outcomes {
    handled: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<LastError>>,
}

impl Outcomes {
    /// Counts how a call ended.
    pub(super) fn record(&self, done: &Result<(), RouteFailure>) {
        match done {
            Ok(()) => {
                self.handled.fetch_add(1, Ordering::Relaxed);
            }
            Err(failure) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let last = LastError {
                    error: failure.to_string(),
                    at: SystemTime::now(),
                };
                // A lock poisoned by a panic elsewhere still holds a usable value.
                *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(last);
            }
        }
    }

    /// Calls that completed.
    pub(super) fn handled(&self) -> u64 {
        self.handled.load(Ordering::Relaxed)
    }

    /// Calls that failed.
    pub(super) fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// The last failure, if a call failed.
    pub(super) fn last_error(&self) -> Option<LastError> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
