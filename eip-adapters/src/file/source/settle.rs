//! Settling claimed files: what becomes of each once its messages were accepted (or refused).
//!
//! The sending loop notes a [`Settle`] per file and carries them out in batches on the
//! blocking task that claims and reads the next batch (so one thread moves files in and out
//! of the claim directory, never two fighting over its lock), or on a task of their own before
//! the loop waits for room or for new files, and before it stops. Until then the file stays
//! claimed by the run, whose [`Owner`](super::claim::Owner) outlives every settle.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::claim::Claimed;
use super::config::{FileSourceConfig, WhenDone};
use crate::file::FileError;

/// What becomes of a claimed file.
pub(super) enum Settle {
    /// Its messages were accepted: to the done directory, or deleted.
    Done(Claimed),
    /// It could not be sent: to the error directory, with the reason beside it.
    Failed { claimed: Claimed, reason: String },
    /// Its JSON lines that are not JSON, to the error directory under its name with the
    /// reasons beside them (the file itself goes on).
    Rejects {
        claimed: Claimed,
        lines: Vec<u8>,
        reasons: String,
    },
    /// Nothing of it was sent (the run is stopping): back into the watched directory under its
    /// name, or, if that is taken meanwhile, left claimed for a later run.
    Release(Claimed),
}

/// Carries out `jobs` in order; a file that can not be moved is logged and stays claimed.
pub(super) fn settle_all(config: &FileSourceConfig, jobs: Vec<Settle>) {
    for job in jobs {
        settle(config, job);
    }
}

fn settle(config: &FileSourceConfig, job: Settle) {
    match job {
        Settle::Done(claimed) => {
            if let Err(error) = settle_done(config, &claimed) {
                tracing::error!(%error, "file accepted but not settled: it will be sent again by a later run");
            }
        }
        Settle::Failed { claimed, reason } => {
            tracing::warn!(file = %claimed.name, %reason, "file moved to the error directory");
            if let Err(error) = settle_error(config, &claimed, &reason) {
                tracing::error!(%error, "failed file could not be moved to the error directory");
            }
        }
        Settle::Rejects {
            claimed,
            lines,
            reasons,
        } => {
            if let Err(error) = write_rejects(config, &claimed, &lines, &reasons) {
                tracing::error!(%error, "malformed JSON lines could not be written to the error directory");
            }
        }
        Settle::Release(claimed) => {
            let back = config.dir.join(&claimed.name);
            match rename_no_replace(&claimed.path, &back) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    tracing::debug!(file = %claimed.name, "name taken again: the file stays claimed for a later run");
                }
                Err(e) => {
                    let error = FileError::io(back, "move back from the claim directory")(e);
                    tracing::warn!(%error, "the file stays claimed for a later run");
                }
            }
        }
    }
}

/// Moves (or deletes) a file whose messages were accepted.
fn settle_done(config: &FileSourceConfig, claimed: &Claimed) -> Result<(), FileError> {
    match &config.when_done {
        WhenDone::Delete => {
            fs::remove_file(&claimed.path).map_err(FileError::io(&claimed.path, "delete"))
        }
        WhenDone::MoveTo(done) => {
            // One rename while the plain name is free; the tagged name only if it is taken.
            let plain = done.join(&claimed.name);
            match rename_no_replace(&claimed.path, &plain) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let tagged = tagged(done, claimed);
                    fs::rename(&claimed.path, &tagged)
                        .map_err(FileError::io(tagged, "move to done"))
                }
                Err(e) => Err(FileError::io(plain, "move to done")(e)),
            }
        }
    }
}

/// Moves a failed file to the error directory with `NAME.error` beside it saying `reason`.
fn settle_error(
    config: &FileSourceConfig,
    claimed: &Claimed,
    reason: &str,
) -> Result<(), FileError> {
    let target = free_name(&config.error_dir, claimed);
    write_reason(&target, reason)?;
    fs::rename(&claimed.path, &target).map_err(FileError::io(target, "move to error"))
}

/// Writes `content` (lines that could not be sent) to the error directory under the file's
/// name, with `NAME.error` saying `reason`; the file itself went on.
fn write_rejects(
    config: &FileSourceConfig,
    claimed: &Claimed,
    content: &[u8],
    reason: &str,
) -> Result<(), FileError> {
    let target = free_name(&config.error_dir, claimed);
    write_reason(&target, reason)?;
    fs::write(&target, content).map_err(FileError::io(target, "write"))
}

fn write_reason(target: &Path, reason: &str) -> Result<(), FileError> {
    let mut note = target.as_os_str().to_owned();
    note.push(".error");
    let note = PathBuf::from(note);
    fs::write(&note, format!("{reason}\n")).map_err(FileError::io(note, "write"))
}

/// The file's own name in the error directory `dir` if neither it nor its `.error` note is
/// taken, or else the name with its claim tag added.
fn free_name(dir: &Path, claimed: &Claimed) -> PathBuf {
    let plain = dir.join(&claimed.name);
    let reason_taken = dir.join(format!("{}.error", claimed.name)).exists();
    if plain.symlink_metadata().is_err() && !reason_taken {
        plain
    } else {
        tagged(dir, claimed)
    }
}

fn tagged(dir: &Path, claimed: &Claimed) -> PathBuf {
    dir.join(format!("{}.{}", claimed.name, claimed.tag))
}

/// Renames `from` to `to` unless `to` exists (then `AlreadyExists`, and nothing moved).
/// Atomic where the platform offers it (`renameat2` with `RENAME_NOREPLACE` on Linux);
/// elsewhere, or on a file system without it, a look first and then the rename.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))
        };
        let (c_from, c_to) = (c(from)?, c(to)?);
        // SAFETY: both are NUL-terminated paths that live across the call; AT_FDCWD resolves
        // them as `rename` would.
        let renamed = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                c_from.as_ptr(),
                libc::AT_FDCWD,
                c_to.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if renamed == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
            return Err(e);
        }
        // The file system (or kernel) does not know RENAME_NOREPLACE: look, then rename.
    }
    if to.symlink_metadata().is_ok() {
        return Err(ErrorKind::AlreadyExists.into());
    }
    fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_no_replace_leaves_an_existing_target_alone() {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-noreplace-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        fs::create_dir_all(&dir).unwrap();
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        fs::write(&a, "a").unwrap();
        fs::write(&b, "b").unwrap();
        let refused = rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&a).unwrap(), "a");
        assert_eq!(fs::read_to_string(&b).unwrap(), "b");
        rename_no_replace(&a, &c).unwrap();
        assert!(!a.exists());
        assert_eq!(fs::read_to_string(&c).unwrap(), "a");
        fs::remove_dir_all(&dir).unwrap();
    }
}
