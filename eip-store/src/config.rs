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
    /// The size of the write-ahead journal past which the committer makes a checkpoint (a
    /// durable commit of the database) and starts the journal over. 64 MiB by default. It
    /// bounds the work of an open after a crash (the journal is replayed) and how far the
    /// database file can grow between checkpoints (pages freed since the last one are not
    /// reused before the next); the journal file itself is about this size.
    pub journal_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_bytes: None,
            full_timeout: Duration::from_secs(30),
            cache_bytes: 32 << 20,
            journal_bytes: 64 << 20,
        }
    }
}
