//! The platform's file watcher on the watched directory, for prompt pick-up.
//!
//! It only says "look again": what is there is decided by the next listing. It is paused
//! while passes find files (the loop lists again anyway, and each claim would otherwise wake
//! the watcher's thread), and resumed before the loop waits; a resumed watcher has missed what
//! happened meanwhile, so the loop lists once more before it waits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eip_core::log::Escaped;
use notify::Watcher;
use tokio::sync::Notify;

/// A watcher waking the loop on any change in one directory; polling only without one.
pub(super) struct DirWatch {
    watcher: Option<notify::RecommendedWatcher>,
    dir: PathBuf,
    watching: bool,
    wake: Arc<Notify>,
}

impl DirWatch {
    /// Watches `dir`; without `enabled`, or if the platform's watcher can not start, polling
    /// only.
    pub(super) fn start(dir: &Path, enabled: bool) -> Self {
        let wake = Arc::new(Notify::new());
        let watcher = enabled.then(|| watcher(dir, wake.clone())).flatten();
        DirWatch {
            watching: watcher.is_some(),
            watcher,
            dir: dir.to_owned(),
            wake,
        }
    }

    /// Stops watching while the loop is busy.
    pub(super) fn pause(&mut self) {
        if let Some(watcher) = self.watcher.as_mut().filter(|_| self.watching) {
            match watcher.unwatch(&self.dir) {
                Ok(()) => self.watching = false,
                Err(error) => {
                    tracing::debug!(error = %Escaped(&error), "file watcher could not pause")
                }
            }
        }
    }

    /// Watches again; `true` if it had been paused, so changes may have been missed.
    pub(super) fn resume(&mut self) -> bool {
        let Some(watcher) = self.watcher.as_mut().filter(|_| !self.watching) else {
            return false;
        };
        match watcher.watch(&self.dir, notify::RecursiveMode::NonRecursive) {
            Ok(()) => self.watching = true,
            Err(error) => {
                tracing::warn!(dir = %self.dir.display(), error = %Escaped(&error), "file watcher stopped: polling only");
                self.watcher = None;
            }
        }
        true
    }

    /// Completes at the next change seen (or one seen since the last call).
    pub(super) async fn changed(&self) {
        self.wake.notified().await;
    }
}

/// A watcher that wakes the loop on any change in `dir`; `None` (polling only) if the
/// platform's watcher can not start.
fn watcher(dir: &Path, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    let started = notify::recommended_watcher(move |_event: notify::Result<notify::Event>| {
        // Any event, even an error, is a reason to look: the scan decides what is there.
        wake.notify_one();
    })
    .and_then(|mut watcher| {
        watcher.watch(dir, notify::RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    match started {
        Ok(watcher) => Some(watcher),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), error = %Escaped(&error), "no file watcher: polling only");
            None
        }
    }
}
