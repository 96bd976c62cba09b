//! The byte accounting behind [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes), and the
//! wake-ups of those waiting for room or for the store to close.
//!
//! An append reserves its record's length before it is handed to the committer; the committer
//! releases it when the ack that deletes the record is committed (or when the append fails, or
//! when the queue is removed). So `used` counts every record accepted and not yet deleted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::path::Path;

use tokio::sync::Notify;

use crate::StoreError;

/// Live record bytes against the limit, and the store's closed flag.
#[derive(Debug)]
pub(crate) struct Space {
    used: AtomicU64,
    max: Option<u64>,
    closed: AtomicBool,
    /// Woken whenever bytes are released or the store closes.
    pub(crate) freed: Notify,
}

impl Space {
    pub(crate) fn new(max: Option<u64>, used: u64) -> Space {
        Space {
            used: AtomicU64::new(used),
            max,
            closed: AtomicBool::new(false),
            freed: Notify::new(),
        }
    }

    pub(crate) fn max(&self) -> Option<u64> {
        self.max
    }

    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Reserves `len` bytes unless that would pass the limit.
    pub(crate) fn try_reserve(&self, len: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let after = used.checked_add(len)?;
                match self.max {
                    Some(max) if after > max => None,
                    _ => Some(after),
                }
            })
            .is_ok()
    }

    /// Reserves `len` bytes for a write to the store in `dir`, or says why it can not be:
    /// [`StoreError::RecordTooLarge`] if `len` alone passes the limit, [`StoreError::Full`] if
    /// it would pass it now.
    pub(crate) fn reserve(&self, len: u64, dir: &Path) -> Result<(), StoreError> {
        self.reserve_freeing(len, 0, dir)
    }

    /// Like [`reserve`](Self::reserve), for a write whose commit also frees `freeing` bytes (a
    /// batch's acks): it fits if what the store holds once it is committed fits. Until then the
    /// count may pass the limit by at most `freeing`.
    pub(crate) fn reserve_freeing(
        &self,
        len: u64,
        freeing: u64,
        dir: &Path,
    ) -> Result<(), StoreError> {
        let Some(max_bytes) = self.max else {
            self.try_reserve(len);
            return Ok(());
        };
        if len.saturating_sub(freeing) > max_bytes {
            return Err(StoreError::RecordTooLarge {
                dir: dir.to_path_buf(),
                len,
                max_bytes,
            });
        }
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let after = used.checked_add(len)?;
                (after.saturating_sub(freeing) <= max_bytes).then_some(after)
            })
            .map(drop)
            .map_err(|_| StoreError::Full {
                dir: dir.to_path_buf(),
                max_bytes,
            })
    }

    /// Gives back `len` bytes and wakes whoever waits for room.
    pub(crate) fn release(&self, len: u64) {
        if len == 0 {
            return;
        }
        // Saturating: the accounting never wraps, whatever a damaged file claimed at open
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(len))
            });
        self.freed.notify_waiters();
    }

    /// Whether the store holds at least `max_bytes`.
    pub(crate) fn is_full(&self) -> bool {
        self.max.is_some_and(|max| self.used() >= max)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.freed.notify_waiters();
    }
}
