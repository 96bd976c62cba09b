//! Checkpoints: a commit that lets the next open after a crash skip redb's full repair.
//!
//! After a crash redb must trust the last durable commit and know which pages are in use. With
//! the one-phase commits the committer makes (one fsync each), it learns both by walking every
//! tree of the file: it verifies every page's checksum and rebuilds the allocator state, so the
//! first open after a crash reads the whole file (seconds for a million records waiting, more
//! from a cold disk). A commit with redb's *quick repair* instead records the allocator state in
//! the file and is made in two phases (the new commit slot is fsynced before the header names it,
//! then the header is fsynced): an open after a crash that finds such a commit last loads the
//! recorded state and reads nothing else. It costs two fsyncs and the allocator's bitmaps, too
//! much for every append, so the committer records one only when it has been idle for
//! [`IDLE_CHECKPOINT`](super::IDLE_CHECKPOINT) after a commit: messages waiting in a quiet
//! store recover at once, and a crash in the middle of traffic still gets the full repair.
//!
//! A checkpoint changes no table, so it changes nothing a reader sees; it is durable, so the
//! acks committed without an fsync before it are durable after it. Whether the last commit was
//! a checkpoint or not, redb's recovery gives the same data (the last durable commit); only the
//! time it takes differs.

use std::sync::atomic::Ordering;

use redb::Durability;

use super::Committer;
use crate::StoreError;

impl Committer {
    /// Records a checkpoint; on failure says so and leaves the next commit to find out whether
    /// the file needs reopening (a checkpoint only saves time, never data).
    pub(super) fn checkpoint(&mut self) {
        let file = self.file.clone();
        let outcome = crate::quiet::catch(|| self.write_checkpoint())
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)));
        self.checkpoint_due = false;
        match outcome {
            Ok(()) => {
                self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
                self.unsynced_commits = 0;
                self.unsynced_acks.clear();
            }
            Err(error) => {
                tracing::warn!(%error, "eip-store: an idle checkpoint failed; the next open after a crash repairs the whole file");
            }
        }
    }

    fn write_checkpoint(&self) -> Result<(), StoreError> {
        let redb_error = |e: redb::Error| StoreError::from_redb(&self.file, e);
        let (db, _) = self.slot.get()?;
        let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| redb_error(e.into()))?;
        txn.set_quick_repair(true);
        txn.commit().map_err(|e| redb_error(e.into()))
    }
}
