//! A named FIFO queue of records in the store, and the ticket of one append.
//!
//! Each record gets a sequence number when the committer writes it: numbers are per queue, start
//! at 0, only grow, and survive restarts (even once every record is acknowledged). The record with
//! number `s` is committed once [`QueueLog::head`] is greater than `s`.
//!
//! - [`QueueLog::append`] hands the record to the committer at once and returns an
//!   [`AppendTicket`], which resolves with the sequence number once the commit holding the record
//!   is on disk (fsynced). Dropping the ticket does not withdraw the record.
//! - [`QueueLog::read`] returns committed records not yet acknowledged, in sequence order; it does
//!   not remove them. Consumers acknowledge with [`QueueLog::ack`] once they are done with a record.
//! - [`QueueLog::ack`] is lazy: the deletion rides with the next commit, or a timer commits it a
//!   few milliseconds later. It is never waited on. A crash can lose an ack that was not yet
//!   committed: the record is then read again after the restart (a redelivery, never a loss).
//!
//! In memory a queue keeps only its head, its length, its live bytes and the acks not yet
//! committed; the records stay on disk.

use std::collections::HashSet;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use redb::{ReadableDatabase, TableError};
use tokio::sync::{Notify, oneshot};

use crate::StoreError;
use crate::committer::Job;
use crate::frame;
use crate::schema;
use crate::store::Shared;

/// The in-memory state of one queue, shared by its handles and the committer.
#[derive(Debug)]
pub(crate) struct QueueState {
    pub(crate) name: String,
    pub(crate) id: u32,
    pub(crate) table: String,
    /// The next sequence number to commit; only the committer advances it.
    pub(crate) head: AtomicU64,
    /// Committed records minus acks (an ack counts as soon as [`QueueLog::ack`] is called).
    pub(crate) len: AtomicU64,
    /// Bytes of the committed records not yet deleted.
    pub(crate) bytes: AtomicU64,
    /// Acks handed to the committer and not yet committed: [`QueueLog::read`] skips them.
    pub(crate) acked: Mutex<HashSet<u64>>,
    pub(crate) removed: AtomicBool,
    /// Woken whenever the head advances, the queue is removed or the store closes.
    pub(crate) advanced: Notify,
}

impl QueueState {
    pub(crate) fn new(name: String, id: u32, head: u64, len: u64, bytes: u64) -> QueueState {
        QueueState {
            table: schema::records_table_name(id),
            name,
            id,
            head: AtomicU64::new(head),
            len: AtomicU64::new(len),
            bytes: AtomicU64::new(bytes),
            acked: Mutex::new(HashSet::new()),
            removed: AtomicBool::new(false),
            advanced: Notify::new(),
        }
    }

    pub(crate) fn acked(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        // The set stays consistent whatever panicked while holding it
        self.acked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A handle on one named queue of a [`DurableStore`](crate::DurableStore). Cheap to clone; keeps
/// the store open.
#[derive(Clone)]
pub struct QueueLog {
    pub(crate) state: Arc<QueueState>,
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for QueueLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueLog")
            .field("name", &self.state.name)
            .field("head", &self.head())
            .field("len", &self.len())
            .finish()
    }
}

impl QueueLog {
    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Hands `record` to the committer now (not at the ticket's first poll), so the record is
    /// written even if the ticket is dropped. The ticket resolves with the record's sequence
    /// number once the commit holding it is on disk.
    ///
    /// Never waits: fails at once with [`StoreError::Full`] if the record would pass
    /// [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes) (see
    /// [`append_waiting`](Self::append_waiting) to wait for room), with
    /// [`StoreError::RecordTooLarge`] if it is larger than the limit itself, and with
    /// [`StoreError::QueueRemoved`] if the queue was removed.
    pub fn append(&self, record: Bytes) -> Result<AppendTicket, StoreError> {
        let shared = &self.shared;
        if self.state.removed.load(Ordering::Acquire) {
            return Err(self.removed_error());
        }
        let len = record.len() as u64;
        if let Some(max_bytes) = shared.space.max() {
            if len > max_bytes {
                return Err(StoreError::RecordTooLarge {
                    dir: shared.dir.clone(),
                    len,
                    max_bytes,
                });
            }
            if !shared.space.try_reserve(len) {
                return Err(StoreError::Full {
                    dir: shared.dir.clone(),
                    max_bytes,
                });
            }
        } else {
            shared.space.try_reserve(len);
        }
        let (reply, receiver) = oneshot::channel();
        let job = Job::Append {
            queue: self.state.clone(),
            record,
            reply,
        };
        if shared.send(job).is_err() {
            shared.space.release(len);
            return Err(shared.closed_error());
        }
        Ok(AppendTicket {
            receiver,
            dir: shared.dir.clone(),
        })
    }

    /// Appends `record` like [`append`](Self::append), but when the store is full waits for acks
    /// to free room, up to [`StoreConfig::full_timeout`](crate::StoreConfig::full_timeout), then
    /// fails with [`StoreError::Full`] naming the directory and the limit. Resolves with the
    /// record's sequence number once it is on disk. This is a durable channel's send:
    /// backpressure, then a clear error; a record is either accepted and kept, or refused.
    ///
    /// Waiting uses tokio's timer: call it inside a runtime with the time driver enabled.
    pub async fn append_waiting(&self, record: Bytes) -> Result<u64, StoreError> {
        let timeout = self.shared.config.full_timeout;
        let ticket = match self.append(record.clone()) {
            Err(StoreError::Full { .. }) if !timeout.is_zero() => {
                let deadline = tokio::time::Instant::now() + timeout;
                loop {
                    let freed = self.shared.space.freed.notified();
                    let mut freed = std::pin::pin!(freed);
                    freed.as_mut().enable();
                    match self.append(record.clone()) {
                        Err(StoreError::Full { .. }) if !self.shared.space.is_closed() => {}
                        other => break other?,
                    }
                    if tokio::time::timeout_at(deadline, freed).await.is_err() {
                        break self.append(record)?;
                    }
                }
            }
            other => other?,
        };
        ticket.await
    }

    /// Acknowledges the record `seq`: it is no longer read, counts no longer in
    /// [`len`](Self::len), and is deleted with the next commit (or a few milliseconds later by
    /// the committer's timer). Never waits. Acks of records not committed, or already
    /// acknowledged, are ignored. A crash before the deletion is committed brings the record back.
    pub fn ack(&self, seq: u64) {
        let state = &self.state;
        if seq >= state.head.load(Ordering::Acquire) || state.removed.load(Ordering::Acquire) {
            return;
        }
        if !state.acked().insert(seq) {
            return;
        }
        // Counted now; the committer gives it back if the record turns out to be gone already
        let _ = state
            .len
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |len| {
                Some(len.saturating_sub(1))
            });
        let job = Job::Ack {
            queue: state.clone(),
            seq,
        };
        if self.shared.send(job).is_err() {
            state.acked().remove(&seq);
            state.len.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The committed records not yet acknowledged with a sequence number of at least `from`, in
    /// ascending order, at most `max` of them. Reads do not remove records.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<(u64, Bytes)>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let file = &self.shared.file;
        // A damaged page may make redb panic rather than fail: that is an error here, not a crash
        catch_unwind(AssertUnwindSafe(|| self.read_committed(from, max)))
            .unwrap_or_else(|panic| Err(StoreError::from_panic(file, panic.as_ref())))
    }

    fn read_committed(&self, from: u64, max: usize) -> Result<Vec<(u64, Bytes)>, StoreError> {
        let file = &self.shared.file;
        let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
        let acked = self.state.acked().clone();
        let txn = self
            .shared
            .database()?
            .begin_read()
            .map_err(|e| redb_error(e.into()))?;
        let table = match txn.open_table(schema::records(&self.state.table)) {
            Ok(table) => table,
            // Created by the commit that declared the queue; absent only once removed
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(redb_error(e.into())),
        };
        let mut records = Vec::with_capacity(max.min(1024));
        for entry in table.range(from..).map_err(|e| redb_error(e.into()))? {
            let (seq, record) = entry.map_err(|e| redb_error(e.into()))?;
            let seq = seq.value();
            if acked.contains(&seq) {
                continue;
            }
            let payload = frame::decode(self.state.id, seq, record.value()).ok_or_else(|| {
                StoreError::Damaged {
                    file: file.clone(),
                    reason: format!(
                        "record {seq} of queue {:?} fails its checksum",
                        self.state.name
                    ),
                }
            })?;
            records.push((seq, Bytes::copy_from_slice(payload)));
            if records.len() == max {
                break;
            }
        }
        Ok(records)
    }

    /// How many records are committed and not yet acknowledged (an [`ack`](Self::ack) counts at
    /// once, before its deletion is committed).
    pub fn len(&self) -> u64 {
        self.state.len.load(Ordering::Acquire)
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sequence number the next committed record of this queue will have.
    pub fn head(&self) -> u64 {
        self.state.head.load(Ordering::Acquire)
    }

    /// Waits until the record `seq` (or a later one) is committed, that is until
    /// [`head`](Self::head) is greater than `seq`; or until the queue is removed or the store
    /// closes.
    pub async fn committed(&self, seq: u64) {
        loop {
            let advanced = self.state.advanced.notified();
            let mut advanced = std::pin::pin!(advanced);
            advanced.as_mut().enable();
            if self.head() > seq
                || self.state.removed.load(Ordering::Acquire)
                || self.shared.space.is_closed()
            {
                return;
            }
            advanced.await;
        }
    }

    /// Waits until the store holds less than
    /// [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes) (at once if there is no limit),
    /// or closes.
    pub async fn writable(&self) {
        let space = &self.shared.space;
        loop {
            let freed = space.freed.notified();
            let mut freed = std::pin::pin!(freed);
            freed.as_mut().enable();
            if !space.is_full() || space.is_closed() {
                return;
            }
            freed.await;
        }
    }

    fn removed_error(&self) -> StoreError {
        StoreError::QueueRemoved {
            dir: self.shared.dir.clone(),
            name: self.state.name.clone(),
        }
    }
}

/// The pending result of [`QueueLog::append`]: resolves with the record's sequence number once
/// the commit holding it is fsynced, or with the error that failed that commit. Works from any
/// runtime (or none). Dropping it does not withdraw the record.
#[derive(Debug)]
#[must_use = "the record is written either way; the ticket tells when it is durable"]
pub struct AppendTicket {
    receiver: oneshot::Receiver<Result<u64, StoreError>>,
    dir: std::path::PathBuf,
}

impl Future for AppendTicket {
    type Output = Result<u64, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        Pin::new(&mut this.receiver).poll(cx).map(|outcome| {
            outcome.unwrap_or_else(|_| {
                Err(StoreError::Closed {
                    dir: this.dir.clone(),
                })
            })
        })
    }
}
