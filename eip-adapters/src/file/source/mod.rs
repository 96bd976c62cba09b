//! The inbound file adapter: files in a directory become messages on a channel.
//!
//! See the [file module](crate::file) for what it guarantees. The loop: list the claim
//! directory for abandoned claims and the watched directory for new files; for each, wait until
//! the channel has room, claim the file by rename, read it, send its messages one at a time,
//! and settle it once the last send completed. When a pass found nothing it waits for the
//! watcher or the poll interval, whichever comes first.

mod claim;
mod config;
mod read;

use std::future::Future;
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::sync::Arc;

use eip_core::Message;
use eip_core::channel::{ChannelSender, InvalidMessageChannel, SendError};
use tokio::sync::Notify;
use tower::{Service, ServiceExt};

use self::claim::{Claimed, Owner};
use self::read::Line;
use super::{FileError, blocking};

pub use config::{
    DEFAULT_MAX_SIZE, FileGlob, FileSourceBuilder, FileSourceConfig, ReadMode, WhenDone,
};

/// The headers the inbound adapter sets on each message.
pub mod headers {
    /// The file's name in the watched directory (text).
    pub const NAME: &str = "file-name";
    /// The file's size in bytes (integer).
    pub const SIZE: &str = "file-size";
    /// When the file was last modified, in milliseconds since the Unix epoch (integer).
    pub const MODIFIED: &str = "file-modified";
    /// In JSON-lines mode, the line's number, from 1 (integer).
    pub const LINE: &str = "file-line";
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The inbound file channel adapter: feeds the channel behind `S` (usually a
/// [`ChannelSender`]) with the files of a directory.
pub struct FileSource<S = ChannelSender> {
    config: Arc<FileSourceConfig>,
    sender: S,
    invalid: Option<InvalidMessageChannel>,
}

/// What processing one file leaves the loop to do.
enum Flow {
    Go,
    Shutdown,
    Stop(FileError),
}

/// Why a send failed: the channel is closed (the adapter stops), or it refused this message.
enum Failure {
    Closed(String),
    Refused(String),
}

impl FileSource {
    /// A builder for the configuration of an adapter watching `dir`.
    pub fn builder(dir: impl Into<PathBuf>) -> FileSourceBuilder {
        FileSourceBuilder::new(dir.into())
    }
}

impl<S> FileSource<S>
where
    S: Service<Message> + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
{
    /// An adapter feeding `sender` as `config` says.
    pub fn new(config: FileSourceConfig, sender: S) -> Self {
        FileSource {
            config: Arc::new(config),
            sender,
            invalid: None,
        }
    }

    /// Where JSON lines that are not JSON go, each with its reason; without one they are
    /// written to the error directory.
    pub fn invalid_message_channel(mut self, channel: InvalidMessageChannel) -> Self {
        self.invalid = Some(channel);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &FileSourceConfig {
        &self.config
    }

    /// Runs until `shutdown` completes (then returns `Ok`), or the channel is closed or its
    /// directories can not be created (then the error). A file being sent when `shutdown`
    /// completes is finished first, except a JSON-lines file waiting for room for its next
    /// line, which stays claimed and is taken again by the next run.
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> Result<(), FileError> {
        let config = self.config.clone();
        blocking({
            let config = config.clone();
            move || claim::prepare(&config)
        })
        .await?;
        let owner = Arc::new(Owner::new());
        let wake = Arc::new(Notify::new());
        let _watcher = if config.watch {
            watch(&config.dir, wake.clone())
        } else {
            None
        };
        let mut shutdown = pin!(shutdown);
        loop {
            let scanned = blocking({
                let config = config.clone();
                move || claim::scan(&config)
            })
            .await;
            let candidates = scanned.unwrap_or_else(|error| {
                tracing::warn!(%error, "file adapter could not list its directories");
                Vec::new()
            });
            let mut took = false;
            for candidate in candidates {
                // Room first: while the channel is full the file stays where it is.
                match self.ready(&mut shutdown).await {
                    Ok(true) => {}
                    Ok(false) => return Ok(()),
                    Err(reason) => return Err(self.closed(config.dir.clone(), reason)),
                }
                let owner = owner.clone();
                let claim_dir = config.claim_dir.clone();
                let claimed = match blocking(move || owner.claim(candidate, &claim_dir)).await {
                    Ok(Some(claimed)) => claimed,
                    Ok(None) => continue, // another adapter took it
                    Err(error) => {
                        tracing::warn!(%error, "file adapter could not claim a file");
                        continue;
                    }
                };
                took = true;
                match self.process(claimed, &mut shutdown).await {
                    Flow::Go => {}
                    Flow::Shutdown => return Ok(()),
                    Flow::Stop(error) => return Err(error),
                }
            }
            if !took {
                tokio::select! {
                    biased;
                    () = &mut shutdown => return Ok(()),
                    () = wake.notified() => {}
                    () = tokio::time::sleep(config.poll_interval) => {}
                }
            }
        }
    }

    /// Runs on the current tokio runtime until the handle shuts it down.
    pub fn spawn(self) -> FileSourceHandle
    where
        S: Send,
    {
        let stop = Arc::new(Notify::new());
        let signal = stop.clone();
        let task = tokio::spawn(self.run_until(async move { signal.notified().await }));
        FileSourceHandle { stop, task }
    }

    /// Waits for room in the channel; `false` if `shutdown` came first.
    async fn ready<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Pin<&mut F>,
    ) -> Result<bool, String> {
        tokio::select! {
            biased;
            () = shutdown.as_mut() => Ok(false),
            ready = self.sender.ready() => ready.map(|_| true).map_err(|e| e.into().to_string()),
        }
    }

    async fn send(&mut self, msg: Message) -> Result<(), Failure> {
        self.sender.call(msg).await.map(drop).map_err(|e| {
            let e: BoxError = e.into();
            match e.downcast_ref::<SendError>() {
                Some(SendError::Closed { .. }) => Failure::Closed(e.to_string()),
                _ => Failure::Refused(e.to_string()),
            }
        })
    }

    async fn process<F: Future<Output = ()>>(
        &mut self,
        claimed: Claimed,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let path = claimed.path.clone();
        let limit = self.config.max_size;
        let contents = match blocking(move || read::read(&path, limit)).await {
            Ok(contents) => contents,
            Err(error) => return self.fail(claimed, error.to_string()).await,
        };
        match self.config.mode {
            ReadMode::WholeFile => {
                let msg = contents.whole(&claimed.name);
                match self.send(msg).await {
                    Ok(()) => self.done(claimed).await,
                    Err(failure) => self.failed_send(claimed, failure, String::new()).await,
                }
            }
            ReadMode::JsonLines => self.send_lines(claimed, contents, shutdown).await,
        }
    }

    /// Sends a JSON-lines file line by line, waiting for room before each.
    async fn send_lines<F: Future<Output = ()>>(
        &mut self,
        claimed: Claimed,
        contents: read::Contents,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let name = claimed.name.clone();
        let lines = match contents.json_lines(&name, &claimed.path) {
            Ok(lines) => lines,
            Err(error) => return self.fail(claimed, error.to_string()).await,
        };
        let mut rejects = Vec::new();
        let mut reasons = Vec::new();
        let mut accepted = 0usize;
        for (n, line) in lines {
            match line {
                Line::Json(msg) => {
                    // The first line uses the room waited for before the claim.
                    if accepted > 0 {
                        match self.ready(shutdown).await {
                            Ok(true) => {}
                            Ok(false) => return Flow::Shutdown,
                            Err(reason) => {
                                let failure = Failure::Closed(reason);
                                let note = format!("line {n}: ");
                                return self.failed_send(claimed, failure, note).await;
                            }
                        }
                    }
                    if let Err(failure) = self.send(msg).await {
                        let note = format!("line {n} ({accepted} lines before it accepted): ");
                        return self.failed_send(claimed, failure, note).await;
                    }
                    accepted += 1;
                }
                Line::Malformed { msg, reason } => {
                    let unplaced = match &self.invalid {
                        Some(invalid) => invalid.put(msg, &self.config.name, reason.clone()).await,
                        None => Err(msg),
                    };
                    if let Err(msg) = unplaced {
                        rejects.extend_from_slice(msg.payload());
                        rejects.push(b'\n');
                        reasons.push(reason);
                    }
                }
            }
        }
        if !rejects.is_empty() {
            let config = self.config.clone();
            let reasons = reasons.join("\n");
            let held = claimed.clone();
            let written =
                blocking(move || claim::write_rejects(&config, &held, &rejects, &reasons)).await;
            if let Err(error) = written {
                tracing::error!(%error, "malformed JSON lines could not be written to the error directory");
            }
        }
        self.done(claimed).await
    }

    async fn failed_send(&mut self, claimed: Claimed, failure: Failure, note: String) -> Flow {
        match failure {
            Failure::Refused(reason) => self.fail(claimed, format!("{note}{reason}")).await,
            Failure::Closed(reason) => {
                let path = claimed.path.clone();
                self.fail(claimed, format!("{note}{reason}")).await;
                Flow::Stop(self.closed(path, reason))
            }
        }
    }

    fn closed(&self, path: PathBuf, reason: String) -> FileError {
        FileError::ChannelClosed { path, reason }
    }

    /// Settles a file whose messages were all accepted.
    async fn done(&mut self, claimed: Claimed) -> Flow {
        let config = self.config.clone();
        let settled = blocking(move || claim::settle_done(&config, &claimed)).await;
        if let Err(error) = settled {
            tracing::error!(%error, "file accepted but not settled: it will be sent again by a later run");
        }
        Flow::Go
    }

    /// Moves a file to the error directory with `reason`.
    async fn fail(&mut self, claimed: Claimed, reason: String) -> Flow {
        tracing::warn!(file = %claimed.name, %reason, "file moved to the error directory");
        let config = self.config.clone();
        let settled = blocking(move || claim::settle_error(&config, &claimed, &reason)).await;
        if let Err(error) = settled {
            tracing::error!(%error, "failed file could not be moved to the error directory");
        }
        Flow::Go
    }
}

/// A watcher that wakes the loop on any change in `dir`; `None` (polling only) if the
/// platform's watcher can not start.
fn watch(dir: &std::path::Path, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
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
            tracing::warn!(dir = %dir.display(), %error, "no file watcher: polling only");
            None
        }
    }
}

/// A running [`FileSource`].
pub struct FileSourceHandle {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<Result<(), FileError>>,
}

impl FileSourceHandle {
    /// Stops the adapter (the file in hand is finished first) and returns how it ended.
    pub async fn shutdown(self) -> Result<(), FileError> {
        self.stop.notify_one();
        match self.task.await {
            Ok(ended) => ended,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Ok(()),
        }
    }

    /// Whether the adapter has stopped (shut down, or the channel closed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}
