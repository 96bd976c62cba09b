//! Claiming files by atomic rename, finding claims whose owner is gone, and reading a batch.
//! A batch's files are all claimed before the first is read, so the next batch's claims can
//! start while this one is read.
//!
//! A claimed file is named `PID-TOKEN-SEQ.NAME` in the claim directory: the owner's process
//! id, the token of the adapter run within that process, a sequence number, and the original
//! name. A claim is *abandoned* when its process is not running, or when it is this process
//! and no running adapter here holds the token. Abandoned claims are claimed again by rename,
//! like new files, so of two adapters that find one only one gets it.

use std::collections::{BTreeSet, VecDeque};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::config::{FileSourceConfig, ReadMode};
use super::dirs::Dirs;
use super::read::{self, Contents};
use crate::file::FileError;
use crate::file::dir::{Dir, Missing};
use eip_core::Message;
use eip_core::log::Escaped;

/// The tokens of the adapter runs alive in this process.
static LIVE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// A file found to take: new in the directory, or abandoned in the claim directory.
#[derive(Debug)]
pub(super) struct Candidate {
    /// Its name where it is now.
    file_name: String,
    /// Its name in the watched directory.
    name: String,
    /// Whether it is an abandoned claim (in the claim directory), not a new file.
    abandoned: bool,
}

/// A file this adapter run holds in the claim directory.
#[derive(Debug, Clone)]
pub(super) struct Claimed {
    /// Its full path, for what is said of it.
    pub(super) path: PathBuf,
    /// Its name in the claim directory: `TAG.NAME`.
    pub(super) file_name: String,
    /// The name it had in the watched directory.
    pub(super) name: String,
    /// Its claim prefix, unique: used to keep done and error names apart.
    pub(super) tag: String,
}

/// One adapter run's identity; claims made under it are abandoned once it is dropped.
pub(super) struct Owner {
    token: u64,
}

impl Owner {
    pub(super) fn new() -> Self {
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        live().insert(token);
        Owner { token }
    }

    /// Renames `candidate` into the claim directory under this owner; `None` if another
    /// adapter took it first.
    pub(super) fn claim(
        &self,
        candidate: Candidate,
        dirs: &Dirs,
    ) -> Result<Option<Claimed>, FileError> {
        let tag = format!(
            "{}-{}-{}",
            std::process::id(),
            self.token,
            NEXT_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let file_name = format!("{tag}.{}", candidate.name);
        let from = if candidate.abandoned {
            &dirs.claims
        } else {
            &dirs.watched
        };
        match from.rename(&candidate.file_name, &dirs.claims, &file_name) {
            Ok(()) => Ok(Some(Claimed {
                path: dirs.claims.join(&file_name),
                file_name,
                name: candidate.name,
                tag,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FileError::io(
                from.join(&candidate.file_name),
                "rename into the claim directory",
            )(e)),
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        live().remove(&self.token);
    }
}

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u64>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Creates the watched, claim, done and error directories that are missing, and checks that
/// the adapter may trust them (see `dir.rs`): the adapter does not start otherwise.
pub(super) fn prepare(config: &FileSourceConfig) -> Result<(), FileError> {
    Dirs::open(config, Missing::Create).map(drop)
}

/// What there is to take: abandoned claims first, then new files in name order.
pub(super) fn scan(config: &FileSourceConfig) -> Result<VecDeque<Candidate>, FileError> {
    let mut found = VecDeque::new();
    // Listed only once checked: a claim directory swapped for a link is not read through it.
    let watched = Dir::by_path(&config.dir, Missing::Refuse)?;
    Dir::own(&watched, &config.claim_dir, Missing::Refuse)?;
    for (_, file_name) in list(&config.claim_dir)? {
        if let Some((pid, token, name)) = parse_claim(&file_name)
            && !owner_alive(pid, token)
        {
            found.push_back(Candidate {
                name: name.to_owned(),
                file_name,
                abandoned: true,
            });
        }
    }
    let now = SystemTime::now();
    let mut new = Vec::new();
    for (entry, name) in list(&config.dir)? {
        if name.starts_with('.') || !config.glob.matches(&name) {
            continue;
        }
        // The type from the listing itself (no `stat` where the file system says it), not
        // followed. A symlink is taken like a file, but its claim moves the link itself and
        // the read refuses it (`O_NOFOLLOW`), so it goes to the error directory unfollowed.
        // Directories and special files are left alone.
        if !entry
            .file_type()
            .is_ok_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        if !config.min_age.is_zero() {
            let young = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age < config.min_age);
            if young {
                continue;
            }
        }
        new.push(Candidate {
            file_name: name.clone(),
            name,
            abandoned: false,
        });
    }
    new.sort_by(|a, b| a.name.cmp(&b.name));
    found.extend(new);
    Ok(found)
}

/// The entries of `dir` with UTF-8 names (others are left alone, with a warning).
fn list(dir: &Path) -> Result<Vec<(fs::DirEntry, String)>, FileError> {
    let entries = fs::read_dir(dir).map_err(FileError::io(dir, "list"))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(FileError::io(dir, "list"))?;
        match entry.file_name().into_string() {
            Ok(name) => out.push((entry, name)),
            Err(name) => {
                tracing::warn!(dir = %dir.display(), name = ?name, "file name is not UTF-8: left alone")
            }
        }
    }
    Ok(out)
}

/// A claimed file and what reading it gave.
pub(super) struct Taken {
    pub(super) claimed: Claimed,
    pub(super) body: Result<Body, FileError>,
}

/// A claimed file's content, made ready for sending.
pub(super) enum Body {
    /// [`ReadMode::WholeFile`]: its one message.
    Whole(Message),
    /// [`ReadMode::JsonLines`]: its bytes, split into messages as they are sent.
    Lines(Contents),
    /// A record format: the file open, streamed record by record as it is sent.
    Stream(read::Opened),
}

/// Claims up to `max` files from the front of `candidates`, in order, without reading them.
/// Candidates another adapter took first are skipped; those not reached stay in `candidates`.
pub(super) fn claim_batch(
    owner: &Owner,
    dirs: &Dirs,
    candidates: &mut VecDeque<Candidate>,
    max: usize,
) -> Vec<Claimed> {
    let mut claimed = Vec::new();
    while claimed.len() < max {
        let Some(candidate) = candidates.pop_front() else {
            break;
        };
        match owner.claim(candidate, dirs) {
            Ok(Some(file)) => claimed.push(file),
            Ok(None) => {} // another adapter took it
            Err(error) => {
                tracing::warn!(error = %Escaped(&error), "file adapter could not claim a file")
            }
        }
    }
    claimed
}

/// Reads claimed files from the front of `claimed`, in order, until the files read hold
/// `budget` bytes, so a batch holds at most `budget` bytes plus one file's size limit. Those
/// not reached stay in `claimed`, still held by this run.
pub(super) fn read_batch(
    config: &FileSourceConfig,
    dirs: &Dirs,
    claimed: &mut VecDeque<Claimed>,
    budget: u64,
) -> Vec<Taken> {
    let mut taken = Vec::new();
    let mut bytes = 0u64;
    while bytes < budget {
        let Some(claimed) = claimed.pop_front() else {
            break;
        };
        if config.records.is_some() {
            // Opened only: its bytes are read as it is sent, so they count for no budget.
            let body = read::open(&dirs.claims, &claimed, config.max_size).map(Body::Stream);
            taken.push(Taken { claimed, body });
            continue;
        }
        let body = read::read(&dirs.claims, &claimed, config.max_size).map(|contents| {
            bytes += contents.bytes.len() as u64;
            match config.mode {
                ReadMode::WholeFile => Body::Whole(contents.whole(&claimed.name)),
                ReadMode::JsonLines => Body::Lines(contents),
            }
        });
        taken.push(Taken { claimed, body });
    }
    taken
}

/// `PID-TOKEN-SEQ.NAME` → (pid, token, name).
fn parse_claim(file_name: &str) -> Option<(u32, u64, &str)> {
    let (tag, name) = file_name.split_once('.')?;
    let mut fields = tag.splitn(3, '-');
    let pid = fields.next()?.parse().ok()?;
    let token = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    (!name.is_empty()).then_some((pid, token, name))
}

fn owner_alive(pid: u32, token: u64) -> bool {
    if pid == std::process::id() {
        live().contains(&token)
    } else {
        process_alive(pid)
    }
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_names_parse_back_to_owner_and_original_name() {
        assert_eq!(
            parse_claim("12-3-4.orders.2024.json"),
            Some((12, 3, "orders.2024.json"))
        );
        assert_eq!(parse_claim("junk.json"), None);
        assert_eq!(parse_claim("1-2.x"), None);
        assert_eq!(parse_claim("1-2-3."), None);
    }

    #[test]
    fn a_claim_of_this_process_is_abandoned_once_its_owner_is_dropped() {
        let owner = Owner::new();
        let token = owner.token;
        assert!(owner_alive(std::process::id(), token));
        drop(owner);
        assert!(!owner_alive(std::process::id(), token));
    }
}
