//! The data directory: which files it holds and what each one is for.
//!
//! - `LOCK`: an empty file, exclusively locked (`flock`) by the one open store. A second open, in
//!   this process or another, finds it locked and, after a short wait for the lock
//!   ([`patiently`]), fails with [`StoreError::InUse`]. The operating system drops the lock when the
//!   process dies, so a crash leaves nothing to clean up.
//! - `store.redb`: the redb database holding every queue and record.
//! - `journal`: the write-ahead journal ([`journal`](crate::journal)): the rounds committed since
//!   the database's last checkpoint, replayed by the next open. `journal.new` is one being
//!   created; `journal.damaged.<round>` a copy of a journal found damaged, kept for inspection.
//! - `store.redb.new`: a database being created, renamed to `store.redb` once it is initialised
//!   and on disk; one left over was a creation that never finished and is made again.
//! - `FORMAT`: written once the database is initialised, `eip-store 2` and a newline. Its presence
//!   tells a later open that a missing or empty `store.redb` is a lost database, not a new one, so
//!   records never vanish without an error; its version must be one this build reads
//!   ([`check_format`]), so a store written by a later eip is refused before anything reads it.
//!   A store of format 1 (before the journal) is opened and brought to 2: a build that does not
//!   know the journal then refuses it rather than miss the rounds the journal holds.
//!
//! Before redb sees `store.redb`, its first bytes are checked for redb's magic number: anything
//! else (a text file, random bytes) is [`StoreError::Foreign`].

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StoreError;
use crate::schema::{self, FORMAT_VERSION};

/// The name of the lock file in the data directory.
pub(crate) const LOCK_FILE: &str = "LOCK";
/// The name of the database file in the data directory.
pub(crate) const DATABASE_FILE: &str = "store.redb";
/// The name of the marker written once the database exists.
pub(crate) const FORMAT_FILE: &str = "FORMAT";
/// What `FORMAT` holds: this word, a space, the format version, a newline.
const FORMAT_WORD: &str = "eip-store";

/// redb's magic number, the first bytes of every redb file.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How long an open retries a lock found taken before it answers [`StoreError::InUse`].
///
/// A process that starts a child (`fork`, then `exec`) from one thread while another thread closes
/// a store lends the child a copy of the store's open files, and with them their locks, until the
/// child's `exec` closes them: for that moment the store looks open although nothing has it. A
/// store that really is open elsewhere is reported after this wait.
const LOCK_PATIENCE: Duration = Duration::from_millis(500);

/// Runs `open` until it succeeds, fails with anything but [`StoreError::InUse`], or
/// [`LOCK_PATIENCE`] has passed. `open` must change nothing when it fails with `InUse`.
pub(crate) fn patiently<T>(
    mut open: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match open() {
            Err(StoreError::InUse { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Creates the directory if needed and takes its lock, held for as long as the file is open.
pub(crate) fn lock(dir: &Path) -> Result<File, StoreError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::InUse {
            dir: dir.to_path_buf(),
        }),
        Err(TryLockError::Error(source)) => Err(StoreError::Io { path, source }),
    }
}

/// Checks that `FORMAT`, if the directory has one, names a format this build reads: anything
/// else (another version, other text) is [`StoreError::UnsupportedFormat`] naming the file, what
/// it says and the newest version supported. Answers the version, if there is a `FORMAT`.
pub(crate) fn check_format(dir: &Path) -> Result<Option<u64>, StoreError> {
    let path = dir.join(FORMAT_FILE);
    let mut content = Vec::new();
    match File::open(&path) {
        // A few bytes say it all; a huge file is not read whole
        Ok(file) => file.take(64).read_to_end(&mut content).map_err(io(&path))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::Io { path, source }),
    };
    let text = String::from_utf8_lossy(&content);
    let found = match text.trim_end().split_once(' ') {
        Some((FORMAT_WORD, version)) => version.to_string(),
        _ => format!("{:?}", text.trim_end()),
    };
    if let Ok(version) = found.parse::<u64>()
        && schema::is_readable(version)
    {
        return Ok(Some(version));
    }
    Err(StoreError::UnsupportedFormat {
        file: path,
        found,
        supported: FORMAT_VERSION,
    })
}

/// Checks, before redb opens it, that the database file is absent, empty and new, or starts like
/// a redb file; and that it is not missing or empty while `FORMAT` says it existed.
pub(crate) fn check_database_file(dir: &Path) -> Result<PathBuf, StoreError> {
    let path = dir.join(DATABASE_FILE);
    let initialised = dir.join(FORMAT_FILE).exists();
    let len = match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => {
            return Err(StoreError::Foreign {
                file: path,
                reason: "it is not a regular file".into(),
            });
        }
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(source) => return Err(StoreError::Io { path, source }),
    };
    if len == 0 {
        if initialised {
            return Err(StoreError::Damaged {
                file: path,
                reason: format!(
                    "it is missing or empty, yet {FORMAT_FILE} says this directory held a store"
                ),
            });
        }
        return Ok(path);
    }
    let mut start = [0u8; REDB_MAGIC.len()];
    let mut file = File::open(&path).map_err(io(&path))?;
    let read = read_up_to(&mut file, &mut start).map_err(io(&path))?;
    if start[..read] != REDB_MAGIC[..read] {
        return Err(StoreError::Foreign {
            file: path,
            reason: "it does not start with redb's magic number".into(),
        });
    }
    if read < REDB_MAGIC.len() {
        return Err(StoreError::Damaged {
            file: path,
            reason: format!("it is truncated to {len} bytes"),
        });
    }
    Ok(path)
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Writes `FORMAT` (durably, with its directory entry) once the database is initialised, or
/// brings an older one (`found`) to this build's version.
pub(crate) fn mark_initialised(dir: &Path, found: Option<u64>) -> Result<(), StoreError> {
    let path = dir.join(FORMAT_FILE);
    if found == Some(FORMAT_VERSION) || (found.is_none() && path.exists()) {
        return Ok(());
    }
    // Written whole under another name and renamed: a process killed halfway leaves no
    // `FORMAT` that is empty or cut short, which every later open would refuse.
    let new = dir.join(format!("{FORMAT_FILE}.new"));
    let mut file = File::create(&new).map_err(io(&new))?;
    let content = format!("{FORMAT_WORD} {FORMAT_VERSION}\n");
    file.write_all(content.as_bytes()).map_err(io(&new))?;
    file.sync_all().map_err(io(&new))?;
    std::fs::rename(&new, &path).map_err(io(&path))?;
    // The directory entry too, or a power loss could forget the file
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}
