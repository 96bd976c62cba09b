//! The committer's side of a reopen of the database file ([`slot`](crate::slot)): the journal's
//! rounds the reopened file lacks are replayed into it.
//!
//! A handle that failed is closed without making its last rounds durable (they were committed
//! without an fsync), so the reopened file holds the rounds up to its last checkpoint; a handle
//! closed in good order makes them durable first, without the number of the last (only
//! checkpoints record it). Either way the journal holds every round applied since the last
//! checkpoint, and the reopen replays every one after the number the file records, those it
//! holds already included (applied again, they change nothing), up to the
//! last round applied (or the one whose commit failed, when the reopen is to recover it),
//! without an fsync, so that it needs no room on a full disk; then it tries a checkpoint, which
//! starts the journal over (if that fails, the journal keeps the rounds and the next checkpoint
//! tries again). If the replay fails, the committer is *lagging*: the file must not take a
//! round before it holds the ones memory holds, so the next round reopens and replays first.

use super::Committer;
use crate::StoreError;

impl Committer {
    /// Replaces the broken handle of generation `seen` by a fresh open of the file, then
    /// replays into it the journal's rounds up to `upto` that it lacks.
    pub(super) fn reopen(&mut self, seen: u64, upto: u64) -> Result<(), StoreError> {
        if !self.slot.reopen(seen)? {
            return Ok(()); // reopened by an earlier request already
        }
        tracing::warn!(file = %self.file.display(), "eip-store: reopened the database file after a failure");
        let file = self.file.clone();
        let outcome = crate::quiet::catch(|| self.replay_journal(upto))
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)));
        match &outcome {
            Ok(()) => self.lagging = false,
            Err(error) => {
                tracing::error!(%error, "eip-store: the journal could not be replayed into the reopened file");
                self.lagging = true;
            }
        }
        outcome
    }

    /// Replays the journal's rounds up to `upto` that the file lacks, then tries a checkpoint.
    fn replay_journal(&mut self, upto: u64) -> Result<(), StoreError> {
        let (db, _) = self.slot.get()?;
        let path = self.journal.path().to_path_buf();
        let mut reader = crate::journal::scan::Reader::open(self.journal.file(), &path)?;
        let replayed = crate::journal::replay(&db, &mut reader, upto, false, &self.file, &path)?;
        drop(reader);
        drop(db);
        self.applied = replayed.round;
        self.lagging = false;
        // The file holds every round memory holds: reads find the records kept in memory for
        // them (`publish`) in the file
        for queue in self.registry_snapshot() {
            let head = queue.head.load(std::sync::atomic::Ordering::Acquire);
            queue.unstored.stored_up_to(head);
        }
        if let Err(error) = self.checkpoint_now() {
            tracing::warn!(%error, "eip-store: no checkpoint after the reopen; the journal keeps its rounds");
        }
        Ok(())
    }
}
