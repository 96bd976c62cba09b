//! The storage engine's handle on the database file, shared by the readers and the committer,
//! and its replacement when it breaks.
//!
//! redb latches its failures: after an I/O error inside a commit (a page pointer on a damaged
//! page that leads past the end of the file, a full disk) every later operation of that handle
//! answers `PreviousIo`, and after a panic while it held an internal lock (a damaged page met
//! while freeing pages) every later one answers `LockPoisoned`. Neither says anything about the
//! file: what was last committed is still there. Left alone, though, one damaged page would
//! stop the whole store for as long as the process runs.
//!
//! So the handle lives in a [`Slot`], and [`Slot::reopen`] replaces it by a fresh open of the
//! file: it stops new readers from taking the handle, waits (bounded) for the readers in flight
//! to finish with the old one, closes it and opens the file again (redb's repair runs if the
//! close could not be completed). Each reopen bumps a generation, so that many who met the same
//! broken handle cause one reopen between them, and reopens are spaced by [`REOPEN_INTERVAL`]
//! so that a failure that repeats (a disk that stays full) does not reopen the file in a loop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::Database;

use crate::StoreError;

/// The shortest time between two reopens of the file.
pub(crate) const REOPEN_INTERVAL: Duration = Duration::from_secs(1);
/// How long a reopen waits for reads in flight on the old handle to finish.
const READERS_LIMIT: Duration = Duration::from_secs(10);

/// The handle as it stands.
enum Handle {
    Open(Arc<Database>),
    /// The last reopen failed: why.
    Failed(String),
    Closed,
}

/// The current handle on the database file.
pub(crate) struct Slot {
    file: PathBuf,
    dir: PathBuf,
    cache_bytes: usize,
    handle: RwLock<Handle>,
    generation: AtomicU64,
    last_reopen: Mutex<Option<Instant>>,
}

impl Slot {
    pub(crate) fn new(file: &Path, dir: &Path, cache_bytes: usize, db: Database) -> Slot {
        Slot {
            file: file.to_path_buf(),
            dir: dir.to_path_buf(),
            cache_bytes,
            handle: RwLock::new(Handle::Open(Arc::new(db))),
            generation: AtomicU64::new(0),
            last_reopen: Mutex::new(None),
        }
    }

    /// The current handle and its generation (to name it in [`reopen`](Self::reopen)).
    pub(crate) fn get(&self) -> Result<(Arc<Database>, u64), StoreError> {
        let handle = self.handle.read().unwrap_or_else(PoisonError::into_inner);
        match &*handle {
            Handle::Open(db) => Ok((db.clone(), self.generation.load(Ordering::Acquire))),
            Handle::Failed(reason) => Err(StoreError::Unusable {
                file: self.file.clone(),
                reason: format!("it could not be reopened: {reason}"),
            }),
            Handle::Closed => Err(StoreError::Closed {
                dir: self.dir.clone(),
            }),
        }
    }

    /// How many times the handle was replaced.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Replaces the handle of generation `seen` by a fresh open of the file; answers whether
    /// this call reopened it. Does nothing (`Ok(false)`) if it was replaced since (someone else
    /// reopened it), and fails without trying if the last
    /// reopen was less than [`REOPEN_INTERVAL`] ago, or if reads in flight keep the old handle
    /// for longer than [`READERS_LIMIT`].
    pub(crate) fn reopen(&self, seen: u64) -> Result<bool, StoreError> {
        let mut handle = self.handle.write().unwrap_or_else(PoisonError::into_inner);
        if self.generation.load(Ordering::Acquire) != seen {
            return Ok(false);
        }
        if matches!(*handle, Handle::Closed) {
            return Err(StoreError::Closed {
                dir: self.dir.clone(),
            });
        }
        let unusable = |reason: String| StoreError::Unusable {
            file: self.file.clone(),
            reason,
        };
        {
            let mut last = self
                .last_reopen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < REOPEN_INTERVAL) {
                return Err(unusable(
                    "it failed again right after it was reopened; the next reopen is tried in a second".into(),
                ));
            }
            *last = Some(Instant::now());
        }
        if let Handle::Open(db) = &*handle {
            let since = Instant::now();
            while Arc::strong_count(db) > 1 {
                if since.elapsed() > READERS_LIMIT {
                    return Err(unusable(format!(
                        "reads on it did not finish within {READERS_LIMIT:?}, so it was not reopened"
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let old = std::mem::replace(&mut *handle, Handle::Closed);
        // Closing a handle that failed can panic in the engine's own bookkeeping
        let _ = crate::quiet::catch(move || drop(old));
        let opened = crate::quiet::catch(|| {
            let mut builder = Database::builder();
            builder.set_cache_size(self.cache_bytes);
            crate::backend::open(&builder, &self.file)
        });
        let outcome = match opened {
            Ok(Ok(db)) => {
                *handle = Handle::Open(Arc::new(db));
                Ok(true)
            }
            Ok(Err(e)) => Err(StoreError::from_redb(&self.file, redb::Error::from(e))),
            Err(detail) => Err(StoreError::from_panic(&self.file, detail)),
        };
        if let Err(error) = &outcome {
            *handle = Handle::Failed(error.to_string());
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        outcome
    }

    /// Closes the handle for good: later calls fail with [`StoreError::Closed`].
    pub(crate) fn close(&self) {
        let old = {
            let mut handle = self.handle.write().unwrap_or_else(PoisonError::into_inner);
            std::mem::replace(&mut *handle, Handle::Closed)
        };
        // Closing writes redb's own bookkeeping, which a damaged page can make panic
        if let Handle::Open(db) = old
            && let Err(detail) = crate::quiet::catch(move || drop(db))
        {
            let error = StoreError::from_panic(&self.file, detail);
            tracing::error!(%error, "eip-store: the store did not close cleanly");
        }
    }
}
