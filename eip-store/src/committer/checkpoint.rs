//! Checkpoints: a durable commit of the database, after which the journal starts over.
//!
//! The committer's rounds reach the database without an fsync; what makes them durable is the
//! journal ([`journal`](crate::journal)). A checkpoint makes the database durable on its own: a
//! commit with redb's *quick repair*, which records the allocator state in the file and is made
//! in two phases (the new commit slot is fsynced before the header names it, then the header).
//! The journal's rounds are then all in the durable database, and the journal is reset: a new
//! header, fdatasynced, whose generation starts after the last round.
//!
//! Since every durable commit of the database is such a commit, an open after a crash finds a
//! quick repair commit as the last durable one: it loads the recorded allocator state instead of
//! walking every tree (which reads the whole file), then replays the journal. A checkpoint is
//! made when the journal passes its limit ([`StoreConfig::journal_bytes`](crate::StoreConfig)),
//! when the committer has been idle for [`IDLE_CHECKPOINT`](super::IDLE_CHECKPOINT) after a
//! round, before the first record after a failure, and at close. It changes no table a reader
//! sees; it records the last round applied in the store's metadata.
//!
//! The rounds themselves do not record their number: a durable state of the file is a
//! checkpoint's, which records it, or (a handle closed in good order after a failure, whose
//! engine makes its pending rounds durable) one holding rounds past the number recorded, which
//! the journal holds too. The reopen then replays those rounds again onto the state they led
//! to; every op writes explicit values (a delete, a row, an entry whose old expiry row goes),
//! so that changes nothing (`journal::apply`'s tests replay every suffix of a history again).
//! Writing the number in every round cost a table of its own in every transaction: about 15 000
//! of the 115 000 instructions of a window-1 round, and a third of the table roots its commit
//! writes back.
//!
//! A crash between the commit and the reset leaves a journal whose rounds the database holds:
//! the next open skips them (it replays only rounds after the database's own).

use std::sync::atomic::Ordering;

use redb::Durability;

use super::Committer;
use crate::StoreError;
use crate::schema::{META, ROUND_KEY};

impl Committer {
    /// Records a checkpoint; on failure says so and leaves the next round to find out whether
    /// the file needs reopening (the journal keeps every round until a checkpoint succeeds).
    pub(super) fn checkpoint(&mut self) {
        self.checkpoint_due = false;
        if self.lagging {
            // The file lacks rounds the journal holds (memory may hold them, see `publish`):
            // they are replayed into it first, and the replay makes the checkpoint
            let generation = self.slot.generation();
            if let Err(error) = self.reopen(generation, self.applied) {
                tracing::warn!(%error, "eip-store: no checkpoint; the journal keeps the rounds since the last one");
            }
            return;
        }
        match self.checkpoint_now() {
            Ok(()) => {
                self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                tracing::warn!(%error, "eip-store: a checkpoint failed; the journal keeps the rounds since the last one");
            }
        }
    }

    /// Commits the database durably with quick repair, then starts the journal over.
    pub(super) fn checkpoint_now(&mut self) -> Result<(), StoreError> {
        let file = self.file.clone();
        crate::quiet::catch(|| self.write_checkpoint())
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)))?;
        self.journal.reset(self.round + 1)?;
        self.needs_reset = false;
        self.unsynced_commits = 0;
        Ok(())
    }

    fn write_checkpoint(&self) -> Result<(), StoreError> {
        let redb_error = |e: redb::Error| StoreError::from_redb(&self.file, e);
        let (db, _) = self.slot.get()?;
        let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| redb_error(e.into()))?;
        txn.set_quick_repair(true);
        {
            let mut meta = txn.open_table(META).map_err(|e| redb_error(e.into()))?;
            meta.insert(ROUND_KEY, self.applied)
                .map_err(|e| redb_error(e.into()))?;
        }
        txn.commit().map_err(|e| redb_error(e.into()))
    }
}
