//! `eip run`'s reload: on SIGHUP, and with `--watch` whenever the flow file changes on disk, the
//! file is read again and what changed is applied to the running flow as
//! [`eip_dsl::control::reload`] says (new parts started, removed ones drained then stopped,
//! changed ones replaced; a file with problems, one changing what needs a restart, or one
//! whose new parts do not start, is refused and the flow goes on unchanged). Every reload
//! says on standard error what it did, in one line, or why it was refused. SIGHUP never stops
//! the process.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use eip_dsl::compile::RunningFlow;
use eip_dsl::control::RuntimeChanges;
use eip_dsl::control::reload::{FlowFile, NotReloaded, Reloaded};

/// How often `--watch` looks at the flow file.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What a reload needs, and what `--watch` saw of the file last.
pub struct Reloader {
    file: FlowFile,
    changes: Arc<RuntimeChanges>,
    watch: bool,
    /// How long a reload waits for what it drains (`--drain-timeout`).
    drain: Duration,
    seen: Option<(SystemTime, u64)>,
}

impl Reloader {
    pub fn new(file: FlowFile, changes: Arc<RuntimeChanges>, watch: bool) -> Self {
        let seen = stamp(&file);
        Reloader {
            file,
            changes,
            watch,
            drain: Duration::from_secs(10),
            seen,
        }
    }

    /// Waits at most `drain` for what a reload drains.
    pub fn drain_within(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
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
    pub async fn reload(&mut self, running: &mut RunningFlow, why: &str) {
        eprintln!("[eip] {why}: reloading {}", self.file.path().display());
        // Before the file is read: a change written while it reloads is seen next time.
        self.seen = stamp(&self.file);
        let reloaded = self.file.reload(running, &self.changes, self.drain);
        match reloaded.await {
            Ok(Reloaded::Unchanged) => eprintln!("[eip] reload: no change"),
            Ok(Reloaded::Applied(said)) => {
                let said = said.join(", ");
                eprintln!("[eip] reload: {}", eip_core::log::Escaped(&said));
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
    }
}

/// The file's modification time and length, if it can be read.
fn stamp(file: &FlowFile) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(file.path()).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
