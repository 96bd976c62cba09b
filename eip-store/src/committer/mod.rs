//! The committer: one thread that owns every write to the database (group commit).
//!
//! Appends, records set aside, declarations and removals of queues and key tables, batches and
//! expiries reach it through one channel; acks are listed for its next round without waking it
//! (`acks`), and come through the channel only while it sleeps with nothing due. Each round it
//! takes every job queued and every ack listed since the last round (up to [`MAX_BATCH`]),
//! writes them all in ONE redb write transaction,
//! which also encodes them as ONE record of the write-ahead journal ([`journal`](crate::journal)),
//! writes that record, and only then commits the transaction (without an fsync), updates the
//! queues in memory and answers the jobs; a round of only appends and acks is answered before
//! its commit (`publish`), a small one decided from memory before its transaction is even
//! built (`ahead`). While one round waits for its fsync, the next appends
//! queue up and share the next round: one appender gets one round per record, 256 concurrent
//! appenders about one round per 256 records.
//!
//! - A round holding anything but acks is durable: its record is fdatasynced before the
//!   transaction commits, so every ticket it answers is on disk, in the journal.
//! - Acks alone wait up to [`ACK_DELAY`] for company; their record is written without an
//!   fsync, and the next durable record (an append, a flush, the close) makes them durable too.
//!   A crash in between loses acks only, which means redeliveries, never lost records.
//! - Checkpoints (`checkpoint`) make the database durable on its own and start the journal
//!   over: when the journal is full, when the committer has been idle, after a failure, at close.
//! - When the last handle of the store is dropped the channel closes: the committer writes what
//!   is still queued, makes a checkpoint, marks the store closed and ends.
//!
//! - A batch (`batch`) is written whole into its round's transaction or, if a queue of it was
//!   removed, not at all; key tables' changes (`keys`) are written beside the queues', and each
//!   touched table's row with them. Answers and failures are in `answer`.
//!
//! The thread is a plain `std::thread`, so fsyncs never block an async runtime; answers go back
//! through `tokio::sync::oneshot`, which needs no runtime.
//!
//! Failures. If writing the transaction fails, the file is reopened (`reopen`, for the storage
//! engine refuses everything after a failed write: the reopen replays the journal's applied
//! rounds into it) and the round tried once more. If writing or syncing the journal fails, the
//! transaction is dropped. If the transaction can not be committed after its record was
//! written, the reopen replays that record too, and the round succeeds if it did. Whatever fails
//! in the end fails every job of the round with the same error: appended bytes are given back,
//! acks are undone (their records will be read again after the next open), a damaged record
//! stays in its queue (still counted and passed over), and memory is left as it was. The round
//! number of a failed round is never used again, and the journal is started over (after a
//! checkpoint) before the next record, so the failed record is never replayed by this process.
//! A record that reached the disk before its round failed, though, is replayed by an open after
//! a crash that comes before that next checkpoint: like a commit whose fsync reported an error,
//! a failed append may turn out to be stored.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::Durability;
use tokio::sync::oneshot;

mod acks;
mod ahead;
mod answer;
mod batch;
mod checkpoint;
mod effect;
mod keys;
mod publish;
mod reopen;
mod round;
mod touched;

use touched::Touched;

pub(crate) use acks::AckList;
use acks::Woken;
use effect::{Effect, ReopenRequest};
use keys::{KeyRound, TouchedTable};
use round::Round;

use crate::StoreError;
use crate::batch::Op;
use crate::journal::Journal;
use crate::journal::apply::Writer;
use crate::queue::QueueState;
use crate::slot::Slot;
use crate::space::Space;
use crate::store::Registry;
use crate::table::{TableRegistry, TableState};
use crate::ticket::Reply;

/// How long acks alone wait for other work before they are committed on their own.
pub(crate) const ACK_DELAY: Duration = Duration::from_millis(5);
/// The most jobs one commit takes, bounding its latency and memory.
pub(crate) const MAX_BATCH: usize = 4096;
/// After this many rounds without fsync in a row, the next ack-only round is durable.
const MAX_UNSYNCED_COMMITS: u32 = 64;
/// A round's record buffer larger than this is not kept for the next round.
const RECORD_KEPT: usize = 16 << 20;
/// How long the committer waits with nothing to do before it records a checkpoint
/// (`checkpoint`): a crash after it reopens without reading the whole file.
pub(crate) const IDLE_CHECKPOINT: Duration = Duration::from_millis(100);

/// One request to the committer.
pub(crate) enum Job {
    /// Write `record` at the end of `queue`; answer with its sequence number once durable.
    Append {
        queue: Arc<QueueState>,
        record: Bytes,
        reply: oneshot::Sender<Result<u64, StoreError>>,
    },
    /// Delete the record `seq` of `queue`.
    Ack { queue: Arc<QueueState>, seq: u64 },
    /// Copy a damaged record into the quarantine; with `remove`, delete it from `queue` too.
    SetAside {
        queue: Arc<QueueState>,
        seq: u64,
        bytes: Bytes,
        reason: String,
        remove: bool,
    },
    /// Create the queue `name` durably unless it exists.
    Declare {
        name: String,
        reply: SyncSender<Result<Arc<QueueState>, StoreError>>,
    },
    /// Delete the queue `name` with its records; answer how many there were.
    Remove {
        name: String,
        reply: oneshot::Sender<Result<u64, StoreError>>,
    },
    /// Make everything before it durable.
    Flush {
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Write every effect of a batch in one commit, or none; answer with its appends'
    /// sequence numbers once durable. `reserved` bytes were counted for it.
    Batch {
        ops: Vec<Op>,
        reserved: u64,
        reply: Reply,
    },
    /// Create the key table `name` durably unless it exists.
    DeclareTable {
        name: String,
        reply: SyncSender<Result<Arc<TableState>, StoreError>>,
    },
    /// Delete entries of `table` expired at `now_ms`; answer how many.
    Expire {
        table: Arc<TableState>,
        now_ms: u64,
        reply: oneshot::Sender<Result<u64, StoreError>>,
    },
    /// Reopen the database file: its handle of generation `seen` broke under a reader.
    Reopen {
        seen: u64,
        reply: SyncSender<Result<(), StoreError>>,
    },
}

/// The store's counters, for tests and monitoring.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) commits: AtomicU64,
    /// Checkpoints recorded while idle (not counted in `commits`).
    pub(crate) checkpoints: AtomicU64,
    pub(crate) records: AtomicU64,
    pub(crate) acks: AtomicU64,
    /// How long the commits took.
    pub(crate) latency: crate::latency::LatencyCounters,
}

/// What one round did to the queues and key tables, by id.
#[derive(Default)]
struct Changes {
    queues: HashMap<u32, Touched>,
    tables: HashMap<u32, TouchedTable>,
    /// Memory took the queues' changes and the appends were answered before the commit
    /// (`publish`).
    published: bool,
}

/// The committer thread's state.
pub(crate) struct Committer {
    pub(crate) slot: Arc<Slot>,
    pub(crate) file: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) registry: Arc<Registry>,
    pub(crate) space: Arc<Space>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) jobs: Receiver<Job>,
    /// Acks listed for the next round (see `acks`).
    pub(crate) acks: Arc<AckList>,
    pub(crate) next_id: u32,
    pub(crate) tables: Arc<TableRegistry>,
    pub(crate) next_table_id: u32,
    pub(crate) unsynced_commits: u32,
    /// Whether something was committed (or the file opened) since the last checkpoint, so that
    /// the next idle moment records one.
    pub(crate) checkpoint_due: bool,
    /// The write-ahead journal.
    pub(crate) journal: Journal,
    /// The record of the round being written, kept for its buffer.
    pub(crate) record: Vec<u8>,
    /// The last round number used (applied or failed: never used again).
    pub(crate) round: u64,
    /// The last round applied to the database and memory.
    pub(crate) applied: u64,
    /// Whether an fdatasync of the journal failed: what it holds since the last one is in
    /// doubt, so it must be started over (after a checkpoint) before the next record.
    pub(crate) needs_reset: bool,
    /// Whether the database file lacks rounds the journal holds (a replay into a reopened file
    /// failed): it is reopened and replayed into before the next round.
    pub(crate) lagging: bool,
    /// The journal's position before the record of the round being written, and its number.
    pub(crate) pending: Option<((u64, u64), u64)>,
}

/// How a round failed.
enum Failure {
    /// Writing the transaction failed (or the file was unusable): nothing was journaled.
    Database(StoreError),
    /// Writing or syncing its journal record failed; the transaction was dropped.
    Journal(StoreError),
    /// The record was journaled, then the transaction could not be committed; what the round
    /// found out, to apply if a reopen replays it.
    Committing(StoreError, Box<Changes>),
}

impl Committer {
    /// The thread's body: rounds of commits until the channel closes, then a last durable commit.
    pub(crate) fn run(mut self) {
        let mut batch: Vec<Job> = Vec::new();
        let mut acks_since: Option<Instant> = None;
        let mut idle_since = Instant::now();
        let mut open = true;
        // A round was committed since the last wait: more work is likely on its way.
        let mut committed = false;
        while open {
            let looked = committed.then(|| self.look_a_while()).flatten();
            let woken = looked.unwrap_or_else(|| self.wait(acks_since, idle_since));
            committed = false;
            // A wait that ran out: acks listed meanwhile have waited their time (at most one
            // step of `ACK_DELAY`)
            let timed_out = matches!(woken, Woken::Timeout);
            let woken = match woken {
                Woken::Job(job) => Some(job),
                Woken::Timeout => None,
                Woken::Closed => {
                    open = false;
                    None
                }
            };
            open = self.gather(&mut batch, woken) && open;
            if batch.is_empty() {
                continue;
            }
            let urgent = batch.iter().any(|job| !matches!(job, Job::Ack { .. }));
            let since = *acks_since.get_or_insert_with(Instant::now);
            let due = timed_out || since.elapsed() >= ACK_DELAY || batch.len() >= MAX_BATCH;
            if urgent || due || !open {
                let durable = urgent || !open || self.unsynced_commits + 1 >= MAX_UNSYNCED_COMMITS;
                self.commit(std::mem::take(&mut batch), durable);
                acks_since = None;
                idle_since = Instant::now();
                committed = true;
            }
        }
        // Acks listed past the last round's room
        loop {
            self.gather(&mut batch, None);
            if batch.is_empty() {
                break;
            }
            self.commit(std::mem::take(&mut batch), true);
        }
        if self.checkpoint_due || !self.journal.is_empty() {
            self.checkpoint();
        }
        self.space.close();
        for queue in self.registry_snapshot() {
            queue.advanced.notify_waiters();
        }
    }

    fn registry_snapshot(&self) -> Vec<Arc<QueueState>> {
        crate::store::lock(&self.registry)
            .values()
            .cloned()
            .collect()
    }

    /// Writes one round, commits it, then applies it to memory and answers every job; reopens
    /// the file where a reader asked for it.
    fn commit(&mut self, jobs: Vec<Job>, durable: bool) {
        let mut effects = Vec::with_capacity(jobs.len());
        let mut reopens = Vec::new();
        for job in jobs {
            match Effect::of(job) {
                Ok(effect) => effects.push(effect),
                Err(reopen) => reopens.push(reopen),
            }
        }
        self.gather_expired(&mut effects);
        let writes = effects.iter().any(|e| !matches!(e, Effect::Flush { .. }));
        if writes {
            self.commit_effects(effects, durable);
        } else if durable && self.journal.unsynced() {
            match self.journal.sync() {
                Ok(()) => {
                    self.unsynced_commits = 0;
                    self.apply(effects, Changes::default());
                }
                Err(source) => {
                    // What reached the disk since the last sync is in doubt
                    self.needs_reset = true;
                    let error = self.journal_error(source);
                    tracing::error!(%error, "eip-store: syncing the journal failed");
                    self.fail(effects, error);
                }
            }
        } else {
            self.apply(effects, Changes::default());
        }
        for ReopenRequest { seen, reply } in reopens {
            let _ = reply.send(self.reopen(seen, self.applied));
        }
    }

    fn journal_error(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.journal.path().to_path_buf(),
            source,
        }
    }

    /// Commits `effects`; if the commit fails, reopens the file and tries once more before the
    /// round's jobs are answered with the failure (see the module's documentation).
    fn commit_effects(&mut self, mut effects: Vec<Effect>, durable: bool) {
        let started = Instant::now();
        if let Err(error) = self.ready() {
            tracing::error!(%error, "eip-store: the store is not ready for the next round after a failure");
            return self.fail(effects, error);
        }
        let generation = self.slot.generation();
        let outcome = match self.try_ahead(&mut effects, durable) {
            Some(outcome) => outcome,
            None => self.try_write(&mut effects, durable),
        };
        let error = match outcome {
            Ok(changes) => return self.committed(effects, changes, durable, started),
            Err(Failure::Journal(error)) => {
                tracing::error!(%error, "eip-store: writing the journal failed");
                return self.fail(effects, error);
            }
            Err(Failure::Committing(error, changes)) => {
                tracing::error!(%error, "eip-store: a commit failed after its round was journaled; reopening the database file to replay it");
                let round = self.round;
                let outcome = self.reopen(generation, round);
                if outcome.is_ok() && self.applied == round {
                    self.pending = None;
                    return self.committed(effects, *changes, true, started);
                }
                if let Err(reopen) = outcome {
                    tracing::error!(error = %reopen, "eip-store: the database file could not be reopened");
                }
                if changes.published {
                    // Answered: the round stands, in the journal and in memory; the file gets it
                    // before the next round (see `publish`)
                    tracing::error!(
                        "eip-store: the round stays in the journal; the next round replays it into the file first"
                    );
                    self.pending = None;
                    self.applied = round;
                    self.lagging = true;
                    return self.committed(effects, *changes, true, started);
                }
                self.discard_pending();
                return self.fail(effects, error);
            }
            Err(Failure::Database(error)) => error,
        };
        tracing::error!(%error, "eip-store: a commit failed; reopening the database file to try once more");
        if let Err(reopen) = self.reopen(generation, self.applied) {
            tracing::error!(error = %reopen, "eip-store: the database file could not be reopened");
            return self.fail(effects, error);
        }
        effects.iter_mut().for_each(Effect::prepare_retry);
        match self.try_write(&mut effects, true) {
            Ok(changes) => self.committed(effects, changes, true, started),
            Err(Failure::Committing(error, _)) => {
                tracing::error!(%error, "eip-store: the commit failed again on the reopened file");
                self.discard_pending();
                self.lagging = true;
                self.fail(effects, error);
            }
            Err(Failure::Database(error) | Failure::Journal(error)) => {
                tracing::error!(%error, "eip-store: the commit failed again on the reopened file");
                self.fail(effects, error);
            }
        }
    }

    /// After a failure, before the next round: the file reopened and the journal's rounds
    /// replayed if a replay is owed (`lagging`), and the journal started over (after a
    /// checkpoint) if a failed fdatasync left it in doubt (`needs_reset`).
    fn ready(&mut self) -> Result<(), StoreError> {
        if self.lagging {
            let generation = self.slot.generation();
            self.reopen(generation, self.applied)?;
        }
        if self.needs_reset {
            let generation = self.slot.generation();
            if let Err(error) = self.checkpoint_now() {
                tracing::warn!(%error, "eip-store: a checkpoint failed; reopening the database file");
                self.reopen(generation, self.applied)?;
                self.checkpoint_now()?;
            }
        }
        Ok(())
    }

    /// Takes back the journal record of the round that just failed, and its round number: the
    /// next round is written over it, so it is never replayed after the next one is written.
    fn discard_pending(&mut self) {
        if let Some((position, round)) = self.pending.take() {
            self.journal.rewind(position);
            self.round = round - 1;
        }
    }

    /// Writes `effects`, with a panic of the storage engine as an error.
    fn try_write(&mut self, effects: &mut [Effect], durable: bool) -> Result<Changes, Failure> {
        let file = self.file.clone();
        let outcome = crate::quiet::catch(|| self.write(effects, durable))
            .unwrap_or_else(|detail| Err(Failure::Database(StoreError::from_panic(&file, detail))));
        if let Err(Failure::Database(_)) = outcome {
            // A panic after its record was journaled: the record goes, the retry writes it again
            self.discard_pending();
        }
        outcome
    }

    /// After a successful round: the counters, memory and answers; then a checkpoint if the
    /// journal is full.
    fn committed(
        &mut self,
        effects: Vec<Effect>,
        touched: Changes,
        durable: bool,
        started: Instant,
    ) {
        self.counters.latency.record(started.elapsed());
        if !touched.published {
            // A published round was counted when it was answered
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
        }
        self.checkpoint_due = true;
        if durable {
            self.unsynced_commits = 0;
        } else {
            self.unsynced_commits += 1;
        }
        self.apply(effects, touched);
        if self.journal.is_full() {
            self.checkpoint();
        }
        if self.record.capacity() > RECORD_KEPT {
            self.record = Vec::new();
        }
    }

    /// Writes every effect in one transaction, journals the round, publishes it if it can be
    /// answered before its commit (`publish`), then commits it.
    fn write(&mut self, effects: &mut [Effect], durable: bool) -> Result<Changes, Failure> {
        let file = self.file.clone();
        let redb_error = |e: redb::Error| Failure::Database(StoreError::from_redb(&file, e));
        let (db, _) = self.slot.get().map_err(Failure::Database)?;
        let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        txn.set_durability(Durability::None)
            .map_err(|e| redb_error(e.into()))?;
        let round = self.round + 1;
        Journal::begin(&mut self.record);
        let mut changes = Changes::default();
        {
            let mut writing = Round {
                w: Writer::new(&txn, Some(&mut self.record)).map_err(redb_error)?,
                names: HashMap::new(),
                touched: &mut changes.queues,
                registry: &self.registry,
                keys: KeyRound::new(&mut changes.tables, &self.tables, &mut self.next_table_id),
            };
            let mut rest = &mut effects[..];
            while !rest.is_empty() {
                // A run of acks next to each other (those listed come first) is written as
                // one: consecutive sequence numbers become one range delete; so is a run of
                // appends, through one cursor per queue
                let acks = run(rest, |e| matches!(e, Effect::Ack { .. }));
                let appends = run(rest, |e| matches!(e, Effect::Append { .. }));
                let (now, later) = rest.split_at_mut(acks.max(appends).max(1));
                if acks > 1 {
                    writing.acks(now).map_err(redb_error)?;
                } else if appends > 1 {
                    writing.appends(now).map_err(redb_error)?;
                } else {
                    writing
                        .write(&mut now[0], &mut self.next_id)
                        .map_err(redb_error)?;
                }
                rest = later;
            }
            writing.write_queue_rows().map_err(redb_error)?;
            writing
                .keys
                .write_rows(&mut writing.w)
                .map_err(redb_error)?;
            // The round is not written into the metadata: only a checkpoint makes the file
            // durable, and it records the round the file holds (see `checkpoint`)
        }
        self.journal_round(round, durable)?;
        if durable && publish::publishable(effects) {
            self.publish(effects, &mut changes);
        }
        let error = match crate::quiet::catch(|| txn.commit()) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(StoreError::from_redb(&file, redb::Error::from(e))),
            Err(detail) => Some(StoreError::from_panic(&file, detail)),
        };
        if let Some(error) = error {
            return Err(Failure::Committing(error, Box::new(changes)));
        }
        self.pending = None;
        self.applied = round;
        Ok(changes)
    }

    /// After a successful commit: memory first (heads, lengths, bytes), then the answers, so that
    /// whoever is answered sees the new state.
    fn apply(&self, effects: Vec<Effect>, changes: Changes) {
        for t in changes.queues.values() {
            if !changes.published {
                self.apply_touched(t, true);
            } else if !self.lagging {
                // Published before the commit: the file holds the round (its records stay in
                // memory one more round, see `unstored`)
                t.queue.unstored.committed(t.head);
            }
        }
        for t in changes.tables.values() {
            let bytes = t.table.bytes.load(Ordering::Acquire) + t.added;
            t.table
                .bytes
                .store(bytes.saturating_sub(t.freed), Ordering::Release);
            self.space.release(t.freed);
        }
        let mut registry = crate::store::lock(&self.registry);
        for effect in effects {
            self.answer(effect, &mut registry, changes.published);
        }
        drop(registry);
        // Published rounds too: their waiters are woken here, after the commit (see `publish`)
        for t in changes.queues.into_values() {
            t.queue.advanced.notify_waiters();
        }
    }

    /// What the round did to one queue, in memory: its head, length and bytes, or for a queue
    /// removed, its bytes given back to the space. `stored`: the database holds the round (see
    /// `unstored`: reads learn it before they see the head pass its records).
    fn apply_touched(&self, t: &Touched, stored: bool) {
        let queue = &t.queue;
        if t.removed {
            let live = queue.bytes.load(Ordering::Acquire) + t.added_bytes;
            self.space.release(live);
            queue.unstored.stored_up_to(t.head);
        } else {
            if stored {
                queue.unstored.stored_up_to(t.head);
            }
            queue.head.store(t.head, Ordering::Release);
            queue.len.fetch_add(t.appended, Ordering::AcqRel);
            let bytes = queue.bytes.load(Ordering::Acquire) + t.added_bytes;
            queue
                .bytes
                .store(bytes.saturating_sub(t.freed_bytes), Ordering::Release);
            self.space.release(t.freed_bytes);
        }
    }
}

/// How many effects at the start of `effects` are of the kind `kind` says.
fn run(effects: &[Effect], kind: impl Fn(&Effect) -> bool) -> usize {
    effects.iter().take_while(|e| kind(e)).count()
}
