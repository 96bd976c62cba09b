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
//!   Damage does not stop a read: [`QueueLog::read_page`] sets aside records that fail their
//!   checksum, reads around pages that can not be read, and says where to read on.
//! - [`QueueLog::ack`] is lazy: the deletion rides with the next commit, or a timer commits it a
//!   few milliseconds later. It is never waited on. A crash can lose an ack that was not yet
//!   committed: the record is then read again after the restart (a redelivery, never a loss).
//!
//! In memory a queue keeps only its head, its length, its live bytes and the acks not yet
//! committed; the records stay on disk.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use redb::ReadableDatabase;
use tokio::sync::{Notify, oneshot};

use crate::StoreError;
use crate::committer::Job;
use crate::scan::{self, Target};
use crate::schema;
use crate::store::Shared;
use crate::ticket::AppendTicket;
use crate::unstored::Unstored;

/// The in-memory state of one queue, shared by its handles and the committer.
#[derive(Debug)]
pub(crate) struct QueueState {
    pub(crate) name: String,
    pub(crate) id: u32,
    pub(crate) table: String,
    /// The next sequence number to commit; only the committer advances it.
    pub(crate) head: AtomicU64,
    /// Committed records minus acks (an ack counts as soon as [`QueueLog::ack`] is called).
    /// Counted ahead and corrected later, so it may pass below zero for a moment (an ack of a
    /// record a batch deleted already counts until the committer finds it gone): it changes
    /// by wrapping arithmetic, which the corrections undo exactly, and reads below zero as
    /// zero. Stopping at zero instead would lose the decrements made meanwhile.
    pub(crate) len: AtomicU64,
    /// Bytes of the committed records not yet deleted.
    pub(crate) bytes: AtomicU64,
    /// Acks handed to the committer and not yet committed: [`QueueLog::read`] skips them.
    pub(crate) acked: Mutex<HashSet<u64>>,
    /// Records set aside as damaged since the store opened: reads pass over them.
    pub(crate) aside: Mutex<HashSet<u64>>,
    /// How many records were set aside, and how many sequence numbers could not be read.
    pub(crate) damaged: AtomicU64,
    pub(crate) unreadable: AtomicU64,
    /// The most entries one sweep of the table could not reach (every sweep counts the same
    /// ones again, so only an increase is added to `unreadable`).
    pub(crate) unreachable: AtomicU64,
    pub(crate) removed: AtomicBool,
    /// Woken whenever the head advances, the queue is removed or the store closes.
    pub(crate) advanced: Notify,
    /// Records before the head that the database file does not hold yet, for reads.
    pub(crate) unstored: Unstored,
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
            aside: Mutex::new(HashSet::new()),
            damaged: AtomicU64::new(0),
            unreadable: AtomicU64::new(0),
            unreachable: AtomicU64::new(0),
            removed: AtomicBool::new(false),
            advanced: Notify::new(),
            unstored: Unstored::new(head),
        }
    }

    pub(crate) fn acked(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        // The set stays consistent whatever panicked while holding it
        self.acked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the ack of `seq` into account in memory: reads skip it, the length no longer counts
    /// it. False if it was acked already (and not yet committed).
    pub(crate) fn take_ack(&self, seq: u64) -> bool {
        if !self.acked().insert(seq) {
            return false;
        }
        // Counted now; the committer gives it back if the record turns out to be gone already
        self.len.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Undoes [`take_ack`](Self::take_ack): the ack was not written.
    pub(crate) fn give_back_ack(&self, seq: u64) {
        if self.acked().remove(&seq) {
            self.len.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub(crate) fn aside(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        self.aside.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One read of a queue: the intact records found, and where the next read goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadPage {
    /// Intact records not yet acknowledged, in ascending sequence order.
    pub records: Vec<(u64, Bytes)>,
    /// Every sequence number before this (and at least `from`) has been looked at: read on
    /// from here. At the queue's head when everything has been read.
    pub next: u64,
}

/// What a queue met of damage since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Damage {
    /// Records set aside into the store's quarantine: they failed their checksum, or the
    /// caller could not decode them ([`QueueLog::quarantine`]).
    pub set_aside: u64,
    /// Sequence numbers whose record could not be read at all (a damaged page): lost to the
    /// damage, unless acknowledged before.
    pub unreadable: u64,
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
        shared.space.reserve(len, &shared.dir)?;
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
        Ok(AppendTicket::waiting(receiver, shared.dir.clone()))
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
        if !state.take_ack(seq) {
            return;
        }
        if self.shared.space.is_closed() {
            // The committer has stopped: the ack can not be written
            state.give_back_ack(seq);
            return;
        }
        if self.shared.acks.list(state, seq) {
            return;
        }
        let job = Job::Ack {
            queue: state.clone(),
            seq,
        };
        if self.shared.send(job).is_err() {
            state.give_back_ack(seq);
        }
    }

    /// The committed records not yet acknowledged with a sequence number of at least `from`, in
    /// ascending order, at most `max` of them. Reads do not remove records.
    ///
    /// Around damage a read may return fewer than `max` records although more follow: use
    /// [`read_page`](Self::read_page) to learn where to go on.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<(u64, Bytes)>, StoreError> {
        Ok(self.read_page(from, max)?.records)
    }

    /// Like [`read`](Self::read), and says where the next read goes on. Damage does not fail
    /// it: a record that fails its checksum is set aside into the store's quarantine (kept,
    /// counted in [`damage`](Self::damage), logged once) and the read goes on past it; a page
    /// the storage engine can not read is read around, and the sequence numbers it hid are
    /// counted as unreadable and logged. Fails only when the system does (I/O, a closed store).
    pub fn read_page(&self, from: u64, max: usize) -> Result<ReadPage, StoreError> {
        if max == 0 {
            return Ok(ReadPage {
                records: Vec::new(),
                next: from,
            });
        }
        let file = &self.shared.file;
        // In this order (see `unstored`): every record before `head` is in `unstored` or before
        // `stored`
        let head = self.head();
        let unstored = self.state.unstored.from(from);
        let mut stored = self.state.unstored.stored().min(head);
        if covers(&unstored, from, head) {
            // Memory holds every record from `from` to the head: the database is not read
            stored = from;
        }
        let mut skip = self.state.acked().clone();
        skip.extend(self.state.aside().iter().copied());
        let target = Target {
            file,
            id: self.state.id,
            table: &self.state.table,
            head: stored,
            skip: &skip,
        };
        let mut found = if from < stored {
            self.shared.with_database(|db| {
                let txn = crate::quiet::catch(|| db.begin_read())
                    .map_err(|detail| StoreError::from_panic(file, detail))?
                    .map_err(|e| StoreError::from_redb(file, e))?;
                scan::scan(&txn, &target, from, max)
            })?
        } else {
            scan::Scan::starting(from)
        };
        if found.next >= stored && found.records.len() < max {
            // Read up to `stored` (or from past it): what follows up to the head is in memory
            let start = found.next;
            found.next = head.max(start);
            for (seq, record) in unstored {
                if seq < start || seq >= head || skip.contains(&seq) {
                    continue;
                }
                if found.records.len() == max {
                    found.next = seq;
                    break;
                }
                found.records.push((seq, record));
            }
        }
        for damaged in found.damaged {
            let reason = format!(
                "record {} of queue {:?} fails its checksum",
                damaged.seq, self.state.name
            );
            self.set_aside(damaged.seq, damaged.bytes, reason, damaged.in_order);
        }
        for range in found.unreadable {
            let count = range.end() - range.start() + 1;
            self.state.unreadable.fetch_add(count, Ordering::Relaxed);
            tracing::error!(
                file = %file.display(),
                queue = %self.state.name,
                first = range.start(),
                last = range.end(),
                "records on a damaged page of the store can not be read: counted as lost"
            );
        }
        let before = self
            .state
            .unreachable
            .fetch_max(found.unreachable, Ordering::Relaxed);
        if found.unreachable > before {
            let count = found.unreachable - before;
            self.state.unreadable.fetch_add(count, Ordering::Relaxed);
            tracing::error!(
                file = %file.display(),
                queue = %self.state.name,
                count,
                "records behind a damaged page of the store can not be reached: counted as lost; \
                 `eip store salvage` may recover them"
            );
        }
        Ok(ReadPage {
            records: found.records,
            next: found.next,
        })
    }

    /// Sets the record `seq` aside: it is moved, with `bytes` and `reason`, into the store's
    /// quarantine (deleted from the queue in the same commit), reads pass over it from now on,
    /// and it is counted in [`damage`](Self::damage). For a record the caller read but can not
    /// use (it does not decode): its bytes stay available for inspection and replay, unlike
    /// with [`ack`](Self::ack). Never waits; a second call for the same record is ignored.
    pub fn quarantine(&self, seq: u64, bytes: Bytes, reason: impl Into<String>) {
        if seq < self.head() {
            self.set_aside(seq, bytes, reason.into(), true);
        }
    }

    /// What this queue met of damage since the store was opened.
    pub fn damage(&self) -> Damage {
        Damage {
            set_aside: self.state.damaged.load(Ordering::Relaxed),
            unreadable: self.state.unreadable.load(Ordering::Relaxed),
        }
    }

    /// Hands a damaged record to the committer for the quarantine; `remove` deletes it from the
    /// queue too (only when its key is certainly its own).
    fn set_aside(&self, seq: u64, bytes: Bytes, reason: String, remove: bool) {
        let state = &self.state;
        if state.removed.load(Ordering::Acquire) || !state.aside().insert(seq) {
            return;
        }
        state.damaged.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            file = %self.shared.file.display(),
            queue = %state.name,
            seq,
            %reason,
            "damaged record set aside in the store's quarantine"
        );
        if remove {
            state.len.fetch_sub(1, Ordering::AcqRel);
        }
        let job = Job::SetAside {
            queue: state.clone(),
            seq,
            bytes,
            reason,
            remove,
        };
        if self.shared.send(job).is_err() && remove {
            state.len.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// How many records are committed and not yet acknowledged (an [`ack`](Self::ack) counts at
    /// once, before its deletion is committed).
    pub fn len(&self) -> u64 {
        let len = self.state.len.load(Ordering::Acquire);
        // Below zero for a moment (see `QueueState::len`): none.
        if i64::try_from(len).is_err() { 0 } else { len }
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

/// Whether `records` (in order) hold every sequence number from `from` up to `head`.
fn covers(records: &[(u64, Bytes)], from: u64, head: u64) -> bool {
    let mut want = from;
    for (seq, _) in records {
        if want >= head {
            break;
        }
        if *seq != want {
            return false;
        }
        want += 1;
    }
    want >= head && !records.is_empty()
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
