//! What a job does to a round while it is written, and what the write found out about it.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::Job;
use crate::StoreError;
use crate::batch::Op;
use crate::queue::QueueState;
use crate::table::TableState;
use crate::ticket::Reply;

/// A job while its round is written: the job plus what the write found out.
pub(super) enum Effect {
    Append {
        queue: Arc<QueueState>,
        record: Bytes,
        /// Taken when the append is answered before its round's commit (`publish`).
        reply: Option<oneshot::Sender<Result<u64, StoreError>>>,
        /// Given by the write; `None` if the queue was removed first.
        seq: Option<u64>,
    },
    Ack {
        queue: Arc<QueueState>,
        seq: u64,
        /// Whether the record was still there to delete.
        deleted: bool,
    },
    SetAside {
        queue: Arc<QueueState>,
        seq: u64,
        bytes: Bytes,
        reason: String,
        remove: bool,
        /// Set when deleting it failed once: the record stays in its table, and is passed over.
        keep: bool,
        /// Whether the record was still there to delete.
        deleted: bool,
    },
    Declare {
        name: String,
        reply: SyncSender<Result<Arc<QueueState>, StoreError>>,
        state: Option<Arc<QueueState>>,
        created: bool,
    },
    Remove {
        name: String,
        reply: oneshot::Sender<Result<u64, StoreError>>,
        removed: Option<(Arc<QueueState>, u64)>,
    },
    Flush {
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    Batch {
        ops: Vec<Op>,
        reserved: u64,
        reply: Reply,
        /// Given by the write: the sequence numbers of its appends.
        seqs: Vec<u64>,
        /// Set by the write if a queue of the batch was removed first: nothing was written.
        refused: Option<String>,
    },
    DeclareTable {
        name: String,
        reply: SyncSender<Result<Arc<TableState>, StoreError>>,
        state: Option<Arc<TableState>>,
        created: bool,
    },
    Expire {
        table: Arc<TableState>,
        now_ms: u64,
        reply: oneshot::Sender<Result<u64, StoreError>>,
        /// The expiry index rows found expired before the write (`gather_expired`).
        candidates: Vec<(u64, Vec<u8>)>,
    },
}

/// A reader's request to reopen the file, taken out of its round.
pub(super) struct ReopenRequest {
    pub(super) seen: u64,
    pub(super) reply: SyncSender<Result<(), StoreError>>,
}

impl Effect {
    /// The effect a job has on a round, or the reopen it asks for.
    pub(super) fn of(job: Job) -> Result<Effect, ReopenRequest> {
        Ok(match job {
            Job::Append {
                queue,
                record,
                reply,
            } => Effect::Append {
                queue,
                record,
                reply: Some(reply),
                seq: None,
            },
            Job::Ack { queue, seq } => Effect::Ack {
                queue,
                seq,
                deleted: false,
            },
            Job::SetAside {
                queue,
                seq,
                bytes,
                reason,
                remove,
            } => Effect::SetAside {
                queue,
                seq,
                bytes,
                reason,
                remove,
                keep: false,
                deleted: false,
            },
            Job::Declare { name, reply } => Effect::Declare {
                name,
                reply,
                state: None,
                created: false,
            },
            Job::Remove { name, reply } => Effect::Remove {
                name,
                reply,
                removed: None,
            },
            Job::Flush { reply } => Effect::Flush { reply },
            Job::Batch {
                ops,
                reserved,
                reply,
            } => Effect::Batch {
                ops,
                reserved,
                reply,
                seqs: Vec::new(),
                refused: None,
            },
            Job::DeclareTable { name, reply } => Effect::DeclareTable {
                name,
                reply,
                state: None,
                created: false,
            },
            Job::Expire {
                table,
                now_ms,
                reply,
            } => Effect::Expire {
                table,
                now_ms,
                reply,
                candidates: Vec::new(),
            },
            Job::Reopen { seen, reply } => return Err(ReopenRequest { seen, reply }),
        })
    }

    /// Forgets what a failed write found out, for a second try on a reopened file. A damaged
    /// record whose deletion was part of the failed round is now kept in its table: deleting
    /// it is what most likely failed (its page is damaged beyond its own bytes).
    pub(super) fn prepare_retry(&mut self) {
        match self {
            Effect::Append { seq, .. } => *seq = None,
            Effect::Ack { deleted, .. } => *deleted = false,
            Effect::SetAside {
                remove,
                keep,
                deleted,
                ..
            } => {
                *keep = *remove;
                *deleted = false;
            }
            Effect::Declare { state, created, .. } => {
                *state = None;
                *created = false;
            }
            Effect::DeclareTable { state, created, .. } => {
                *state = None;
                *created = false;
            }
            Effect::Batch {
                ops, seqs, refused, ..
            } => {
                seqs.clear();
                *refused = None;
                for op in ops {
                    if let Op::Ack { deleted, .. } = op {
                        *deleted = false;
                    }
                }
            }
            Effect::Expire { .. } => {}
            Effect::Remove { removed, .. } => *removed = None,
            Effect::Flush { .. } => {}
        }
    }
}
