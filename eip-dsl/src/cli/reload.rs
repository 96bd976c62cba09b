//! `eip run`'s reload: on SIGHUP, and with `--watch` whenever the flow file changes on disk, the
//! file is read again and what changed is applied to the running flow as
//! [`eip_dsl::control::reload`] says (joins and bindings at once; a file with problems, or one
//! changing anything else, is refused and the flow goes on unchanged). SIGHUP never stops
//! the process.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use eip_dsl::compile::FlowView;
use eip_dsl::control::RuntimeChanges;
use eip_dsl::control::reload::{FlowFile, NotReloaded, Reloaded};

/// How often `--watch` looks at the flow file.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What a reload needs, and what `--watch` saw of the file last.
pub struct Reloader {
    file: FlowFile,
    flow: FlowView,
    changes: Arc<RuntimeChanges>,
    watch: bool,
    seen: Option<(SystemTime, u64)>,
}

impl Reloader {
    pub fn new(file: FlowFile, flow: FlowView, changes: Arc<RuntimeChanges>, watch: bool) -> Self {
        let seen = stamp(&file);
        Reloader {
            file,
            flow,
            changes,
            watch,
            seen,
        }
    }

    /// Completes when `--watch` sees the file changed (its time or length); never without
    /// `--watch`.
    pub async fn file_changed(&mut self) {
        if !self.watch {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let now = stamp(&self.file);
            if now != self.seen {
                self.seen = now;
                return;
            }
        }
    }

    /// Reloads the file (`why`: what asked for it), saying on standard error what came of it.
    pub fn reload(&mut self, why: &str) {
        eprintln!("[eip] {why}: reloading {}", self.file.path().display());
        match self.file.reload(&self.flow, &self.changes) {
            Ok(Reloaded::Unchanged) => eprintln!("[eip] reload: no change"),
            Ok(Reloaded::Applied(said)) => {
                for change in said {
                    eprintln!("[eip] reload: {change}");
                }
            }
            Err(NotReloaded::Invalid(errors)) => {
                eprint!("{}", super::report(&errors));
                eprintln!("[eip] reload refused: the flow goes on unchanged");
            }
            Err(e) => eprintln!(
                "[eip] reload refused: {}; the flow goes on unchanged",
                eip_core::log::Escaped(&e)
            ),
        }
        self.seen = stamp(&self.file);
    }
}

/// The file's modification time and length, if it can be read.
fn stamp(file: &FlowFile) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(file.path()).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
