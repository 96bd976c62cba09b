//! The committer: one thread that owns every write to the database (group commit).
//!
//! Appends, acks, records set aside, declarations and removals of queues and key tables,
//! batches and expiries reach it through one channel. Each round it takes
//! every job queued since the last commit (up to [`MAX_BATCH`]), writes them all in ONE redb write
//! transaction, commits, and only then updates the queues in memory and answers the jobs. While
//! one commit waits for its fsync, the next appends queue up and share the next commit: one
//! appender gets one commit per record, 256 concurrent appenders about one commit per 256 records.
//!
//! - A round holding anything but acks commits at once, durably ([`Durability::Immediate`]):
//!   every append ticket it answers is on disk.
//! - Acks alone wait up to [`ACK_DELAY`] for company, then commit without an fsync
//!   ([`Durability::None`]); the next durable commit (an append, a flush, the close) makes them
//!   durable too. A crash in between loses acks only, which means redeliveries, never lost
//!   records.
//! - When the last handle of the store is dropped the channel closes: the committer writes what
//!   is still queued, commits durably, marks the store closed and ends.
//!
//! - A batch (`batch`) is written whole into its round's transaction or, if a queue of it was
//!   removed, not at all; key tables' changes (`keys`) are written beside the queues', and each
//!   touched table's row with them. Answers and failures are in `answer`.
//!
//! The thread is a plain `std::thread`, so fsyncs never block an async runtime; answers go back
//! through `tokio::sync::oneshot`, which needs no runtime.
//!
//! If a commit fails, the file is reopened and the round tried once more (`reopen`, for the
//! storage engine refuses everything after a failed write); if that fails too, every job of the
//! round fails with the same error: appended bytes are given back, acks are undone (their
//! records will be read again after the next open), a damaged record stays in its queue (still
//! counted and passed over), and memory is left as it was.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::Durability;
use tokio::sync::oneshot;

mod answer;
mod batch;
mod checkpoint;
mod effect;
mod keys;
mod reopen;
mod round;

use effect::{Effect, ReopenRequest};
use keys::{KeyRound, TouchedTable};
use round::Round;

use crate::StoreError;
use crate::batch::Op;
use crate::queue::QueueState;
use crate::schema::QUEUES;
use crate::slot::Slot;
use crate::space::Space;
use crate::store::Registry;
use crate::table::{TableRegistry, TableState};
use crate::ticket::Reply;

/// How long acks alone wait for other work before they are committed on their own.
pub(crate) const ACK_DELAY: Duration = Duration::from_millis(5);
/// The most jobs one commit takes, bounding its latency and memory.
pub(crate) const MAX_BATCH: usize = 4096;
/// After this many commits without fsync in a row, the next ack-only commit is durable.
const MAX_UNSYNCED_COMMITS: u32 = 64;
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

/// What one round does to one queue, applied to memory once the commit succeeded.
struct Touched {
    queue: Arc<QueueState>,
    head: u64,
    appended: u64,
    added_bytes: u64,
    freed_bytes: u64,
    removed: bool,
}

/// What one round did to the queues and key tables, by id.
#[derive(Default)]
struct Changes {
    queues: HashMap<u32, Touched>,
    tables: HashMap<u32, TouchedTable>,
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
    pub(crate) next_id: u32,
    pub(crate) tables: Arc<TableRegistry>,
    pub(crate) next_table_id: u32,
    pub(crate) unsynced_commits: u32,
    /// Acks committed without an fsync since the last durable commit: a reopen of the file may
    /// lose them, so it deletes them again.
    pub(crate) unsynced_acks: Vec<(Arc<QueueState>, u64)>,
    /// Whether something was committed (or the file opened) since the last checkpoint, so that
    /// the next idle moment records one.
    pub(crate) checkpoint_due: bool,
}

impl Committer {
    /// The thread's body: rounds of commits until the channel closes, then a last durable commit.
    pub(crate) fn run(mut self) {
        let mut batch: Vec<Job> = Vec::new();
        let mut acks_since: Option<Instant> = None;
        let mut open = true;
        while open {
            let first = match acks_since {
                None if self.checkpoint_due => match self.jobs.recv_timeout(IDLE_CHECKPOINT) {
                    Ok(job) => Some(job),
                    Err(RecvTimeoutError::Timeout) => {
                        self.checkpoint();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        open = false;
                        None
                    }
                },
                Some(since) => {
                    let wait = (since + ACK_DELAY).saturating_duration_since(Instant::now());
                    match self.jobs.recv_timeout(wait) {
                        Ok(job) => Some(job),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => {
                            open = false;
                            None
                        }
                    }
                }
                None => self.jobs.recv().ok(),
            };
            match first {
                Some(job) => batch.push(job),
                None if acks_since.is_none() => open = false,
                None => {}
            }
            while open && batch.len() < MAX_BATCH {
                match self.jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => open = false,
                }
            }
            let urgent = batch.iter().any(|job| !matches!(job, Job::Ack { .. }));
            if !batch.is_empty() && acks_since.is_none() {
                acks_since = Some(Instant::now());
            }
            let due = acks_since.is_some_and(|since| since.elapsed() >= ACK_DELAY)
                || batch.len() >= MAX_BATCH;
            if urgent || due || !open {
                let durable = urgent || !open || self.unsynced_commits + 1 >= MAX_UNSYNCED_COMMITS;
                self.commit(std::mem::take(&mut batch), durable);
                acks_since = None;
            }
        }
        if self.unsynced_commits > 0 {
            self.commit(Vec::new(), true);
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
        let syncs = durable && self.unsynced_commits > 0;
        if writes || syncs {
            self.commit_effects(effects, durable);
        } else {
            self.apply(effects, Changes::default());
        }
        for ReopenRequest { seen, reply } in reopens {
            let _ = reply.send(self.reopen(seen));
        }
    }

    /// Commits `effects`; if the commit fails, reopens the file and tries once more before the
    /// round's jobs are answered with the failure.
    fn commit_effects(&mut self, mut effects: Vec<Effect>, durable: bool) {
        let generation = self.slot.generation();
        let started = Instant::now();
        let error = match self.try_write(&mut effects, durable) {
            Ok(touched) => {
                self.counters.latency.record(started.elapsed());
                return self.committed(effects, touched, durable);
            }
            Err(error) => error,
        };
        tracing::error!(%error, "eip-store: a commit failed; reopening the database file to try once more");
        if let Err(reopen) = self.reopen(generation) {
            tracing::error!(error = %reopen, "eip-store: the database file could not be reopened");
            return self.fail(effects, error);
        }
        effects.iter_mut().for_each(Effect::prepare_retry);
        match self.try_write(&mut effects, true) {
            Ok(touched) => {
                self.counters.latency.record(started.elapsed());
                self.committed(effects, touched, true)
            }
            Err(error) => {
                tracing::error!(%error, "eip-store: the commit failed again on the reopened file");
                self.fail(effects, error);
            }
        }
    }

    /// Writes `effects`, with a panic of the storage engine as an error.
    fn try_write(&mut self, effects: &mut [Effect], durable: bool) -> Result<Changes, StoreError> {
        let file = self.file.clone();
        crate::quiet::catch(|| self.write(effects, durable))
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)))
    }

    /// After a successful commit: the counters, the acks a reopen would have to repeat, memory.
    fn committed(&mut self, effects: Vec<Effect>, touched: Changes, durable: bool) {
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.checkpoint_due = true;
        if durable {
            self.unsynced_commits = 0;
            self.unsynced_acks.clear();
        } else {
            self.unsynced_commits += 1;
            self.unsynced_acks
                .extend(effects.iter().filter_map(|effect| match effect {
                    Effect::Ack {
                        queue,
                        seq,
                        deleted: true,
                    } => Some((queue.clone(), *seq)),
                    _ => None,
                }));
        }
        self.apply(effects, touched);
    }

    /// Writes every effect in one transaction and commits it.
    fn write(&mut self, effects: &mut [Effect], durable: bool) -> Result<Changes, StoreError> {
        let file = self.file.clone();
        let redb_error = |e: redb::Error| StoreError::from_redb(&file, e);
        let (db, _) = self.slot.get()?;
        let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
        if !durable {
            txn.set_durability(Durability::None)
                .map_err(|e| redb_error(e.into()))?;
        }
        let mut changes = Changes::default();
        {
            let mut round = Round {
                txn: &txn,
                queues: txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?,
                tables: HashMap::new(),
                quarantine: None,
                names: HashMap::new(),
                touched: &mut changes.queues,
                registry: &self.registry,
                keys: KeyRound::new(
                    &txn,
                    &mut changes.tables,
                    &self.tables,
                    &mut self.next_table_id,
                ),
            };
            for effect in effects.iter_mut() {
                round.write(effect, &mut self.next_id).map_err(redb_error)?;
            }
            round.write_queue_rows().map_err(redb_error)?;
            round.keys.write_rows().map_err(redb_error)?;
        }
        txn.commit().map_err(|e| redb_error(e.into()))?;
        Ok(changes)
    }

    /// After a successful commit: memory first (heads, lengths, bytes), then the answers, so that
    /// whoever is answered sees the new state.
    fn apply(&self, effects: Vec<Effect>, changes: Changes) {
        for t in changes.queues.values() {
            self.apply_touched(t);
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
            self.answer(effect, &mut registry);
        }
        drop(registry);
        for t in changes.queues.into_values() {
            t.queue.advanced.notify_waiters();
        }
    }

    /// What the round did to one queue, in memory: its head, length and bytes, or for a queue
    /// removed, its bytes given back to the space.
    fn apply_touched(&self, t: &Touched) {
        let queue = &t.queue;
        if t.removed {
            let live = queue.bytes.load(Ordering::Acquire) + t.added_bytes;
            self.space.release(live);
        } else {
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
