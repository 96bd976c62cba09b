//! The committer's side of a reopen of the database file ([`slot`](crate::slot)): the acks a
//! reopen may have lost are deleted again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Committer;
use crate::StoreError;
use crate::queue::QueueState;
use crate::schema::QUEUES;

impl Committer {
    /// Replaces the broken handle of generation `seen` by a fresh open of the file, then
    /// deletes again the acks a reopen may have lost (they were committed without an fsync).
    pub(super) fn reopen(&mut self, seen: u64) -> Result<(), StoreError> {
        if !self.slot.reopen(seen)? {
            return Ok(()); // reopened by an earlier request already
        }
        tracing::warn!(file = %self.file.display(), "eip-store: reopened the database file after a failure");
        let acks = std::mem::take(&mut self.unsynced_acks);
        if acks.is_empty() {
            return Ok(());
        }
        let file = self.file.clone();
        let outcome = crate::quiet::catch(|| self.delete_again(&acks))
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)));
        match outcome {
            Ok(()) => self.unsynced_commits = 0,
            // They come back as redeliveries after the next restart: never a loss
            Err(error) => {
                tracing::error!(%error, acks = acks.len(), "eip-store: acks lost in the reopen could not be committed again")
            }
        }
        Ok(())
    }

    /// Deletes the records of `acks` once more, and rewrites their queues' rows from memory.
    fn delete_again(&self, acks: &[(Arc<QueueState>, u64)]) -> Result<(), StoreError> {
        let redb_error = |e: redb::Error| StoreError::from_redb(&self.file, e);
        let (db, _) = self.slot.get()?;
        let txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        {
            let mut queues = txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
            let mut rows = HashMap::new();
            for (queue, seq) in acks {
                if queue.removed.load(Ordering::Acquire) {
                    continue;
                }
                let mut table = txn
                    .open_table(crate::schema::records(&queue.table))
                    .map_err(|e| redb_error(e.into()))?;
                table.remove(*seq).map_err(|e| redb_error(e.into()))?;
                rows.insert(queue.id, queue.clone());
            }
            for queue in rows.values() {
                let row = (
                    queue.id,
                    queue.head.load(Ordering::Acquire),
                    queue.bytes.load(Ordering::Acquire),
                );
                queues
                    .insert(queue.name.as_str(), row)
                    .map_err(|e| redb_error(e.into()))?;
            }
        }
        txn.commit().map_err(|e| redb_error(e.into()))
    }
}
