//! An atomic batch: acks, appends, puts and removes of one store, committed in ONE redb commit
//! (see [`Batch`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::committer::Job;
use crate::queue::{QueueLog, QueueState};
use crate::store::Shared;
use crate::table::{KeyTable, TableState, entry};
use crate::ticket::{BatchTicket, Reply, Ticket};
use crate::{StoreError, frame, quiet, schema};

/// One effect of a batch.
pub(crate) enum Op {
    Ack {
        queue: Arc<QueueState>,
        seq: u64,
        /// Whether this batch took the ack out of the queue's length (it was not acked yet).
        counted: bool,
        /// Set by the write: whether the record was there to delete.
        deleted: bool,
    },
    Append {
        queue: Arc<QueueState>,
        record: Bytes,
    },
    Put {
        table: Arc<TableState>,
        key: Bytes,
        value: Bytes,
        expires_at: u64,
    },
    Remove {
        table: Arc<TableState>,
        key: Bytes,
    },
}

impl Op {
    /// The bytes it adds to the store.
    fn bytes(&self) -> u64 {
        match self {
            Op::Append { record, .. } => record.len() as u64,
            Op::Put { key, value, .. } => (key.len() + value.len()) as u64,
            Op::Ack { .. } | Op::Remove { .. } => 0,
        }
    }

    /// The queue it writes to, if any.
    pub(crate) fn queue(&self) -> Option<&Arc<QueueState>> {
        match self {
            Op::Ack { queue, .. } | Op::Append { queue, .. } => Some(queue),
            Op::Put { .. } | Op::Remove { .. } => None,
        }
    }
}

/// Undoes in memory what committing an ack did: for a batch that failed or was refused.
pub(crate) fn undo_acks(ops: &[Op]) {
    for op in ops {
        if let Op::Ack {
            queue,
            seq,
            counted: true,
            ..
        } = op
        {
            queue.give_back_ack(*seq);
        }
    }
}

/// Effects on queues and key tables of one store, to be committed together. Built by
/// [`DurableStore::batch`](crate::DurableStore::batch).
///
/// After a crash either every effect of a committed batch is in the file or none is: redb's
/// commit is atomic, and a batch is never split between two commits. The batch rides the
/// committer's group commit like an append: several batches and plain appends may share one
/// commit, each batch still all or nothing. [`Batch::commit`] resolves, with the sequence numbers
/// of its appends, once that commit is fsynced; so an ack in a batch is durable when the batch
/// resolves (unlike [`QueueLog::ack`], which is lazy).
///
/// This is what a step needs that moves a message without losing or doubling it: an aggregator
/// acks its input and appends to (or puts into) a group in one commit, an idempotent receiver
/// records the key it has seen in the commit that acks the message.
///
/// - **Bytes.** The batch reserves the bytes of its appends and puts when it is committed; if
///   what the store holds once it is committed (the records its acks delete no longer counted)
///   would pass [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes), it fails whole with
///   [`StoreError::Full`] (or [`StoreError::RecordTooLarge`] if it alone passes the limit),
///   before anything is written. So a step that moves a message from a full store (ack it,
///   append it elsewhere) is not stalled by the limit; until the commit the count may pass the
///   limit by the bytes being deleted.
/// - **Acks** take effect in memory when the batch is committed, as [`QueueLog::ack`] does (the
///   record is no longer read, nor counted); an ack of a record not yet committed is ignored.
///   If the batch fails, they are undone.
/// - **Failure** is whole: a queue of the batch removed before its commit, a handle of another
///   store ([`StoreError::OtherStore`]), a failed commit: nothing of the batch is written.
#[must_use = "a batch does nothing until it is committed"]
pub struct Batch {
    shared: Arc<Shared>,
    ops: Vec<Op>,
    /// A handle of another store was added: the batch fails whole.
    refused: Option<StoreError>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("dir", &self.shared.dir)
            .field("effects", &self.ops.len())
            .finish()
    }
}

impl Batch {
    pub(crate) fn new(shared: Arc<Shared>) -> Batch {
        Batch {
            shared,
            ops: Vec::new(),
            refused: None,
        }
    }

    /// Whether a handle holding `other` belongs to this batch's store; notes the refusal if not.
    fn same_store(&mut self, other: &Arc<Shared>) -> bool {
        if Arc::ptr_eq(&self.shared, other) {
            return true;
        }
        self.refused.get_or_insert_with(|| StoreError::OtherStore {
            dir: self.shared.dir.clone(),
            other: other.dir.clone(),
        });
        false
    }

    /// Acknowledges the record `seq` of `queue`, durably once the batch resolves.
    pub fn ack(mut self, queue: &QueueLog, seq: u64) -> Batch {
        if self.same_store(&queue.shared) {
            self.ops.push(Op::Ack {
                queue: queue.state.clone(),
                seq,
                counted: false,
                deleted: false,
            });
        }
        self
    }

    /// Appends `record` to `queue`; its sequence number is in the batch's answer.
    pub fn append(mut self, queue: &QueueLog, record: Bytes) -> Batch {
        if self.same_store(&queue.shared) {
            self.ops.push(Op::Append {
                queue: queue.state.clone(),
                record,
            });
        }
        self
    }

    /// Stores `value` under `key` in `table`, as [`KeyTable::put`] does.
    pub fn put(
        mut self,
        table: &KeyTable,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        expires_at: Option<u64>,
    ) -> Batch {
        if self.same_store(&table.shared) {
            self.ops.push(Op::Put {
                table: table.state.clone(),
                key: key.into(),
                value: value.into(),
                expires_at: expires_at.unwrap_or(entry::NEVER),
            });
        }
        self
    }

    /// Deletes the entry under `key` of `table`, as [`KeyTable::remove`] does.
    pub fn remove(mut self, table: &KeyTable, key: impl Into<Bytes>) -> Batch {
        if self.same_store(&table.shared) {
            self.ops.push(Op::Remove {
                table: table.state.clone(),
                key: key.into(),
            });
        }
        self
    }

    /// Hands the batch to the committer; resolves with the sequence numbers of its appends, in
    /// the order they were added, once the one commit holding all of it is fsynced.
    pub fn commit(self) -> BatchTicket {
        self.submit(|seqs| seqs)
    }

    /// Hands the batch to the committer, its answer mapped by `answer`.
    pub(crate) fn submit<T: Send + 'static>(
        self,
        answer: impl FnOnce(Vec<u64>) -> T + Send + 'static,
    ) -> Ticket<T> {
        let dir = self.shared.dir.clone();
        let (reply, receiver) = oneshot::channel();
        let reply: Reply = Box::new(move |outcome| {
            let _ = reply.send(outcome.map(answer));
        });
        match self.hand_over(reply) {
            Ok(()) => Ticket::waiting(receiver, dir),
            Err(error) => Ticket::refused(error, dir),
        }
    }

    /// Reserves the batch's bytes, takes its acks into account, and sends it to the committer.
    fn hand_over(mut self, reply: Reply) -> Result<(), StoreError> {
        if let Some(error) = self.refused.take() {
            return Err(error);
        }
        let shared = self.shared.clone();
        if let Some(queue) = self
            .ops
            .iter()
            .filter_map(Op::queue)
            .find(|q| q.removed.load(Ordering::Acquire))
        {
            return Err(StoreError::QueueRemoved {
                dir: shared.dir.clone(),
                name: queue.name.clone(),
            });
        }
        let reserved = self.ops.iter().map(Op::bytes).fold(0, u64::saturating_add);
        match shared.space.reserve(reserved, &shared.dir) {
            // Its acks free room in the same commit: a move from a full queue must not stall
            Err(StoreError::Full { .. } | StoreError::RecordTooLarge { .. })
                if self.ops.iter().any(|op| matches!(op, Op::Ack { .. })) =>
            {
                let freeing = self.acked_bytes();
                shared
                    .space
                    .reserve_freeing(reserved, freeing, &shared.dir)?;
            }
            other => other?,
        }
        self.take_acks();
        let job = Job::Batch {
            ops: self.ops,
            reserved,
            reply,
        };
        shared.send(job).map_err(|job| {
            if let Job::Batch { ops, reserved, .. } = job {
                undo_acks(&ops);
                shared.space.release(reserved);
            }
            shared.closed_error()
        })
    }

    /// The payload bytes of the records this batch acks, as the file holds them now (a record
    /// that can not be read counts nothing).
    fn acked_bytes(&self) -> u64 {
        let file = &self.shared.file;
        // Those in memory first, before the read transaction begins (see `unstored`)
        let kept: Vec<Option<u64>> = self
            .ops
            .iter()
            .map(|op| match op {
                Op::Ack { queue, seq, .. } => queue.unstored.len_of(*seq),
                _ => None,
            })
            .collect();
        let in_memory = kept.iter().flatten().copied().fold(0, u64::saturating_add);
        let sizes = self.shared.read(|txn| {
            let mut sum = in_memory;
            for (op, kept) in self.ops.iter().zip(&kept) {
                let Op::Ack { queue, seq, .. } = op else {
                    continue;
                };
                if kept.is_some() {
                    continue;
                }
                let size = quiet::catch(|| -> Result<Option<u64>, redb::Error> {
                    let records = txn.open_table(schema::records(&queue.table))?;
                    Ok(records.get(*seq)?.map(|v| frame::payload_len(v.value())))
                });
                if let Ok(Ok(Some(size))) = size {
                    sum = sum.saturating_add(size);
                }
            }
            Ok(sum)
        });
        sizes.unwrap_or_else(|error| {
            tracing::debug!(%error, file = %file.display(), "sizes of a batch's acked records");
            0
        })
    }

    /// Does in memory what [`QueueLog::ack`] does for each ack; drops those of records not yet
    /// committed.
    fn take_acks(&mut self) {
        self.ops.retain_mut(|op| match op {
            Op::Ack {
                queue,
                seq,
                counted,
                ..
            } => {
                if *seq >= queue.head.load(Ordering::Acquire) {
                    return false;
                }
                *counted = queue.take_ack(*seq);
                true
            }
            _ => true,
        });
    }
}
