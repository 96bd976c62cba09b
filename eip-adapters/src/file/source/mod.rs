//! The inbound file adapter: files in a directory become messages on a channel.
//!
//! See the [file module](crate::file) for what it guarantees. The loop: list the claim
//! directory for abandoned claims and the watched directory for new files; then, batch by
//! batch, wait until the channel has room, claim a batch of files and then read them on one
//! blocking task, send their messages one at a time (each once the channel has room), and note
//! what becomes of each file once its last send completed. The notes are carried out (the
//! files moved to done or error) by the blocking task of the next batch before it claims, or
//! before the loop waits. When a pass claimed nothing the loop waits for the watcher or the
//! poll interval, whichever comes first.
//!
//! A batch starts at one file and doubles, up to [`MAX_BATCH_FILES`], while the channel takes
//! every message without making the adapter wait; a wait for room starts it again at one. At
//! full size the batches overlap: once a batch's files are claimed, the next batch's task
//! starts (moving the files of the batch sent before to done, then claiming), beside this
//! batch's reads and sends. Renames in and out of the claim directory are so made by one task
//! at a time (two would only contend for the directory's lock, and for the kernel's lock on
//! renames across directories), while reading, sending and renaming run side by side. A task
//! names files relative to the directories it holds open (see `file/dir.rs`), so the kernel looks
//! up one name per operation, not the whole path. A full channel with no consumer gets nothing
//! claimed beyond what it took, and a busy one is fed by a blocking task per batch, not one per
//! file operation.

mod claim;
mod config;
mod dirs;
mod read;
mod records;
mod send;
mod settle;
mod watch;

use std::collections::VecDeque;
use std::future::Future;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use eip_core::Message;
use eip_core::channel::{ChannelSender, DeadLetterChannel, InvalidMessageChannel};
use tokio::sync::Notify;
use tower::{Service, ServiceExt};

use self::claim::{Candidate, Claimed, Owner, Taken};
use self::dirs::Dirs;
use self::send::{Flow, closed};
use self::settle::Settle;
use self::watch::DirWatch;
use super::dir::Missing;
use super::{FileError, blocking, joined};
use eip_core::log::Escaped;

pub use config::{
    DEFAULT_MAX_SIZE, FileGlob, FileSourceBuilder, FileSourceConfig, ReadMode, WhenDone,
};
pub use records::{CHUNK_BYTES, Record, RecordFormat, RecordSplitter};

/// The most files in a batch. Files claimed and not yet sent number at most two batches: the
/// one being sent and the one read ahead.
pub const MAX_BATCH_FILES: usize = 64;

/// A batch stops growing once the files read hold this many bytes (4 MiB), so a batch holds
/// at most this plus one file's size limit.
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
///
/// Files are claimed (renamed into the claim directory), then read, in batches of up to
/// [`MAX_BATCH_FILES`] files and [`MAX_BATCH_BYTES`] bytes on one blocking task, and moved to
/// the done directory once their messages were accepted, in batches too; see the
/// [file module](crate::file) for the guarantees. Beyond what the channel holds, at most two
/// batches are claimed and not yet sent; a file costs one rename more than reading and moving
/// it would (the claim), which is what makes two adapters never take one file.
pub struct FileSource<S = ChannelSender> {
    config: Arc<FileSourceConfig>,
    sender: S,
    invalid: Option<InvalidMessageChannel>,
    dead_letters: Option<DeadLetterChannel>,
}

/// Whether the channel had room at once, had it after a wait, or `shutdown` came first.
enum Room {
    Now,
    Waited,
    Shutdown,
}

/// A batch on a blocking task: first its files are claimed, then read.
struct Ahead {
    /// Once its files are claimed: the candidates it did not reach.
    moved: tokio::sync::oneshot::Receiver<VecDeque<Candidate>>,
    /// Once they are read: what it read.
    read: tokio::task::JoinHandle<Read>,
}

/// The batches of a run between passes: how many files the next one claims, the one claimed
/// ahead, and the files claimed by the last one but left unread.
struct Batches {
    /// Files the next batch claims at most: from 1, doubling up to [`MAX_BATCH_FILES`].
    size: usize,
    /// A batch claimed ahead, while the one before it is sent.
    ahead: Option<Ahead>,
    /// Claimed by a batch that reached its byte budget before reading them: read next.
    held: VecDeque<Claimed>,
}

/// The files a batch read, and those it claimed but left unread (its byte budget was reached).
struct Read {
    taken: Vec<Taken>,
    held: VecDeque<Claimed>,
    /// A directory was refused: nothing was claimed nor settled, and these settles wait for
    /// the next try.
    refused: Option<Vec<Settle>>,
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
            dead_letters: None,
        }
    }

    /// Where JSON lines that are not JSON, and malformed records of a streamed file, go,
    /// each with its reason (a dead letter with reason `invalid`); without one they go to the
    /// [dead letter channel](Self::dead_letter_channel), and without that either they are
    /// written to the error directory.
    pub fn invalid_message_channel(mut self, channel: InvalidMessageChannel) -> Self {
        self.invalid = Some(channel);
        self
    }

    /// Where malformed records go when there is no invalid message channel: buried with
    /// reason `invalid` and the record's line and reason as the error, as a route does with
    /// a part its splitter could not read.
    pub fn dead_letter_channel(mut self, channel: DeadLetterChannel) -> Self {
        self.dead_letters = Some(channel);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &FileSourceConfig {
        &self.config
    }

    /// Runs until `shutdown` completes (then returns `Ok`), or the channel is closed or its
    /// directories can not be created (then the error). A file being sent when `shutdown`
    /// completes is finished first, and every file whose messages were accepted is settled
    /// before this returns; files claimed but not sent yet go back into the directory, and a
    /// JSON-lines or streamed file waiting for room for its next record stays claimed and is
    /// taken again by the next run (and sent again from its start).
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> Result<(), FileError> {
        let config = self.config.clone();
        blocking({
            let config = config.clone();
            move || claim::prepare(&config)
        })
        .await?;
        let owner = Arc::new(Owner::new());
        let mut settled = Vec::new();
        let ended = self.pump(&owner, &mut settled, shutdown).await;
        let kept = flush(&self.config, settled).await;
        if !kept.is_empty() {
            tracing::error!(
                files = kept.len(),
                "stopping with files not settled: they stay claimed, and a later run takes them again"
            );
        }
        drop(owner); // only now may another run take what this one still held
        ended
    }

    /// The loop of [`run_until`](Self::run_until): pass after pass, batch after batch. What
    /// becomes of the files sent is noted in `settled`, for the caller to carry out at the end.
    async fn pump(
        &mut self,
        owner: &Arc<Owner>,
        settled: &mut Vec<Settle>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), FileError> {
        let config = self.config.clone();
        let mut watch = DirWatch::start(&config.dir, config.watch);
        let mut shutdown = pin!(shutdown);
        let mut batches = Batches {
            size: 1,
            ahead: None,
            held: VecDeque::new(),
        };
        let ended = loop {
            let candidates = scan(&config).await;
            if !candidates.is_empty() {
                watch.pause();
            }
            let took = match self
                .pass(owner, settled, &mut shutdown, &mut batches, candidates)
                .await
            {
                ControlFlow::Continue(took) => took,
                ControlFlow::Break(ended) => break ended,
            };
            let kept = flush(&self.config, std::mem::take(settled)).await;
            settled.extend(kept);
            if took || watch.resume() {
                continue; // look again at once
            }
            tokio::select! {
                biased;
                () = &mut shutdown => break Ok(()),
                () = watch.changed() => {}
                () = tokio::time::sleep(config.poll_interval) => {}
            }
        };
        release_unsent(batches.ahead, batches.held, settled).await;
        ended
    }

    /// One pass over `candidates`: batch after batch until none is held, claimed ahead or left
    /// to claim, or a directory is refused. Says whether any file was taken, or breaks with how
    /// the run ends (shut down, or the channel closed).
    async fn pass<F: Future<Output = ()>>(
        &mut self,
        owner: &Arc<Owner>,
        settled: &mut Vec<Settle>,
        shutdown: &mut Pin<&mut F>,
        batches: &mut Batches,
        mut candidates: VecDeque<Candidate>,
    ) -> ControlFlow<Result<(), FileError>, bool> {
        let mut took = false;
        while batches.ahead.is_some() || !batches.held.is_empty() || !candidates.is_empty() {
            let read = self
                .next_read(owner, settled, shutdown, batches, &mut candidates)
                .await?;
            batches.held = read.held;
            if let Some(unsettled) = read.refused {
                settled.extend(unsettled);
                break; // files stay where they are until the next pass
            }
            if read.taken.is_empty() {
                continue; // others took them
            }
            took = true;
            // The channel took the last batches without a wait: claim the next one ahead.
            if batches.size == MAX_BATCH_FILES && batches.ahead.is_none() && !candidates.is_empty()
            {
                let rest = std::mem::take(&mut candidates);
                batches.ahead =
                    Some(self.start(owner, settled, VecDeque::new(), rest, batches.size));
            }
            let (flow, waited) = self.send_batch(read.taken, settled, shutdown).await;
            match flow {
                Flow::Go => {}
                Flow::Shutdown => return ControlFlow::Break(Ok(())),
                Flow::Stop(error) => return ControlFlow::Break(Err(error)),
            }
            batches.size = if waited {
                1
            } else {
                (batches.size * 2).min(MAX_BATCH_FILES)
            };
        }
        ControlFlow::Continue(took)
    }

    /// The next batch read: the files held from the last batch first, else the batch claimed
    /// ahead (claiming the one after it ahead in turn, at full size), else a new batch from
    /// `candidates` once the channel has room. Breaks with how the run ends if `shutdown` came
    /// or the channel closed while waiting for room.
    async fn next_read<F: Future<Output = ()>>(
        &mut self,
        owner: &Arc<Owner>,
        settled: &mut Vec<Settle>,
        shutdown: &mut Pin<&mut F>,
        batches: &mut Batches,
        candidates: &mut VecDeque<Candidate>,
    ) -> ControlFlow<Result<(), FileError>, Read> {
        let read = if !batches.held.is_empty() {
            let files = std::mem::take(&mut batches.held);
            let max = files.len();
            let task = self.start(owner, settled, files, VecDeque::new(), max);
            joined(task.read).await
        } else if let Some(task) = batches.ahead.take() {
            *candidates = task.moved.await.unwrap_or_default();
            // Its files are claimed: the next batch is claimed while this one is read.
            if batches.size == MAX_BATCH_FILES && !candidates.is_empty() {
                let rest = std::mem::take(candidates);
                batches.ahead =
                    Some(self.start(owner, settled, VecDeque::new(), rest, batches.size));
            }
            joined(task.read).await
        } else {
            // Room first: while the channel is full the files stay where they are.
            match self.ready(shutdown, settled).await {
                Ok(Room::Now) => {}
                Ok(Room::Waited) => batches.size = 1,
                Ok(Room::Shutdown) => return ControlFlow::Break(Ok(())),
                Err(reason) => {
                    return ControlFlow::Break(Err(closed(self.config.dir.clone(), reason)));
                }
            }
            let rest = std::mem::take(candidates);
            let task = self.start(owner, settled, VecDeque::new(), rest, batches.size);
            *candidates = task.moved.await.unwrap_or_default();
            joined(task.read).await
        };
        ControlFlow::Continue(read)
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

    /// On a blocking task: carries out `settled` (emptying it), claims up to `max` files, less
    /// those `held` already, from the front of `candidates` and hands the rest back through
    /// [`Ahead::moved`], then reads `held` and the files claimed, in order, up to
    /// [`MAX_BATCH_BYTES`]. Moves in and out of the claim directory are made by one task at a
    /// time: the loop starts the next batch only once this one's moves are done, so the next
    /// batch's moves run beside this one's reads, not beside its moves.
    fn start(
        &self,
        owner: &Arc<Owner>,
        settled: &mut Vec<Settle>,
        held: VecDeque<Claimed>,
        mut candidates: VecDeque<Candidate>,
        max: usize,
    ) -> Ahead {
        let (owner, config) = (owner.clone(), self.config.clone());
        let jobs = std::mem::take(settled);
        let (moved_tx, moved) = tokio::sync::oneshot::channel();
        let read = tokio::task::spawn_blocking(move || {
            let dirs = match Dirs::open(&config, Missing::Refuse) {
                Ok(dirs) => dirs,
                Err(error) => {
                    tracing::error!(error = %Escaped(&error), "file adapter: a directory is refused; nothing is claimed or moved until it is put right");
                    let _ = moved_tx.send(VecDeque::new());
                    let taken = Vec::new();
                    return Read {
                        taken,
                        held,
                        refused: Some(jobs),
                    };
                }
            };
            settle::settle_all(&dirs, jobs);
            let mut files = held;
            let room = max.saturating_sub(files.len());
            files.extend(claim::claim_batch(&owner, &dirs, &mut candidates, room));
            // The loop may be gone (stopping): then the candidates are not needed.
            let _ = moved_tx.send(candidates);
            let taken = claim::read_batch(&config, &dirs, &mut files, MAX_BATCH_BYTES);
            Read {
                taken,
                held: files,
                refused: None,
            }
        });
        Ahead { moved, read }
    }

    /// Waits for room in the channel, saying whether that took a wait. Before a wait, what
    /// `settled` notes is carried out, so no accepted file stays claimed while the channel is
    /// full.
    async fn ready<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Pin<&mut F>,
        settled: &mut Vec<Settle>,
    ) -> Result<Room, String> {
        let sender = &mut self.sender;
        let now = std::future::poll_fn(|cx| {
            Poll::Ready(match sender.poll_ready(cx) {
                Poll::Ready(Ok(())) => Some(Ok(Room::Now)),
                Poll::Ready(Err(e)) => Some(Err(e.into().to_string())),
                Poll::Pending => None,
            })
        })
        .await;
        if let Some(room) = now {
            return room;
        }
        let kept = flush(&self.config, std::mem::take(settled)).await;
        settled.extend(kept);
        tokio::select! {
            biased;
            () = shutdown.as_mut() => Ok(Room::Shutdown),
            ready = self.sender.ready() => match ready {
                Ok(_) => Ok(Room::Waited),
                Err(e) => Err(e.into().to_string()),
            },
        }
    }
}

/// What there is to take (see [`claim::scan`]), listed on a blocking task; nothing if the
/// directories can not be listed or are refused (logged).
async fn scan(config: &Arc<FileSourceConfig>) -> VecDeque<Candidate> {
    let config = config.clone();
    blocking(move || claim::scan(&config))
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(error = %Escaped(&error), "file adapter could not list its directories");
            VecDeque::new()
        })
}

/// Notes, as the loop stops, that the files of a batch claimed ahead and those held go back:
/// none of them was sent.
async fn release_unsent(
    ahead: Option<Ahead>,
    mut held: VecDeque<Claimed>,
    settled: &mut Vec<Settle>,
) {
    if let Some(task) = ahead {
        let read = joined(task.read).await;
        let files = read.taken.into_iter().map(|file| file.claimed);
        held.extend(files.chain(read.held));
    }
    settled.extend(held.into_iter().map(Settle::Release));
}

/// Carries out `jobs` on a blocking task; hands back those it could not (a directory refused).
async fn flush(config: &Arc<FileSourceConfig>, jobs: Vec<Settle>) -> Vec<Settle> {
    if jobs.is_empty() {
        return jobs;
    }
    let config = config.clone();
    blocking(move || settle::settle_with_dirs(&config, jobs)).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use eip_core::channel::PointToPoint;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn files_past_a_batch_s_byte_budget_stay_claimed_and_follow_in_name_order() {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-budget-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // Batches of 1, 2, 4 and 8 files: the last reaches the 4 MiB budget after four files
        // and holds the fifth for the next.
        for i in 0..12u8 {
            std::fs::write(dir.join(format!("f{i:02}")), vec![i; 1 << 20]).unwrap();
        }
        let channel = PointToPoint::new("budget", 100).unwrap();
        let config = FileSource::builder(&dir).build().unwrap();
        let source = FileSource::new(config, channel.sender()).spawn();
        let mut receiver = channel.receiver();
        for i in 0..12u8 {
            let delivery = receiver.recv().await.unwrap();
            assert_eq!(delivery.message().payload()[0], i, "in name order");
            delivery.ack();
        }
        source.shutdown().await.unwrap();
        let count = |sub: &str| std::fs::read_dir(dir.join(sub)).unwrap().count();
        assert_eq!(count(".done"), 12);
        assert_eq!(count(".claimed"), 0);
        assert_eq!(channel.stats().depth, 0, "each once");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
