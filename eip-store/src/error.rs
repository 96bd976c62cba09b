//! What can go wrong in the store, each error naming the directory or file it concerns.
//!
//! Errors from redb are translated at the boundary ([`StoreError::from_redb`]): a checksum or
//! structure failure becomes [`StoreError::Damaged`], an operating-system failure
//! [`StoreError::Io`], a file redb does not recognise [`StoreError::Foreign`], a handle that
//! latched an earlier failure [`StoreError::Unusable`] (the store reopens the file then).
//! [`StoreError::is_damage`] tells damage (worked around record by record) from a failure of the
//! system (reported as it is).

use std::path::{Path, PathBuf};

/// An error of the durable store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The data directory is already open, in this process or another one.
    #[error("the store in {} is in use: another handle, in this or another process, has it open", dir.display())]
    InUse {
        /// The data directory.
        dir: PathBuf,
    },
    /// A file of the store exists but its content cannot be trusted.
    #[error("the store file {} is damaged: {reason}", file.display())]
    Damaged {
        /// The damaged file.
        file: PathBuf,
        /// What was found wrong.
        reason: String,
    },
    /// The data directory holds a store of a format this build does not read (a newer eip, or
    /// a damaged `FORMAT` file).
    #[error(
        "{} says the store has format {found}; this build of eip reads format {supported} (and format 1, which it brings up to date)",
        file.display()
    )]
    UnsupportedFormat {
        /// The file that holds the version (`FORMAT`, or the database's own record of it).
        file: PathBuf,
        /// The version found, as written there.
        found: String,
        /// The version this build writes, the newest it reads.
        supported: u64,
    },
    /// A file where the store expects its database is something else.
    #[error("{} is not an eip store database: {reason}", file.display())]
    Foreign {
        /// The file that is not the store's.
        file: PathBuf,
        /// What it looks like instead.
        reason: String,
    },
    /// Accepting the record would pass the store's byte limit, and no acks freed room in time.
    #[error(
        "the store in {} is full: its records not yet acknowledged would pass the limit of {max_bytes} bytes",
        dir.display()
    )]
    Full {
        /// The data directory.
        dir: PathBuf,
        /// The configured limit, [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes).
        max_bytes: u64,
    },
    /// A single record larger than the store can ever hold: waiting for acks would not help.
    #[error("a record of {len} bytes can never fit the store in {}: its limit is {max_bytes} bytes", dir.display())]
    RecordTooLarge {
        /// The data directory.
        dir: PathBuf,
        /// The size of the refused record.
        len: u64,
        /// The limit it passes.
        max_bytes: u64,
    },
    /// The operating system refused an operation on a file of the store.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The queue was removed with [`DurableStore::remove_queue`](crate::DurableStore::remove_queue).
    #[error("queue {name:?} of the store in {} was removed", dir.display())]
    QueueRemoved {
        /// The data directory.
        dir: PathBuf,
        /// The removed queue.
        name: String,
    },
    /// The storage engine's handle on the file failed and stays failed: an earlier write to it
    /// failed, or it panicked on a damaged page while it held a lock of its own. The store
    /// reopens the file and tries once more before this reaches the caller; it means that
    /// reopening did not help (yet).
    #[error("the store file {} can not be used: {reason}", file.display())]
    Unusable {
        /// The database file.
        file: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A batch was given a queue or key table of another store: a batch commits in one store.
    #[error("a batch of the store in {} was given a handle of the store in {}", dir.display(), other.display())]
    OtherStore {
        /// The batch's data directory.
        dir: PathBuf,
        /// The data directory of the handle given.
        other: PathBuf,
    },
    /// The store's committer has stopped, after a fatal error; nothing more can be written.
    #[error("the store in {} is closed", dir.display())]
    Closed {
        /// The data directory.
        dir: PathBuf,
    },
}

impl StoreError {
    /// Translates an error of redb about the database `file`.
    pub(crate) fn from_redb(file: &Path, error: impl Into<redb::Error>) -> StoreError {
        let damaged = |reason: String| StoreError::Damaged {
            file: file.to_path_buf(),
            reason,
        };
        match error.into() {
            redb::Error::Io(source) => StoreError::Io {
                path: file.to_path_buf(),
                source,
            },
            redb::Error::PreviousIo => StoreError::Unusable {
                file: file.to_path_buf(),
                reason: "an earlier write to it failed".into(),
            },
            redb::Error::LockPoisoned(location) => StoreError::Unusable {
                file: file.to_path_buf(),
                reason: format!("the storage engine panicked while it held a lock ({location})"),
            },
            redb::Error::DatabaseAlreadyOpen => StoreError::InUse {
                dir: file.parent().unwrap_or(file).to_path_buf(),
            },
            redb::Error::UpgradeRequired(version) => StoreError::Foreign {
                file: file.to_path_buf(),
                reason: format!(
                    "a redb database of file format {version}, not the one this build reads"
                ),
            },
            redb::Error::Corrupted(reason) => damaged(reason),
            other => damaged(other.to_string()),
        }
    }

    /// Whether this is damage to the files (a record, a page, a table), as opposed to the
    /// operating system failing or the store being in use, full or closed.
    pub fn is_damage(&self) -> bool {
        matches!(self, StoreError::Damaged { .. })
    }

    /// A copy of this error for a second recipient (a batch's failure goes to every ticket).
    pub(crate) fn duplicate(&self) -> StoreError {
        match self {
            StoreError::InUse { dir } => StoreError::InUse { dir: dir.clone() },
            StoreError::Damaged { file, reason } => StoreError::Damaged {
                file: file.clone(),
                reason: reason.clone(),
            },
            StoreError::Foreign { file, reason } => StoreError::Foreign {
                file: file.clone(),
                reason: reason.clone(),
            },
            StoreError::UnsupportedFormat {
                file,
                found,
                supported,
            } => StoreError::UnsupportedFormat {
                file: file.clone(),
                found: found.clone(),
                supported: *supported,
            },
            StoreError::Full { dir, max_bytes } => StoreError::Full {
                dir: dir.clone(),
                max_bytes: *max_bytes,
            },
            StoreError::RecordTooLarge {
                dir,
                len,
                max_bytes,
            } => StoreError::RecordTooLarge {
                dir: dir.clone(),
                len: *len,
                max_bytes: *max_bytes,
            },
            StoreError::Io { path, source } => StoreError::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            StoreError::QueueRemoved { dir, name } => StoreError::QueueRemoved {
                dir: dir.clone(),
                name: name.clone(),
            },
            StoreError::Unusable { file, reason } => StoreError::Unusable {
                file: file.clone(),
                reason: reason.clone(),
            },
            StoreError::OtherStore { dir, other } => StoreError::OtherStore {
                dir: dir.clone(),
                other: other.clone(),
            },
            StoreError::Closed { dir } => StoreError::Closed { dir: dir.clone() },
        }
    }

    /// The error for a panic caught inside redb while it read `file` (its message, `detail`).
    pub(crate) fn from_panic(file: &Path, detail: String) -> StoreError {
        StoreError::Damaged {
            file: file.to_path_buf(),
            reason: format!("the storage engine failed reading it ({detail})"),
        }
    }
}
