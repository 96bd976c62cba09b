//! The inbound file adapter: files in a directory become messages on a channel.
//!
//! See the [file module](crate::file) for what it guarantees. The loop: list the claim
//! directory for abandoned claims and the watched directory for new files; then, batch by
//! batch, wait until the channel has room, claim and read a batch of files on one blocking
//! task, send their messages one at a time (each once the channel has room), and hand the
//! batch to the [settle worker](settle) to move each file once its last send completed. When a
//! pass claimed nothing it waits for the watcher or the poll interval, whichever comes first.
//!
//! A batch starts at one file and doubles, up to [`MAX_BATCH_FILES`], while the channel takes every
//! message without making the adapter wait; a wait for room starts it again at one. So a full
//! channel with no consumer gets nothing claimed beyond what it took, and a busy one is fed by
//! a blocking task per batch, not one per file operation.

mod claim;
mod config;
mod read;
mod settle;

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use eip_core::Message;
use eip_core::channel::{ChannelSender, InvalidMessageChannel, SendError};
use tokio::sync::Notify;
use tower::Service;

use self::claim::{Body, Claimed, Owner, Taken};
use self::read::Line;
use self::settle::{Settle, Settler};
use super::{FileError, blocking};

pub use config::{
    DEFAULT_MAX_SIZE, FileGlob, FileSourceBuilder, FileSourceConfig, ReadMode, WhenDone,
};

/// The most files claimed and read at once: beyond the channel's room, at most this many
/// files (and [`MAX_BATCH_BYTES`] plus one file's size limit) wait in memory.
pub const MAX_BATCH_FILES: usize = 64;

/// A batch stops growing once the files read hold this many bytes (4 MiB).
pub const MAX_BATCH_BYTES: u64 = 4 << 20;

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

/// What sending a file leaves the loop to do.
enum Flow {
    Go,
    Shutdown,
    Stop(FileError),
}

/// Whether the channel had room at once, had it after a wait, or `shutdown` came first.
enum Room {
    Now,
    Waited,
    Shutdown,
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
    /// completes is finished first and every accepted file settled before this returns; files
    /// claimed but not sent yet go back into the directory, and a JSON-lines file waiting for
    /// room for its next line stays claimed and is taken again by the next run.
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> Result<(), FileError> {
        let config = self.config.clone();
        blocking({
            let config = config.clone();
            move || claim::prepare(&config)
        })
        .await?;
        let owner = Arc::new(Owner::new());
        let settler = Settler::start(config, owner.clone());
        let ended = self.pump(owner, &settler, shutdown).await;
        settler.finish().await;
        ended
    }

    /// The loop of [`run_until`](Self::run_until): pass after pass, batch after batch.
    async fn pump(
        &mut self,
        owner: Arc<Owner>,
        settler: &Settler,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), FileError> {
        let config = self.config.clone();
        let wake = Arc::new(Notify::new());
        let _watcher = if config.watch {
            watch(&config.dir, wake.clone())
        } else {
            None
        };
        let mut shutdown = pin!(shutdown);
        let mut batch = 1;
        loop {
            let scanned = blocking({
                let config = config.clone();
                move || claim::scan(&config)
            })
            .await;
            let mut candidates = scanned.unwrap_or_else(|error| {
                tracing::warn!(%error, "file adapter could not list its directories");
                VecDeque::new()
            });
            let mut took = false;
            while !candidates.is_empty() {
                // Room first: while the channel is full the files stay where they are.
                match self.ready(&mut shutdown).await {
                    Ok(Room::Now) => {}
                    Ok(Room::Waited) => batch = 1,
                    Ok(Room::Shutdown) => return Ok(()),
                    Err(reason) => return Err(closed(config.dir.clone(), reason)),
                }
                let taken;
                (taken, candidates) = blocking({
                    let (owner, config) = (owner.clone(), config.clone());
                    move || {
                        let taken =
                            claim::take(&owner, &config, &mut candidates, batch, MAX_BATCH_BYTES);
                        (taken, candidates)
                    }
                })
                .await;
                if taken.is_empty() {
                    continue; // others took them
                }
                took = true;
                let (flow, waited) = self.send_batch(taken, settler, &mut shutdown).await;
                match flow {
                    Flow::Go => {}
                    Flow::Shutdown => return Ok(()),
                    Flow::Stop(error) => return Err(error),
                }
                batch = if waited {
                    1
                } else {
                    (batch * 2).min(MAX_BATCH_FILES)
                };
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

    /// Waits for room in the channel, saying whether that took a wait.
    async fn ready<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Pin<&mut F>,
    ) -> Result<Room, String> {
        let sender = &mut self.sender;
        let mut waited = false;
        let ready = std::future::poll_fn(move |cx| match sender.poll_ready(cx) {
            Poll::Pending => {
                waited = true;
                Poll::Pending
            }
            Poll::Ready(ready) => Poll::Ready((ready, waited)),
        });
        tokio::select! {
            biased;
            () = shutdown.as_mut() => Ok(Room::Shutdown),
            ready = ready => match ready {
                (Ok(()), true) => Ok(Room::Waited),
                (Ok(()), false) => Ok(Room::Now),
                (Err(e), _) => Err(e.into().to_string()),
            },
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

    /// Sends the messages of a batch in order and hands what became of each file to the
    /// settler; also says whether the channel made the adapter wait for room.
    async fn send_batch<F: Future<Output = ()>>(
        &mut self,
        taken: Vec<Taken>,
        settler: &Settler,
        shutdown: &mut Pin<&mut F>,
    ) -> (Flow, bool) {
        let mut settled = Vec::with_capacity(taken.len());
        let mut waited = false;
        let mut files = taken.into_iter();
        let mut flow = Flow::Go;
        for file in files.by_ref() {
            flow = self
                .send_file(file, &mut settled, &mut waited, shutdown)
                .await;
            if !matches!(flow, Flow::Go) {
                break;
            }
        }
        // Stopping: what was not reached goes back into the directory.
        settled.extend(files.map(|file| Settle::Release(file.claimed)));
        settler.send(settled).await;
        (flow, waited)
    }

    /// Sends one file's messages, each once the channel has room, and notes in `settled` what
    /// becomes of the file.
    async fn send_file<F: Future<Output = ()>>(
        &mut self,
        file: Taken,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let Taken { claimed, body } = file;
        let body = match body {
            Ok(body) => body,
            Err(error) => {
                let reason = error.to_string();
                settled.push(Settle::Failed { claimed, reason });
                return Flow::Go;
            }
        };
        match body {
            Body::Whole(msg) => {
                match self.ready(shutdown).await {
                    Ok(Room::Now) => {}
                    Ok(Room::Waited) => *waited = true,
                    Ok(Room::Shutdown) => {
                        settled.push(Settle::Release(claimed));
                        return Flow::Shutdown;
                    }
                    Err(reason) => {
                        return failed_send(
                            claimed,
                            Failure::Closed(reason),
                            String::new(),
                            settled,
                        );
                    }
                }
                match self.send(msg).await {
                    Ok(()) => {
                        settled.push(Settle::Done(claimed));
                        Flow::Go
                    }
                    Err(failure) => failed_send(claimed, failure, String::new(), settled),
                }
            }
            Body::Lines(contents) => {
                self.send_lines(claimed, contents, settled, waited, shutdown)
                    .await
            }
        }
    }

    /// Sends a JSON-lines file line by line, waiting for room before each.
    async fn send_lines<F: Future<Output = ()>>(
        &mut self,
        claimed: Claimed,
        contents: read::Contents,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let name = claimed.name.clone();
        let lines = match contents.json_lines(&name, &claimed.path) {
            Ok(lines) => lines,
            Err(error) => {
                let reason = error.to_string();
                settled.push(Settle::Failed { claimed, reason });
                return Flow::Go;
            }
        };
        let mut rejects = Vec::new();
        let mut reasons = Vec::new();
        let mut accepted = 0usize;
        let mut begun = false;
        for (n, line) in lines {
            match line {
                Line::Json(msg) => {
                    match self.ready(shutdown).await {
                        Ok(Room::Now) => {}
                        Ok(Room::Waited) => *waited = true,
                        Ok(Room::Shutdown) if !begun => {
                            settled.push(Settle::Release(claimed));
                            return Flow::Shutdown;
                        }
                        // Part sent: it stays claimed, for the next run to send again.
                        Ok(Room::Shutdown) => return Flow::Shutdown,
                        Err(reason) => {
                            let note = format!("line {n}: ");
                            return failed_send(claimed, Failure::Closed(reason), note, settled);
                        }
                    }
                    if let Err(failure) = self.send(msg).await {
                        let note = format!("line {n} ({accepted} lines before it accepted): ");
                        return failed_send(claimed, failure, note, settled);
                    }
                    accepted += 1;
                    begun = true;
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
                    begun = true;
                }
            }
        }
        if !rejects.is_empty() {
            settled.push(Settle::Rejects {
                claimed: claimed.clone(),
                lines: rejects,
                reasons: reasons.join("\n"),
            });
        }
        settled.push(Settle::Done(claimed));
        Flow::Go
    }
}

/// Notes a file whose send failed for the error directory; a closed channel stops the loop.
fn failed_send(
    claimed: Claimed,
    failure: Failure,
    note: String,
    settled: &mut Vec<Settle>,
) -> Flow {
    match failure {
        Failure::Refused(reason) => {
            settled.push(Settle::Failed {
                claimed,
                reason: format!("{note}{reason}"),
            });
            Flow::Go
        }
        Failure::Closed(reason) => {
            let path = claimed.path.clone();
            settled.push(Settle::Failed {
                claimed,
                reason: format!("{note}{reason}"),
            });
            Flow::Stop(closed(path, reason))
        }
    }
}

fn closed(path: PathBuf, reason: String) -> FileError {
    FileError::ChannelClosed { path, reason }
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
