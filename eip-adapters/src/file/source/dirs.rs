//! The inbound adapter's four directories, opened (and its own ones checked) for a batch; see
//! [`Dir`] for what is trusted.

use std::path::Path;

use super::config::{FileSourceConfig, WhenDone};
use crate::file::FileError;
use crate::file::dir::{Dir, Missing};

/// The directories of one adapter, opened and checked for a batch.
pub(super) struct Dirs {
    pub(super) watched: Dir,
    pub(super) claims: Dir,
    /// `None` when accepted files are deleted.
    pub(super) done: Option<Dir>,
    pub(super) error: Dir,
}

impl Dirs {
    /// Opens the watched directory and opens and checks the adapter's own ones.
    pub(super) fn open(config: &FileSourceConfig, missing: Missing) -> Result<Dirs, FileError> {
        let watched = Dir::by_path(&config.dir, missing)?;
        let own = |path: &Path| Dir::own(&watched, path, missing);
        Ok(Dirs {
            claims: own(&config.claim_dir)?,
            done: match &config.when_done {
                WhenDone::MoveTo(done) => Some(own(done)?),
                WhenDone::Delete => None,
            },
            error: own(&config.error_dir)?,
            watched,
        })
    }
}
