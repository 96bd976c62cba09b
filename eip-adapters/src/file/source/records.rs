//! Streaming a file record by record: the format is given from outside (the adapter knows no
//! format itself; `eip-dsl` gives it the splitter of `eip-steps`), the adapter reads the file
//! in chunks on a blocking thread and sends each record's message as it comes.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use eip_core::Message;
use tokio::sync::mpsc;

use super::read::Opened;
use crate::file::FileError;

/// The bytes read from a streamed file at a time.
pub const CHUNK_BYTES: usize = 64 << 10;

/// Chunks' worth of messages waiting between the reading thread and the sends: with
/// [`CHUNK_BYTES`], what a streamed file holds in memory beyond the decoder's bound.
const CHUNKS_AHEAD: usize = 2;

/// How a file, streamed, divides into messages: one per record.
pub trait RecordFormat: Send + Sync + fmt::Debug {
    /// The format as a flow file writes it (`csv`, `json-lines`): for logs, and for telling two
    /// configurations apart.
    fn describe(&self) -> String;

    /// A splitter for one file. `file` stands for it: its headers (`file-name`, `file-size`,
    /// `file-modified`) go onto every record's message, and its id is the records'
    /// correlation id.
    fn splitter(&self, file: &Message) -> Box<dyn RecordSplitter>;
}

/// Splits one file's bytes, pushed in chunks of any size, into record messages.
pub trait RecordSplitter: Send {
    /// Reads `chunk`, appending every record it completes to `out`, in order.
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Record>);

    /// The file has ended: appends the records left.
    fn finish(&mut self, out: &mut Vec<Record>);
}

/// One record of a streamed file.
#[derive(Debug)]
pub enum Record {
    /// A record read: its message, for the channel.
    Part(Message),
    /// A record that could not be read: a message holding its text, for the invalid message
    /// channel, and why (with its line: `line 3: expected 2 fields, found 1`).
    Malformed {
        /// The record's text, with the file's headers.
        message: Message,
        /// The line and the reason.
        reason: String,
    },
}

/// A [`RecordFormat`], compared by what it says it is.
#[derive(Debug, Clone)]
pub(super) struct Records(pub(super) Arc<dyn RecordFormat>);

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.describe() == other.0.describe()
    }
}

/// What the reading thread hands the sends: a chunk's records, or how the file ended.
pub(super) enum Batch {
    Records(Vec<Record>),
    /// The whole file was read (`Ok`), or reading it failed part way.
    End(Result<(), FileError>),
}

/// Starts reading `opened` on a blocking thread, splitting it with `splitter`; its records
/// come through the receiver, a chunk's worth at a time, at most [`CHUNKS_AHEAD`] ahead of
/// the sends. Dropping the receiver stops the thread at its next chunk.
pub(super) fn start(
    opened: Opened,
    path: PathBuf,
    mut splitter: Box<dyn RecordSplitter>,
) -> mpsc::Receiver<Batch> {
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    tokio::task::spawn_blocking(move || {
        let ended = pump(opened, &path, splitter.as_mut(), &tx);
        if let Some(ended) = ended {
            let _ = tx.blocking_send(Batch::End(ended));
        }
    });
    rx
}

/// Reads the file to its end, sending each chunk's records; `None` if the receiver is gone.
/// The file must stay as it was opened: a file that grows, shrinks or is rewritten while read
/// is [`FileError::Changed`] (its records read so far were sent).
fn pump(
    opened: Opened,
    path: &std::path::Path,
    splitter: &mut dyn RecordSplitter,
    tx: &mpsc::Sender<Batch>,
) -> Option<Result<(), FileError>> {
    let Opened { file, at_open } = opened;
    let mut reader = (&file).take(at_open.size.saturating_add(1));
    let mut chunk = vec![0u8; CHUNK_BYTES];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(FileError::io(path, "read")(e))),
        };
        total += n as u64;
        let mut out = Vec::new();
        splitter.feed(&chunk[..n], &mut out);
        if !out.is_empty() && tx.blocking_send(Batch::Records(out)).is_err() {
            return None;
        }
    }
    if let Err(error) = unchanged(&file, path, at_open, total) {
        return Some(Err(error));
    }
    let mut out = Vec::new();
    splitter.finish(&mut out);
    if !out.is_empty() && tx.blocking_send(Batch::Records(out)).is_err() {
        return None;
    }
    Some(Ok(()))
}

/// Checks that `file`, `total` bytes read, is as it was at open.
fn unchanged(
    file: &File,
    path: &std::path::Path,
    at_open: super::read::AtOpen,
    total: u64,
) -> Result<(), FileError> {
    let after = file.metadata().map_err(FileError::io(path, "stat"))?;
    super::read::check_unchanged(path, at_open, total, &after)
}
