//! Small rounds journaled ahead of the database: a window of one pays its fdatasync and little
//! else before its answer.
//!
//! A round is written into its database transaction first, its journal record encoded from the
//! ops as they are applied, because the ops need what the database holds: whether an acked
//! record is still there, and its size (the queue's row carries the bytes left). Building the
//! transaction is about half of a window-1 round's work. Yet for a round of one send and the
//! ack of the message before it, memory knows all of it: the acked record is the previous
//! round's, still kept in memory ([`unstored`](crate::unstored) keeps a committed round's records
//! until the next round commits), and an append's sequence number is the queue's head.
//!
//! So a *small* publishable round (at most [`AHEAD_MAX`] jobs, appends, acks and flushes, every
//! ack's record kept in memory) is decided from memory: its ops are encoded straight into its
//! journal record, the record written and fdatasynced, the round published
//! ([`publish`](super::publish): memory, answers, wake-ups), and only then are the same ops,
//! decoded from the record, applied to a write transaction and committed. The file gets
//! exactly what the journal holds, as a replay would give it. If that fails, the round stands
//! as published and the file is reopened and the journal replayed into it, as for any commit
//! that fails after its round was published. Larger rounds take the usual way: their acks are
//! written as range deletes and their appends through one cursor, which a replay of single ops
//! would undo, and they are bound by the disk rather than by the hand-offs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use redb::Durability;

use super::{Changes, Committer, Effect, Failure, Touched, publish};
use crate::StoreError;
use crate::journal::apply::Writer;
use crate::journal::{Journal, Op, RECORD_HEADER};
use crate::queue::QueueState;

/// The most jobs of a round journaled ahead of the database.
pub(super) const AHEAD_MAX: usize = 4;

impl Committer {
    /// Journals, publishes and then commits a small durable round decided from memory (see the
    /// module's documentation); `None` if the round is not such a round.
    pub(super) fn try_ahead(
        &mut self,
        effects: &mut [Effect],
        durable: bool,
    ) -> Option<Result<Changes, Failure>> {
        if !durable || effects.len() > AHEAD_MAX || !publish::publishable(effects) {
            return None;
        }
        let mut acked: Vec<(u32, u64)> = Vec::new();
        for effect in effects.iter() {
            let (queue, ack) = match effect {
                Effect::Ack { queue, seq, .. } => (queue, Some(*seq)),
                Effect::Append { queue, .. } => (queue, None),
                _ => continue,
            };
            if queue.removed.load(Ordering::Acquire) {
                return None;
            }
            if let Some(seq) = ack {
                // Its record is there (kept records leave before an ack of theirs is
                // answered), and memory knows its size; a second ack of it would find nothing
                if queue.unstored.len_of(seq).is_none() || acked.contains(&(queue.id, seq)) {
                    return None;
                }
                acked.push((queue.id, seq));
            }
        }
        Some(self.write_ahead(effects))
    }

    fn write_ahead(&mut self, effects: &mut [Effect]) -> Result<Changes, Failure> {
        let round = self.round + 1;
        Journal::begin(&mut self.record);
        let mut changes = Changes::default();
        for effect in effects.iter_mut() {
            match effect {
                Effect::Ack {
                    queue,
                    seq,
                    deleted,
                } => {
                    let freed = queue.unstored.len_of(*seq).unwrap_or(0);
                    *deleted = true;
                    touch(&mut changes.queues, queue).freed_bytes += freed;
                    let op = Op::Delete {
                        queue: queue.id,
                        seq: *seq,
                    };
                    op.encode(&mut self.record);
                }
                Effect::Append {
                    queue, record, seq, ..
                } => {
                    let t = touch(&mut changes.queues, queue);
                    let op = Op::Append {
                        queue: queue.id,
                        seq: t.head,
                        record,
                    };
                    op.encode(&mut self.record);
                    *seq = Some(t.head);
                    t.head += 1;
                    t.appended += 1;
                    t.added_bytes += record.len() as u64;
                }
                _ => {}
            }
        }
        for t in changes.queues.values() {
            t.row().encode(&mut self.record);
        }
        let body_end = self.record.len();
        self.journal_round(round, true)?;
        self.publish(effects, &mut changes);
        // The database, once the senders are answered
        let file = self.file.clone();
        let applied = crate::quiet::catch(|| self.apply_record(body_end))
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)));
        if let Err(error) = applied {
            return Err(Failure::Committing(error, Box::new(changes)));
        }
        self.pending = None;
        self.applied = round;
        Ok(changes)
    }

    /// Applies the ops of the record just journaled (its body ends at `body_end`) in one write
    /// transaction, committed without an fsync.
    fn apply_record(&self, body_end: usize) -> Result<(), StoreError> {
        let redb_error = |e: redb::Error| StoreError::from_redb(&self.file, e);
        let body = self.record.get(RECORD_HEADER..body_end).unwrap_or_default();
        let ops = crate::journal::op::decode(body).map_err(|error| StoreError::Damaged {
            file: self.journal.path().to_path_buf(),
            reason: format!(
                "the record of round {} does not decode: {error}",
                self.round
            ),
        })?;
        let (db, _) = self.slot.get()?;
        let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        txn.set_durability(Durability::None)
            .map_err(|e| redb_error(e.into()))?;
        {
            let mut writer = Writer::new(&txn, None).map_err(redb_error)?;
            for op in &ops {
                writer.apply(op).map_err(redb_error)?;
            }
        }
        txn.commit().map_err(|e| redb_error(e.into()))
    }
}

/// What the round does to `queue`, from its state in memory on.
fn touch<'a>(queues: &'a mut HashMap<u32, Touched>, queue: &Arc<QueueState>) -> &'a mut Touched {
    queues.entry(queue.id).or_insert_with(|| Touched::of(queue))
}
