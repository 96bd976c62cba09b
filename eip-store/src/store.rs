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

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableError,
};
use tokio::sync::oneshot;

use crate::batch::Batch;
use crate::committer::{Committer, Counters, Job};
use crate::layout;
use crate::quarantine::QuarantinedRecord;
use crate::queue::{QueueLog, QueueState};
use crate::schema::{self, FORMAT_KEY, FORMAT_VERSION, META, QUEUES};
use crate::slot::Slot;
use crate::space::Space;
use crate::table::{KeyTable, TableRegistry, TableState};
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
    pub(crate) slot: Arc<Slot>,
    committer: Option<JoinHandle<()>>,
    /// Held (locked) for as long as the store is open; dropped last.
    lock: Option<File>,
    /// Whether the open had to repair the file.
    repaired: bool,
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
        let lock_file = layout::lock(&dir)?;
        layout::check_format(&dir)?;
        let file = layout::check_database_file(&dir)?;
        let repaired = Arc::new(AtomicBool::new(false));
        let (db, queues, tables) =
            crate::quiet::catch(|| open_database(&file, &config, repaired.clone()))
                .unwrap_or_else(|detail| Err(StoreError::from_panic(&file, detail)))?;
        layout::mark_initialised(&dir)?;

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
        let committer = Committer {
            slot: slot.clone(),
            file: file.clone(),
            dir: dir.clone(),
            registry: registry.clone(),
            space: space.clone(),
            counters: counters.clone(),
            jobs: receiver,
            next_id,
            tables: tables.clone(),
            next_table_id,
            unsynced_commits: 0,
            unsynced_acks: Vec::new(),
            // The open may have repaired the file, which records no allocator state
            checkpoint_due: true,
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
                slot,
                committer: Some(committer),
                lock: Some(lock_file),
                repaired: repaired.load(Ordering::Relaxed),
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

/// Opens (or creates) the database and reads every queue's state from it; `repaired` is set if
/// redb had to repair the file (a crash after a commit that was not a checkpoint).
fn open_database(
    file: &Path,
    config: &StoreConfig,
    repaired: Arc<AtomicBool>,
) -> Result<(Database, Vec<QueueState>, Vec<TableState>), StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let mut builder = Database::builder();
    builder.set_cache_size(config.cache_bytes);
    builder.set_repair_callback(move |_| repaired.store(true, Ordering::Relaxed));
    if is_absent_or_empty(file)? {
        create_database(&builder, file)?;
    }
    let db = crate::backend::open(&builder, file).map_err(|e| redb_error(e.into()))?;
    initialise(&db, file)?;
    let txn = db.begin_read().map_err(|e| redb_error(e.into()))?;
    let queues = txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
    let mut states = Vec::new();
    for row in queues.iter().map_err(|e| redb_error(e.into()))? {
        let (name, value) = row.map_err(|e| redb_error(e.into()))?;
        let (id, head, bytes) = value.value();
        let name = name.value().to_string();
        let table = schema::records_table_name(id);
        let records = txn
            .open_table(schema::records(&table))
            .map_err(|e| match e {
                TableError::TableDoesNotExist(_) => StoreError::Damaged {
                    file: file.to_path_buf(),
                    reason: format!("queue {name:?} has lost its records table {table:?}"),
                },
                other => redb_error(other.into()),
            })?;
        let len = records.len().map_err(|e| redb_error(e.into()))?;
        // A damaged last page is left to the reads, which work around it
        let last = match crate::quiet::catch(|| records.last().map(|l| l.map(|(k, _)| k.value()))) {
            Ok(Ok(last)) => last,
            Ok(Err(e)) => {
                let e = redb::Error::from(e);
                if !crate::scan::is_damage(&e) {
                    return Err(redb_error(e));
                }
                None
            }
            Err(_) => None,
        };
        if let Some(seq) = last
            && seq >= head
        {
            return Err(StoreError::Damaged {
                file: file.to_path_buf(),
                reason: format!("queue {name:?} holds record {seq} at or past its head {head}"),
            });
        }
        states.push(QueueState::new(name, id, head, len, bytes));
    }
    drop(queues);
    let tables = crate::table::load(&txn, file)?;
    drop(txn);
    Ok((db, states, tables))
}

/// The format version the database records, if it has the store's metadata table.
fn recorded_format(txn: &ReadTransaction, file: &Path) -> Result<Option<u64>, StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    match txn.open_table(META) {
        Ok(meta) => Ok(meta
            .get(FORMAT_KEY)
            .map_err(|e| redb_error(e.into()))?
            .map(|v| v.value())),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(redb_error(e.into())),
    }
}

fn unsupported(file: &Path, found: u64) -> StoreError {
    StoreError::UnsupportedFormat {
        file: file.to_path_buf(),
        found: found.to_string(),
        supported: FORMAT_VERSION,
    }
}

/// Checks that an existing database is a store of the format this build reads.
pub(crate) fn check_format_table(txn: &ReadTransaction, file: &Path) -> Result<(), StoreError> {
    match recorded_format(txn, file)? {
        Some(FORMAT_VERSION) => Ok(()),
        Some(other) => Err(unsupported(file, other)),
        None => Err(StoreError::Foreign {
            file: file.to_path_buf(),
            reason: "a redb database without eip-store's metadata table".into(),
        }),
    }
}

/// Creates the store's tables in a new database; refuses a redb database of another program.
/// Whether `file` is yet to be created: missing, or empty (the layout check has already refused
/// an empty file in a directory that held a store).
fn is_absent_or_empty(file: &Path) -> Result<bool, StoreError> {
    match std::fs::metadata(file) {
        Ok(meta) => Ok(meta.len() == 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(source) => Err(StoreError::Io {
            path: file.to_path_buf(),
            source,
        }),
    }
}

/// Creates the database `file` whole or not at all: it is made and initialised under a
/// temporary name next to it, then renamed into place. A process killed while the engine lays
/// out a new file (its header is written last) leaves only the temporary file, which the next
/// creation starts over; `file` itself is never a half-made database that no open can read.
fn create_database(builder: &redb::Builder, file: &Path) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    let new = file.with_extension("redb.new");
    match std::fs::remove_file(&new) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&new)(e)),
        _ => {}
    }
    let db = crate::backend::create_new(builder, &new)
        .map_err(|e| StoreError::from_redb(&new, redb::Error::from(e)))?;
    initialise(&db, &new)?;
    drop(db);
    std::fs::File::open(&new)
        .and_then(|f| f.sync_all())
        .map_err(io(&new))?;
    std::fs::rename(&new, file).map_err(io(file))?;
    // The new directory entry too, or a power loss could forget the rename
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

pub(crate) fn initialise(db: &Database, file: &Path) -> Result<(), StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let txn = db.begin_read().map_err(|e| redb_error(e.into()))?;
    match recorded_format(&txn, file)? {
        Some(FORMAT_VERSION) => return Ok(()),
        Some(other) => return Err(unsupported(file, other)),
        None => {}
    }
    let tables = txn.list_tables().map_err(|e| redb_error(e.into()))?.count();
    if tables > 0 {
        return Err(StoreError::Foreign {
            file: file.to_path_buf(),
            reason: "a redb database of another program".into(),
        });
    }
    drop(txn);
    let txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| redb_error(e.into()))?;
        meta.insert(FORMAT_KEY, FORMAT_VERSION)
            .map_err(|e| redb_error(e.into()))?;
        txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
    }
    txn.commit().map_err(|e| redb_error(e.into()))
}
