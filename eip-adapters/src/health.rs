//! What a bridge's connection has been through, for whoever watches the flow: whether it is
//! connected now, how many times it connected again after a loss or a failed attempt, and the
//! last error with when it happened.
//!
//! A bridge writes its [`ConnectionHealth`] as its connection comes and goes (the same events
//! it logs: connected, lost, an attempt failed); the admin API and `/metrics` read a
//! [`HealthReport`] of it at any time. Clones share one record. Writing is a few atomic
//! stores, and the error's text is formatted only when there is an error: a connection that
//! stays up costs nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A bridge connection's record; see the [module](self).
#[derive(Debug, Clone, Default)]
pub struct ConnectionHealth(Arc<Record>);

#[derive(Debug, Default)]
struct Record {
    connected: AtomicBool,
    /// Connections made after the first.
    reconnects: AtomicU64,
    /// Connections made at all.
    connections: AtomicU64,
    last_error: Mutex<Option<LastError>>,
}

/// The last error a connection met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastError {
    /// What happened, in the bridge's words (passwords hidden, as in its logs).
    pub error: String,
    /// When.
    pub at: SystemTime,
}

/// What a [`ConnectionHealth`] says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReport {
    /// Whether a connection is up.
    pub connected: bool,
    /// How many times it connected again after a loss or a failed attempt.
    pub reconnects: u64,
    /// The last error, if there was one.
    pub last_error: Option<LastError>,
}

impl ConnectionHealth {
    /// A record of a connection not made yet.
    pub fn new() -> Self {
        ConnectionHealth::default()
    }

    /// A connection was made: the first, or a reconnection.
    pub fn connected(&self) {
        let record = &self.0;
        if record.connections.fetch_add(1, Ordering::Relaxed) > 0 {
            record.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        record.connected.store(true, Ordering::Release);
    }

    /// The connection was lost, or an attempt to make one failed, because of `error`.
    pub fn failed(&self, error: &dyn std::fmt::Display) {
        self.0.connected.store(false, Ordering::Release);
        let last = LastError {
            error: error.to_string(),
            at: SystemTime::now(),
        };
        *self.lock() = Some(last);
    }

    /// What it says now.
    pub fn report(&self) -> HealthReport {
        HealthReport {
            connected: self.0.connected.load(Ordering::Acquire),
            reconnects: self.0.reconnects.load(Ordering::Relaxed),
            last_error: self.lock().clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<LastError>> {
        // The record is a value written whole: a writer that panicked left a valid one.
        self.0.last_error.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_not_made_yet_is_down_with_nothing_to_say() {
        let health = ConnectionHealth::new();
        assert_eq!(
            health.report(),
            HealthReport {
                connected: false,
                reconnects: 0,
                last_error: None
            }
        );
    }

    #[test]
    fn only_connections_after_the_first_count_as_reconnects() {
        let health = ConnectionHealth::new();
        health.connected();
        assert_eq!(health.report().reconnects, 0);
        assert!(health.report().connected);
        health.failed(&"connection reset");
        health.connected();
        health.failed(&"connection refused");
        health.connected();
        let report = health.report();
        assert!(report.connected);
        assert_eq!(report.reconnects, 2);
    }

    #[test]
    fn a_failure_takes_the_connection_down_and_is_kept_after_it_comes_back() {
        let health = ConnectionHealth::new();
        health.connected();
        let before = SystemTime::now();
        health.failed(&"broker at 127.0.0.1:5672: connection reset");
        let report = health.report();
        assert!(!report.connected);
        let last = report.last_error.expect("an error");
        assert_eq!(last.error, "broker at 127.0.0.1:5672: connection reset");
        assert!(last.at >= before);
        let clone = health.clone();
        clone.connected();
        let report = health.report();
        assert!(report.connected, "clones share the record");
        assert_eq!(
            report.last_error.map(|l| l.error).as_deref(),
            Some("broker at 127.0.0.1:5672: connection reset")
        );
    }
}
