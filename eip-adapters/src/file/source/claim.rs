//! Claiming files by atomic rename, finding claims whose owner is gone, and settling.
//!
//! A claimed file is named `PID-TOKEN-SEQ.NAME` in the claim directory: the owner's process
//! id, the token of the adapter run within that process, a sequence number, and the original
//! name. A claim is *abandoned* when its process is not running, or when it is this process
//! and no running adapter here holds the token. Abandoned claims are claimed again by rename,
//! like new files, so of two adapters that find one only one gets it.

use std::collections::BTreeSet;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::config::{FileSourceConfig, WhenDone};
use crate::file::FileError;

/// The tokens of the adapter runs alive in this process.
static LIVE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// A file found to take: new in the directory, or abandoned in the claim directory.
#[derive(Debug)]
pub(super) struct Candidate {
    path: PathBuf,
    name: String,
}

/// A file this adapter run holds in the claim directory.
#[derive(Debug, Clone)]
pub(super) struct Claimed {
    pub(super) path: PathBuf,
    /// The name it had in the watched directory.
    pub(super) name: String,
    /// Its claim prefix, unique: used to keep done and error names apart.
    tag: String,
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
        claim_dir: &Path,
    ) -> Result<Option<Claimed>, FileError> {
        let tag = format!(
            "{}-{}-{}",
            std::process::id(),
            self.token,
            NEXT_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = claim_dir.join(format!("{tag}.{}", candidate.name));
        match fs::rename(&candidate.path, &path) {
            Ok(()) => Ok(Some(Claimed {
                path,
                name: candidate.name,
                tag,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FileError::io(
                candidate.path,
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

/// Creates the claim, done and error directories.
pub(super) fn prepare(config: &FileSourceConfig) -> Result<(), FileError> {
    let mut dirs = vec![&config.dir, &config.claim_dir, &config.error_dir];
    if let WhenDone::MoveTo(done) = &config.when_done {
        dirs.push(done);
    }
    for dir in dirs {
        fs::create_dir_all(dir).map_err(FileError::io(dir, "create"))?;
    }
    Ok(())
}

/// What there is to take: abandoned claims first, then new files in name order.
pub(super) fn scan(config: &FileSourceConfig) -> Result<Vec<Candidate>, FileError> {
    let mut found = Vec::new();
    for (path, file_name) in list(&config.claim_dir)? {
        if let Some((pid, token, name)) = parse_claim(&file_name)
            && !owner_alive(pid, token)
        {
            found.push(Candidate {
                path,
                name: name.to_owned(),
            });
        }
    }
    let now = SystemTime::now();
    let mut new = Vec::new();
    for (path, name) in list(&config.dir)? {
        if name.starts_with('.') || !config.glob.matches(&name) {
            continue;
        }
        // `symlink_metadata`: a symlink is never taken, so nothing outside is read through it.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let young = || {
            meta.modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age < config.min_age)
        };
        if meta.is_file() && !(config.min_age > std::time::Duration::ZERO && young()) {
            new.push(Candidate { path, name });
        }
    }
    new.sort_by(|a, b| a.name.cmp(&b.name));
    found.extend(new);
    Ok(found)
}

/// The entries of `dir` with UTF-8 names (others are left alone, with a warning).
fn list(dir: &Path) -> Result<Vec<(PathBuf, String)>, FileError> {
    let entries = fs::read_dir(dir).map_err(FileError::io(dir, "list"))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(FileError::io(dir, "list"))?;
        match entry.file_name().into_string() {
            Ok(name) => out.push((entry.path(), name)),
            Err(name) => {
                tracing::warn!(dir = %dir.display(), name = ?name, "file name is not UTF-8: left alone")
            }
        }
    }
    Ok(out)
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

/// Moves (or deletes) a file whose messages were accepted.
pub(super) fn settle_done(config: &FileSourceConfig, claimed: &Claimed) -> Result<(), FileError> {
    match &config.when_done {
        WhenDone::Delete => {
            fs::remove_file(&claimed.path).map_err(FileError::io(&claimed.path, "delete"))
        }
        WhenDone::MoveTo(done) => {
            let target = free_name(done, claimed, false);
            fs::rename(&claimed.path, &target).map_err(FileError::io(target, "move to done"))
        }
    }
}

/// Moves a failed file to the error directory with `NAME.error` beside it saying `reason`.
pub(super) fn settle_error(
    config: &FileSourceConfig,
    claimed: &Claimed,
    reason: &str,
) -> Result<(), FileError> {
    let target = free_name(&config.error_dir, claimed, true);
    write_reason(&target, reason)?;
    fs::rename(&claimed.path, &target).map_err(FileError::io(target, "move to error"))
}

/// Writes `content` (lines that could not be sent) to the error directory under the file's
/// name, with `NAME.error` saying `reason`; the file itself went on.
pub(super) fn write_rejects(
    config: &FileSourceConfig,
    claimed: &Claimed,
    content: &[u8],
    reason: &str,
) -> Result<(), FileError> {
    let target = free_name(&config.error_dir, claimed, true);
    write_reason(&target, reason)?;
    fs::write(&target, content).map_err(FileError::io(target, "write"))
}

fn write_reason(target: &Path, reason: &str) -> Result<(), FileError> {
    let mut note = target.as_os_str().to_owned();
    note.push(".error");
    let note = PathBuf::from(note);
    fs::write(&note, format!("{reason}\n")).map_err(FileError::io(note, "write"))
}

/// The file's own name in `dir`, or, if taken, the name with its claim tag added.
fn free_name(dir: &Path, claimed: &Claimed, with_reason: bool) -> PathBuf {
    let plain = dir.join(&claimed.name);
    let reason_taken = with_reason && dir.join(format!("{}.error", claimed.name)).exists();
    if plain.symlink_metadata().is_err() && !reason_taken {
        plain
    } else {
        dir.join(format!("{}.{}", claimed.name, claimed.tag))
    }
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
