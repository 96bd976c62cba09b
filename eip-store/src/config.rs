//! The store's configuration: plain data, read once at [`DurableStore::open`](crate::DurableStore::open).

use std::time::Duration;

/// How a [`DurableStore`](crate::DurableStore) is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The most bytes of live records (appended and not yet acknowledged) the store holds, or
    /// `None` for no limit. Counts record payloads only: the database file is larger (pages,
    /// B-tree nodes, space freed by acks and not yet reused), and it does not shrink.
    pub max_bytes: Option<u64>,
    /// How long [`QueueLog::append_waiting`](crate::QueueLog::append_waiting) waits for acks to
    /// free room before it fails with [`StoreError::Full`](crate::StoreError::Full). 30 s by default.
    pub full_timeout: Duration,
    /// The memory redb may use to cache pages of the database file. 32 MiB by default.
    pub cache_bytes: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_bytes: None,
            full_timeout: Duration::from_secs(30),
            cache_bytes: 32 << 20,
        }
    }
}
