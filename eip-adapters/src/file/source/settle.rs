//! Settling claimed files: what becomes of each once its messages were accepted (or refused).
//!
//! The sending loop notes a [`Settle`] per file and carries them out in batches on the
//! blocking task of the next batch, before it claims (so files are moved in and out of the
//! claim directory by one task at a time, never two fighting over its lock), or on a task of
//! their own before the loop waits for room or for new files, and before it stops. Until then
//! the file stays claimed by the run, whose [`Owner`](super::claim::Owner) outlives every
//! settle.

use std::io::{ErrorKind, Write};

use super::claim::Claimed;
use super::config::FileSourceConfig;
use super::dirs::Dirs;
use crate::file::FileError;
use crate::file::dir::{Dir, Missing};
use crate::file::error::shortened;
use eip_core::log::Escaped;

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
pub(super) fn settle_all(dirs: &Dirs, jobs: Vec<Settle>) {
    for job in jobs {
        settle(dirs, job);
    }
}

/// Opens the directories and carries out `jobs`; if a directory is refused, nothing is done
/// and the jobs are handed back, for the next try.
pub(super) fn settle_with_dirs(config: &FileSourceConfig, jobs: Vec<Settle>) -> Vec<Settle> {
    match Dirs::open(config, Missing::Refuse) {
        Ok(dirs) => {
            settle_all(&dirs, jobs);
            Vec::new()
        }
        Err(error) => {
            tracing::error!(error = %Escaped(&error), files = jobs.len(), "files not settled: they stay claimed until the directory is put right");
            jobs
        }
    }
}

fn settle(dirs: &Dirs, job: Settle) {
    match job {
        Settle::Done(claimed) => {
            if let Err(error) = settle_done(dirs, &claimed) {
                let (gone, note) = not_settled(&error);
                if gone {
                    tracing::warn!(error = %Escaped(&error), "{note}");
                } else {
                    tracing::error!(error = %Escaped(&error), "{note}");
                }
            }
        }
        Settle::Failed { claimed, reason } => {
            tracing::warn!(file = %shortened(&claimed.name), reason = %Escaped(&reason), "file moved to the error directory");
            if let Err(error) = settle_error(dirs, &claimed, &reason) {
                tracing::error!(error = %Escaped(&error), "failed file could not be moved to the error directory: it stays claimed");
            }
        }
        Settle::Rejects {
            claimed,
            lines,
            reasons,
        } => {
            if let Err(error) = write_rejects(dirs, &claimed, &lines, &reasons) {
                tracing::error!(error = %Escaped(&error), "malformed JSON lines could not be written to the error directory");
            }
        }
        Settle::Release(claimed) => release(dirs, &claimed),
    }
}

/// What a file whose messages were accepted and that could not be settled becomes: whether it
/// is gone (deleted or moved from the claim directory by someone else: nothing will send it
/// again), and the log line saying so.
fn not_settled(error: &FileError) -> (bool, &'static str) {
    match error {
        FileError::Io { source, .. } if source.kind() == ErrorKind::NotFound => (
            true,
            "file delivered, then found gone from the claim directory (deleted or moved by someone else): nothing to settle, it will not be sent again",
        ),
        _ => (
            false,
            "file delivered but not settled: it stays claimed and a later run will send it again",
        ),
    }
}

/// Back into the watched directory under its name, or, if that is taken, left claimed.
fn release(dirs: &Dirs, claimed: &Claimed) {
    let back = &dirs.watched;
    match dirs
        .claims
        .rename_no_replace(&claimed.file_name, back, &claimed.name)
    {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            tracing::debug!(file = %shortened(&claimed.name), "name taken again: the file stays claimed for a later run");
        }
        Err(e) => {
            let back = back.join(&claimed.name);
            let error = FileError::io(back, "move back from the claim directory")(e);
            tracing::warn!(error = %Escaped(&error), "the file stays claimed for a later run");
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
                .map_err(FileError::io(&claimed.path, "move to done"))
        }
        Err(e) => Err(FileError::io(&claimed.path, "move to done")(e)),
    }
}

/// Moves a failed file to the error directory with `NAME.error` beside it saying `reason`.
fn settle_error(dirs: &Dirs, claimed: &Claimed, reason: &str) -> Result<(), FileError> {
    let name = free_name(&dirs.error, claimed);
    write_note(&dirs.error, &name, reason)?;
    dirs.claims
        .rename(&claimed.file_name, &dirs.error, &name)
        .map_err(FileError::io(&claimed.path, "move to the error directory"))
}

/// Writes `content` (lines that could not be sent) to the error directory under the file's
/// name, with `NAME.error` saying `reason`; the file itself went on.
fn write_rejects(
    dirs: &Dirs,
    claimed: &Claimed,
    content: &[u8],
    reason: &str,
) -> Result<(), FileError> {
    let name = free_name(&dirs.error, claimed);
    write_note(&dirs.error, &name, reason)?;
    write_in(&dirs.error, &name, content)
}

fn write_note(dir: &Dir, name: &str, reason: &str) -> Result<(), FileError> {
    write_in(
        dir,
        &format!("{name}.error"),
        format!("{reason}\n").as_bytes(),
    )
}

/// Writes `content` to `name` in `dir`, never through a symlink.
fn write_in(dir: &Dir, name: &str, content: &[u8]) -> Result<(), FileError> {
    let path = dir.join(name);
    let mut file = dir
        .create_file(name)
        .map_err(FileError::io(&path, "create"))?;
    file.write_all(content)
        .map_err(FileError::io(path, "write"))
}

/// The file's own name in the error directory `dir` if neither it nor its `.error` note is
/// taken, or else the name with its claim tag added.
fn free_name(dir: &Dir, claimed: &Claimed) -> String {
    let note_taken = dir.exists(&format!("{}.error", claimed.name));
    if !dir.exists(&claimed.name) && !note_taken {
        claimed.name.clone()
    } else {
        tagged_name(claimed)
    }
}

/// The file's name with its claim tag added, for a name already taken.
fn tagged_name(claimed: &Claimed) -> String {
    format!("{}.{}", claimed.name, claimed.tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivered_file_found_gone_is_not_said_to_be_sent_again() {
        let gone = FileError::io("/in/.claimed/x", "move to done")(ErrorKind::NotFound.into());
        let (is_gone, note) = not_settled(&gone);
        assert!(is_gone);
        assert!(
            note.contains("delivered") && note.contains("will not be sent again"),
            "{note}"
        );
        let stuck =
            FileError::io("/in/.claimed/x", "move to done")(ErrorKind::PermissionDenied.into());
        let (is_gone, note) = not_settled(&stuck);
        assert!(!is_gone);
        assert!(
            note.contains("stays claimed") && note.contains("send it again"),
            "{note}"
        );
    }
}
