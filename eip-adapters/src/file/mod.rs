//! The file channel adapter: a directory in, a directory out.
//!
//! # Inbound: [`FileSource`]
//!
//! Watches a directory (with the platform's file watcher for prompt pick-up, and a listing
//! every poll interval whatever the watcher says, so a missed event delays a file but never
//! loses it) for regular files whose names match a [`FileGlob`]. Names starting with `.` are
//! never taken (temporary files, the adapter's own directories), nor are symlinks, nor
//! subdirectories. What it guarantees:
//!
//! - **One taker.** A file is claimed by renaming it into the claim directory (default
//!   `.claimed`) under a name unique to this process and adapter run
//!   (`PID-TOKEN-SEQ.NAME`). Rename is atomic on one file system: of two adapters (in one
//!   process or several) racing for a file, one wins and the other finds it gone and moves on.
//!   Competing adapters must share the claim directory, on the file system of the watched one.
//! - **Settled only after acceptance.** The file is moved to the done directory (default
//!   `.done`) or deleted only after the channel accepted its message: the send future
//!   completed `Ok`, which for a durable channel means the message is on disk. Moves are made
//!   in batches (by the blocking task claiming the next batch, or before the adapter waits or
//!   stops), so an accepted file may sit in the claim directory a little longer; it is never
//!   left there while the adapter waits for room or for new files, nor once `run_until`
//!   returned. A file whose message can not be sent goes to the error directory (default
//!   `.error`) with `NAME.error` beside it saying why: too large, changed while read, a
//!   symlink, JSON lines that are not UTF-8, refused by the channel, or the channel closed (the adapter then stops with
//!   [`FileError::ChannelClosed`]). A name already taken in the done or error directory gets
//!   the claim's tag appended (in the done directory decided by the rename itself, with
//!   `RENAME_NOREPLACE` on Linux).
//! - **Nothing lost to a crash.** A claim is *abandoned* when its process is no longer running,
//!   or when it is this process and the adapter run that made it has ended. Each pass takes
//!   abandoned claims first, by the same rename, so after a `SIGKILL` between claim and settle
//!   the next start takes the file again: delivery is at least once (a crash after the send and
//!   before the settle sends the file again). A claim held by a live process (another
//!   adapter's, or a recycled process id's) is left alone.
//! - **Backpressure.** Files are claimed and read in batches, each after the channel reported
//!   room (`poll_ready`), and their messages sent one at a time, each after the channel
//!   reported room again. A batch starts at one file and doubles while the channel takes every
//!   message without a wait, up to [`MAX_BATCH_FILES`] (64) files or [`MAX_BATCH_BYTES`]
//!   (4 MiB, plus one file); a wait for room starts it again at one. At full size the batches
//!   overlap: the next batch is claimed while one is read, and read while one is sent. So
//!   beyond what the channel holds, at most two
//!   batches wait in memory, claimed; a full channel with no consumer stops the adapter after
//!   the messages that fit and the rest of the batch in hand, and the other files stay in the
//!   directory, unread. Files claimed but not sent when the adapter stops go back into the
//!   directory.
//! - **Bounded memory.** A file larger than the size limit goes to the error directory
//!   without being read; a file growing past it while read is refused too.
//! - **Whole or not at all.** A file is delivered only as it was opened: as many bytes read as
//!   its size then, and its size and modification time unchanged after the read. A file
//!   truncated, grown or rewritten meanwhile goes to the error directory as
//!   [`FileError::Changed`], never as a partial message.
//!
//! Two [modes](ReadMode). **Whole file**: one message, the file's bytes; content type
//! `application/json` if the name ends in `.json`, none otherwise. **JSON lines**: each
//! non-blank line a message (content type `application/json`), the file must be UTF-8. A line
//! that is not JSON goes, with its line number and the parser's reason, to the invalid message
//! channel if the adapter has one, or else to its dead letter channel (a dead letter with
//! reason `invalid`); with neither, such lines are written together to the error directory as
//! a file of the same name with `NAME.error` listing the reasons. Either way the rest of the
//! file goes on, so fixing and dropping the bad lines back sends only what was missing. If
//! a send fails part way, the whole file goes to the error directory and the reason says how
//! many lines were accepted before. Every message carries the [`headers`] `file-name`,
//! `file-size` and `file-modified` (milliseconds since the Unix epoch), and in JSON-lines mode
//! `file-line`.
//!
//! **Streamed, a message per record**: given a [`RecordFormat`]
//! ([`FileSourceBuilder::records`]; the flow file's `format:` gives eip-steps' splitter), a
//! file of any size is read in chunks of [`CHUNK_BYTES`] on a blocking thread and split as it
//! is read, each record's message sent once the channel has room, so a full channel holds the
//! reading back: what a file holds in memory is a chunk being read, the messages of at most
//! three chunks, and the format's unfinished record. No size limit applies unless one is
//! given. A [`Record::Malformed`] goes to the invalid message channel, or else the dead letter
//! channel (or, with neither, among the rejects written to the error directory, at most 1 MiB
//! of them), and the records after it go on; the file is done once every record was accepted
//! or put aside so.
//! Such a file is not "whole or not at all": its first records are sent before its last is
//! read, and a file found changed at its end goes to the error directory saying how many
//! records were accepted. It stays claimed until its last record was accepted, so a crash
//! part way makes the next run stream it again from its start (at least once).
//!
//! Writers should create files under a name the glob does not match (a dot name, say) and
//! rename them into place, as [`FileSink`] does; for writers that can not,
//! [`min_age`](FileSourceBuilder::min_age) leaves files alone until they stopped changing.
//!
//! # Outbound: [`FileSink`]
//!
//! A `tower::Service<Message>` that writes each message to a file named by a [`NameTemplate`]
//! (`{id}`, `{header.NAME}`, `{yyyy}` `{MM}` `{dd}` `{HH}` `{mm}` `{ss}` in UTC), atomically:
//! temporary file in the target directory, write, fsync, rename, fsync the directory; `Ok`
//! means the file is durable. Or it appends each message, which must be JSON, as one line to a
//! JSON-lines file, fsynced before `Ok`.
//!
//! # Security
//!
//! - No name made from a message leaves the sink's directory: templates are checked when
//!   parsed (no absolute path, no `.` or `..` component), values put into them may not hold
//!   `/`, `\` or NUL nor be `.`, `..` or empty, the directories below the sink's are opened
//!   one by one without following a symlink (one there is refused, wherever it leads), and
//!   the file is written relative to the last one's handle; a symlink at the file's own place
//!   is replaced (write) or refused (append), never followed. A refused
//!   name is [`FileError::Escape`]: the consumer driving the sink dead-letters the message
//!   with it.
//! - A name the file system can never hold (too long, invalid there) is [`FileError::Name`],
//!   permanent: dead-lettered at once. The temporary name, `.eip-PID-SEQ.tmp`, fits wherever
//!   the final name fits. Errors show overlong name components cut, with their length.
//! - The inbound adapter reads only regular files, opened without following symlinks, and
//!   never more than the size limit. A symlink dropped in the watched directory goes to the
//!   error directory unfollowed.
//! - The watched directory is trusted as configured (it may be shared, and anyone's); the
//!   claim, done and error directories must be directories owned by the adapter's effective
//!   user, opened without following a symlink, or they are refused with
//!   [`FileError::Untrusted`]: at start the adapter does not start; while running, nothing is
//!   claimed or moved and the files stay where they are until the directory is put right.
//!
//! ```no_run
//! use eip_adapters::file::{FileSink, FileSource, ReadMode};
//! use eip_core::channel::PointToPoint;
//! use eip_core::endpoint::Consumer;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let orders = PointToPoint::new("orders", 100)?;
//! let inbound = FileSource::builder("/var/spool/orders/in")
//!     .glob("*.jsonl")
//!     .mode(ReadMode::JsonLines)
//!     .build()?;
//! let source = FileSource::new(inbound, orders.sender()).spawn();
//!
//! let outbound = FileSink::builder("/var/spool/orders/out")
//!     .name_template("{yyyy}/{MM}/{dd}/{id}.json")
//!     .build()?;
//! let consumer = Consumer::new(orders.receiver(), FileSink::new(outbound)?).spawn();
//! # source.shutdown().await?; consumer.shutdown().await; Ok(()) }
//! ```

mod dir;
mod error;
mod sink;
mod source;
mod template;

pub use error::FileError;
pub use sink::{FileSink, FileSinkBuilder, FileSinkConfig, SinkMode, envelope_line};
pub use source::{
    CHUNK_BYTES, DEFAULT_MAX_SIZE, FileGlob, FileSource, FileSourceBuilder, FileSourceConfig,
    FileSourceHandle, MAX_BATCH_BYTES, MAX_BATCH_FILES, ReadMode, Record, RecordFormat,
    RecordSplitter, WhenDone, headers,
};
pub use template::NameTemplate;

/// Runs blocking file system work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    joined(tokio::task::spawn_blocking(work)).await
}

/// What a blocking task returned; its panic goes on here.
async fn joined<T>(task: tokio::task::JoinHandle<T>) -> T {
    match task.await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: the runtime is shutting down and drops this task without polling again.
        Err(_) => std::future::pending().await,
    }
}
