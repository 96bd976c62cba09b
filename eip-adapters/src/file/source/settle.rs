//! Settling claimed files: what becomes of each once its messages were accepted (or refused).
//!
//! The sending loop notes a [`Settle`] per file and carries them out in batches on the
//! blocking task of the next batch, before it claims (so files are moved in and out of the
//! claim directory by one task at a time, never two fighting over its lock), or on a task of
//! their own before the loop waits for room or for new files, and before it stops. Until then
//! the file stays claimed by the run, whose [`Owner`](super::claim::Owner) outlives every
//! settle.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::claim::Claimed;
use super::config::FileSourceConfig;
use super::dir::Dirs;
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
pub(super) fn settle_all(config: &FileSourceConfig, dirs: &Dirs, jobs: Vec<Settle>) {
    for job in jobs {
        settle(config, dirs, job);
    }
}

fn settle(config: &FileSourceConfig, dirs: &Dirs, job: Settle) {
    match job {
        Settle::Done(claimed) => {
            if let Err(error) = settle_done(dirs, &claimed) {
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
            let back = &dirs.watched;
            match dirs
                .claims
                .rename_no_replace(&claimed.file_name, back, &claimed.name)
            {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    tracing::debug!(file = %claimed.name, "name taken again: the file stays claimed for a later run");
                }
                Err(e) => {
                    let back = back.join(&claimed.name);
                    let error = FileError::io(back, "move back from the claim directory")(e);
                    tracing::warn!(%error, "the file stays claimed for a later run");
                }
            }
        }
    }
}

/// Moves (or deletes) a file whose messages were accepted.
fn settle_done(dirs: &Dirs, claimed: &Claimed) -> Result<(), FileError> {
    let Some(done) = &dirs.done else {
        return dirs
            .claims
            .remove(&claimed.file_name)
            .map_err(FileError::io(&claimed.path, "delete"));
    };
    // One rename while the plain name is free; the tagged name only if it is taken.
    match dirs
        .claims
        .rename_no_replace(&claimed.file_name, done, &claimed.name)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let tagged = tagged_name(claimed);
            dirs.claims
                .rename(&claimed.file_name, done, &tagged)
                .map_err(FileError::io(done.join(&tagged), "move to done"))
        }
        Err(e) => Err(FileError::io(done.join(&claimed.name), "move to done")(e)),
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
    dir.join(tagged_name(claimed))
}

/// The file's name with its claim tag added, for a name already taken.
fn tagged_name(claimed: &Claimed) -> String {
    format!("{}.{}", claimed.name, claimed.tag)
}
