//! The store: one data directory, its database, its committer thread and its named queues.
//!
//! [`DurableStore::open`] takes the directory's lock, checks and opens the database, rebuilds each
//! queue's head, length and live bytes from the `queues` table and the records tables' lengths
//! (no payload is read, so this is quick whatever the number of records), then starts the
//! committer thread. Handles ([`DurableStore`], [`QueueLog`]) are cheap clones of one shared
//! state; when the last one is dropped, the committer writes what is pending, commits durably and
//! stops, the database is closed and the lock released, all before the drop returns, so the
//! directory can be opened again at once.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use redb::{Database, ReadTransaction, ReadableDatabase};
use tokio::sync::oneshot;

use crate::batch::Batch;
use crate::committer::{AckList, Committer, Counters, Job};
use crate::journal::JournalDamage;
use crate::layout;
use crate::open::{Opened, open_database};
use crate::quarantine::QuarantinedRecord;
use crate::queue::{QueueLog, QueueState};
use crate::slot::Slot;
use crate::space::Space;
use crate::table::{KeyTable, TableRegistry};
use crate::{StoreConfig, StoreError};

/// Every declared queue by name, shared by the handles and the committer.
pub(crate) type Registry = Mutex<BTreeMap<String, Arc<QueueState>>>;

/// Locks `registry`; a panic elsewhere never leaves it inconsistent, so poisoning is ignored.
pub(crate) fn lock(registry: &Registry) -> MutexGuard<'_, BTreeMap<String, Arc<QueueState>>> {
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Counters of the committer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Write transactions committed (durable or not).
    pub commits: u64,
    /// Checkpoints recorded while the store was idle, so that an open after a crash need not
    /// read the whole file (not counted in `commits`).
    pub checkpoints: u64,
    /// Records committed by appends.
    pub records_committed: u64,
    /// Records deleted by committed acks.
    pub acks_committed: u64,
    /// How long the commits took.
    pub commit_latency: crate::CommitLatency,
}

/// The state every handle shares. Dropping it stops the committer and closes the database.
pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    pub(crate) file: PathBuf,
    pub(crate) config: StoreConfig,
    pub(crate) space: Arc<Space>,
    registry: Arc<Registry>,
    tables: Arc<TableRegistry>,
    counters: Arc<Counters>,
    jobs: Option<Sender<Job>>,
    /// Acks listed for the committer's next round, without waking it.
    pub(crate) acks: Arc<AckList>,
    pub(crate) slot: Arc<Slot>,
    committer: Option<JoinHandle<()>>,
    /// Held (locked) for as long as the store is open; dropped last.
    lock: Option<File>,
    /// Whether the open had to repair the file.
    repaired: bool,
    /// Damage the open found in the journal.
    journal_damage: Option<JournalDamage>,
}

impl Shared {
    /// Hands `job` to the committer; gives it back if the committer has stopped.
    pub(crate) fn send(&self, job: Job) -> Result<(), Job> {
        match &self.jobs {
            Some(jobs) => jobs.send(job).map_err(|refused| refused.0),
            None => Err(job),
        }
    }

    pub(crate) fn closed_error(&self) -> StoreError {
        StoreError::Closed {
            dir: self.dir.clone(),
        }
    }

    /// The current handle on the database file, and its generation.
    pub(crate) fn database(&self) -> Result<(Arc<Database>, u64), StoreError> {
        self.slot.get()
    }

    /// Runs `read` on the current handle; if the handle turns out broken
    /// ([`StoreError::Unusable`]), has the committer reopen the file and runs it once more.
    pub(crate) fn with_database<T>(
        &self,
        read: impl Fn(&Database) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (db, generation) = self.database()?;
        match read(&db) {
            Err(StoreError::Unusable { .. }) => {
                drop(db);
                self.heal(generation)?;
                let (db, _) = self.database()?;
                read(&db)
            }
            outcome => outcome,
        }
    }

    /// Runs `read` in a read transaction of the current handle, as
    /// [`with_database`](Self::with_database) does.
    pub(crate) fn read<T>(
        &self,
        read: impl Fn(&ReadTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let file = &self.file;
        self.with_database(|db| {
            let txn = crate::quiet::catch(|| db.begin_read())
                .map_err(|detail| StoreError::from_panic(file, detail))?
                .map_err(|e| StoreError::from_redb(file, e))?;
            read(&txn)
        })
    }

    /// Has the committer reopen the file whose handle of generation `seen` broke, and waits.
    fn heal(&self, seen: u64) -> Result<(), StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Job::Reopen { seen, reply })
            .map_err(|_| self.closed_error())?;
        answer.recv().map_err(|_| self.closed_error())?
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Closing the channel tells the committer to finish the pending work and stop
        self.jobs.take();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
        self.slot.close();
        self.lock.take();
    }
}

/// An open data directory holding named queues of records. Cheap to clone; the store stays open
/// while any handle (or [`QueueLog`]) lives.
#[derive(Clone)]
pub struct DurableStore {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DurableStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableStore")
            .field("dir", &self.shared.dir)
            .field("used_bytes", &self.used_bytes())
            .field("max_bytes", &self.max_bytes())
            .finish()
    }
}

impl DurableStore {
    /// Opens the store in `dir`, creating the directory and an empty store if needed.
    ///
    /// Fails with [`StoreError::InUse`] if the directory is open (in this process or another),
    /// [`StoreError::Foreign`] if `store.redb` is not a store database, [`StoreError::Damaged`]
    /// if it cannot be trusted (checksums, structure, truncation, a lost file), and
    /// [`StoreError::Io`] if the operating system refuses. Never panics on file content.
    pub fn open(dir: impl AsRef<Path>, config: StoreConfig) -> Result<DurableStore, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        let repaired = Arc::new(AtomicBool::new(false));
        let (lock_file, found, file, opened) = layout::patiently(|| {
            let lock_file = layout::lock(&dir)?;
            let found = layout::check_format(&dir)?;
            let file = layout::check_database_file(&dir)?;
            let opened = crate::quiet::catch(|| {
                open_database(&dir, &file, &config, found, repaired.clone())
            })
            .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)))?;
            Ok((lock_file, found, file, opened))
        })?;
        let Opened {
            db,
            queues,
            tables,
            journal,
            recovered,
        } = opened;
        layout::mark_initialised(&dir, found)?;

        let used: u64 = queues
            .iter()
            .map(|q| q.bytes.load(Ordering::Relaxed))
            .chain(tables.iter().map(|t| t.bytes.load(Ordering::Relaxed)))
            .fold(0, u64::saturating_add);
        let next_table_id = tables
            .iter()
            .map(|t| t.id)
            .max()
            .map_or(0, |id| id.saturating_add(1));
        let tables = Arc::new(Mutex::new(
            tables
                .into_iter()
                .map(|t| (t.name.clone(), Arc::new(t)))
                .collect::<BTreeMap<_, _>>(),
        ));
        let next_id = queues
            .iter()
            .map(|q| q.id)
            .max()
            .map_or(0, |id| id.saturating_add(1));
        let space = Arc::new(Space::new(config.max_bytes, used));
        let registry = Arc::new(Mutex::new(
            queues
                .into_iter()
                .map(|q| (q.name.clone(), Arc::new(q)))
                .collect::<BTreeMap<_, _>>(),
        ));
        let counters = Arc::new(Counters::default());
        let slot = Arc::new(Slot::new(&file, &dir, config.cache_bytes, db));
        let (jobs, receiver) = mpsc::channel();
        let acks = Arc::new(AckList::default());
        let committer = Committer {
            slot: slot.clone(),
            file: file.clone(),
            dir: dir.clone(),
            registry: registry.clone(),
            space: space.clone(),
            counters: counters.clone(),
            jobs: receiver,
            acks: acks.clone(),
            next_id,
            tables: tables.clone(),
            next_table_id,
            unsynced_commits: 0,
            // The open may have repaired the file, which records no allocator state
            checkpoint_due: true,
            journal,
            record: Vec::new(),
            round: recovered.next - 1,
            applied: recovered.round,
            needs_reset: false,
            lagging: false,
            pending: None,
        };
        let committer = std::thread::Builder::new()
            .name("eip-store-committer".into())
            .spawn(move || committer.run())
            .map_err(|source| StoreError::Io {
                path: dir.clone(),
                source,
            })?;
        Ok(DurableStore {
            shared: Arc::new(Shared {
                dir,
                file,
                config,
                space,
                registry,
                tables,
                counters,
                jobs: Some(jobs),
                acks,
                slot,
                committer: Some(committer),
                lock: Some(lock_file),
                repaired: repaired.load(Ordering::Relaxed),
                journal_damage: recovered.damage,
            }),
        })
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The queue `name`: declared durably (committed before this returns) if new, re-opened with
    /// its records and sequence numbers if it exists. Blocks for one commit when declaring.
    pub fn queue(&self, name: &str) -> Result<QueueLog, StoreError> {
        let existing = lock(&self.shared.registry).get(name).cloned();
        let state = self.declared(existing, |reply| Job::Declare {
            name: name.to_string(),
            reply,
        })?;
        Ok(QueueLog {
            state,
            shared: self.shared.clone(),
        })
    }

    /// The key table `name` ([`KeyTable`]): declared durably (committed before this returns) if
    /// new, re-opened with its entries if it exists. Key tables and queues are apart: a table
    /// may have the name of a queue. Blocks for one commit when declaring.
    pub fn table(&self, name: &str) -> Result<KeyTable, StoreError> {
        let existing = crate::table::lock(&self.shared.tables).get(name).cloned();
        let state = self.declared(existing, |reply| Job::DeclareTable {
            name: name.to_string(),
            reply,
        })?;
        Ok(KeyTable {
            state,
            shared: self.shared.clone(),
        })
    }

    /// `existing`, or what the committer answers to the declaration `job` once it is committed.
    fn declared<S>(
        &self,
        existing: Option<Arc<S>>,
        job: impl FnOnce(SyncSender<Result<Arc<S>, StoreError>>) -> Job,
    ) -> Result<Arc<S>, StoreError> {
        if let Some(state) = existing {
            return Ok(state);
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.shared
            .send(job(reply))
            .map_err(|_| self.shared.closed_error())?;
        answer.recv().map_err(|_| self.shared.closed_error())?
    }

    /// The name of every declared key table, sorted.
    pub fn table_names(&self) -> Vec<String> {
        crate::table::lock(&self.shared.tables)
            .keys()
            .cloned()
            .collect()
    }

    /// A new, empty [`Batch`]: acks, appends, puts and removes of this store committed together,
    /// all or nothing.
    pub fn batch(&self) -> Batch {
        Batch::new(self.shared.clone())
    }

    /// The name of every declared queue, sorted.
    pub fn queue_names(&self) -> Vec<String> {
        lock(&self.shared.registry).keys().cloned().collect()
    }

    /// Removes the queue `name` and its records, durably; answers how many records it held
    /// (0 if there was no such queue). Handles on the queue fail from then on with
    /// [`StoreError::QueueRemoved`]. Declaring the name again creates a new, empty queue whose
    /// sequence numbers start at 0.
    pub async fn remove_queue(&self, name: &str) -> Result<u64, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Remove {
            name: name.to_string(),
            reply,
        };
        self.shared
            .send(job)
            .map_err(|_| self.shared.closed_error())?;
        answer.await.map_err(|_| self.shared.closed_error())?
    }

    /// Bytes of live records (appended, committed or pending, and not deleted by a committed
    /// ack) and of key tables' entries (keys and values, put and not yet replaced or removed).
    /// An ack frees its record's bytes once it is committed, within a few milliseconds.
    pub fn used_bytes(&self) -> u64 {
        self.shared.space.used()
    }

    /// The limit of [`used_bytes`](Self::used_bytes), from [`StoreConfig::max_bytes`].
    pub fn max_bytes(&self) -> Option<u64> {
        self.shared.space.max()
    }

    /// Commits every pending ack now, durably, with everything before it.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.shared
            .send(Job::Flush { reply })
            .map_err(|_| self.shared.closed_error())?;
        answer.await.map_err(|_| self.shared.closed_error())?
    }

    /// Every record set aside as damaged, in any queue, by queue name and sequence number
    /// (see [`QueueLog::read_page`]).
    pub fn quarantined(&self) -> Result<Vec<QuarantinedRecord>, StoreError> {
        let file = &self.shared.file;
        self.shared.with_database(|db| {
            let txn = crate::quiet::catch(|| db.begin_read())
                .map_err(|detail| StoreError::from_panic(file, detail))?
                .map_err(|e| StoreError::from_redb(file, e))?;
            crate::quarantine::list(&txn, file)
        })
    }

    /// Whether opening the store had to repair its file: the process that had it open before
    /// stopped without closing it, after a commit that was not a checkpoint (see the crate's
    /// documentation, *Why a torn commit is invisible*). The repair reads the whole file.
    pub fn repaired_on_open(&self) -> bool {
        self.shared.repaired
    }

    /// Damage the open found in the write-ahead journal (see the crate's documentation,
    /// *Crashes and the journal*): where, and how many durable rounds after it were not
    /// replayed. `None` after a clean close and after a crash that only cut the journal's tail.
    pub fn journal_damage(&self) -> Option<&JournalDamage> {
        self.shared.journal_damage.as_ref()
    }

    /// What the committer has done since the store was opened.
    pub fn stats(&self) -> StoreStats {
        let counters = &self.shared.counters;
        StoreStats {
            commits: counters.commits.load(Ordering::Relaxed),
            checkpoints: counters.checkpoints.load(Ordering::Relaxed),
            records_committed: counters.records.load(Ordering::Relaxed),
            acks_committed: counters.acks.load(Ordering::Relaxed),
            commit_latency: counters.latency.read(),
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
