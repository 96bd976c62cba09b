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
    // Room for a chunk's records: the chunk before's count and an eighth more, so that the
    // vector is not regrown (its records moved) for every chunk.
    let mut expected = 0;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(FileError::io(path, "read")(e))),
        };
        total += n as u64;
        let mut out = Vec::with_capacity(expected + expected / 8);
        splitter.feed(&chunk[..n], &mut out);
        expected = out.len();
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

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use eip_core::channel::PointToPoint;

    use super::*;
    use crate::file::FileSource;

    /// A line per record, by hand; a line starting with `bad` is malformed.
    #[derive(Debug)]
    struct ByLine;

    struct LineSplitter {
        file: Message,
        partial: Vec<u8>,
        line: u64,
    }

    impl RecordFormat for ByLine {
        fn describe(&self) -> String {
            "by line".into()
        }

        fn splitter(&self, file: &Message) -> Box<dyn RecordSplitter> {
            Box::new(LineSplitter {
                file: file.clone(),
                partial: Vec::new(),
                line: 0,
            })
        }
    }

    impl LineSplitter {
        fn record(&mut self, out: &mut Vec<Record>) {
            self.line += 1;
            let text = std::mem::take(&mut self.partial);
            let mut message = Message::new(text.clone());
            *message.headers_mut() = self.file.headers().clone();
            if text.starts_with(b"bad") {
                let reason = format!("line {}: bad", self.line);
                out.push(Record::Malformed { message, reason });
            } else {
                out.push(Record::Part(message));
            }
        }
    }

    impl RecordSplitter for LineSplitter {
        fn feed(&mut self, chunk: &[u8], out: &mut Vec<Record>) {
            for &b in chunk {
                if b == b'\n' {
                    self.record(out);
                } else {
                    self.partial.push(b);
                }
            }
        }

        fn finish(&mut self, out: &mut Vec<Record>) {
            if !self.partial.is_empty() {
                self.record(out);
            }
        }
    }

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-records-{label}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn config(dir: &std::path::Path) -> crate::file::FileSourceConfig {
        FileSource::builder(dir)
            .records(Arc::new(ByLine))
            .poll_interval(Duration::from_millis(20))
            .build()
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_past_the_whole_file_limit_streams_line_by_line() {
        let dir = scratch("large");
        let line = "x".repeat(99);
        let lines = (crate::file::DEFAULT_MAX_SIZE / 100 + 1000) as usize;
        let body: String = (0..lines).map(|_| format!("{line}\n")).collect();
        std::fs::write(dir.join(".big"), &body).unwrap();
        std::fs::rename(dir.join(".big"), dir.join("big.txt")).unwrap();
        let channel = PointToPoint::new("lines", 16).unwrap();
        let source = FileSource::new(config(&dir), channel.sender()).spawn();
        let mut receiver = channel.receiver();
        for _ in 0..lines {
            let delivery = receiver.recv().await.unwrap();
            assert_eq!(delivery.message().payload().len(), 99);
            let name = delivery.message().headers().get("file-name");
            assert_eq!(name.and_then(|v| v.as_str()), Some("big.txt"));
            delivery.ack();
        }
        for _ in 0..500 {
            if dir.join(".done/big.txt").exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        source.shutdown().await.unwrap();
        assert!(dir.join(".done/big.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_stopped_half_way_stays_claimed_for_the_next_run() {
        let dir = scratch("half");
        let body: String = (0..1000).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.join("n.txt"), &body).unwrap();
        let channel = PointToPoint::new("lines", 4).unwrap();
        let source = FileSource::new(config(&dir), channel.sender()).spawn();
        while channel.stats().depth < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Nobody takes from the channel: the adapter waits for room, the rest unread.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(channel.stats().depth, 4, "as many as the channel holds");
        source.shutdown().await.unwrap();
        let claimed: Vec<_> = std::fs::read_dir(dir.join(".claimed")).unwrap().collect();
        assert_eq!(claimed.len(), 1, "begun, so not given back");
        assert!(!dir.join("n.txt").exists());
        // The next run takes the abandoned claim and streams the file from its start.
        let mut receiver = channel.receiver();
        let next = FileSource::new(config(&dir), channel.sender()).spawn();
        let mut seen = Vec::new();
        while seen.len() < 1004 {
            let delivery = receiver.recv().await.unwrap();
            seen.push(delivery.message().payload_str().unwrap_or("").to_owned());
            delivery.ack();
        }
        next.shutdown().await.unwrap();
        assert_eq!(&seen[..4], ["0", "1", "2", "3"]);
        assert_eq!(&seen[4..8], ["0", "1", "2", "3"], "again from the start");
        assert_eq!(seen.last().map(String::as_str), Some("999"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn malformed_records_without_an_invalid_channel_are_kept_beside_the_done_file() {
        let dir = scratch("rejects");
        std::fs::write(dir.join("r.txt"), "a\nbad one\nb\nbad two").unwrap();
        let channel = PointToPoint::new("lines", 16).unwrap();
        let source = FileSource::new(config(&dir), channel.sender()).spawn();
        for _ in 0..500 {
            if dir.join(".done/r.txt").exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        source.shutdown().await.unwrap();
        assert_eq!(channel.stats().depth, 2);
        let error = dir.join(".error");
        assert_eq!(
            std::fs::read_to_string(error.join("r.txt")).unwrap(),
            "bad one\nbad two\n"
        );
        assert_eq!(
            std::fs::read_to_string(error.join("r.txt.error")).unwrap(),
            "line 2: bad\nline 4: bad\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn malformed_records_without_an_invalid_channel_go_to_the_dead_letter_channel() {
        let dir = scratch("dead");
        std::fs::write(dir.join("r.txt"), "a\nbad one\nb\n").unwrap();
        let channel = PointToPoint::new("lines", 16).unwrap();
        let dead = eip_core::channel::DeadLetterChannel::new("dead", 16).unwrap();
        let source = FileSource::new(config(&dir), channel.sender())
            .dead_letter_channel(dead.clone())
            .spawn();
        let mut dead_letters = dead.receiver();
        let buried = tokio::time::timeout(Duration::from_secs(10), dead_letters.recv())
            .await
            .expect("a dead letter within 10 s")
            .expect("the channel stays open");
        for _ in 0..500 {
            if dir.join(".done/r.txt").exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        source.shutdown().await.unwrap();
        assert!(dir.join(".done/r.txt").exists(), "the file is done");
        assert!(
            !dir.join(".error").join("r.txt").exists(),
            "no rejects kept"
        );
        assert_eq!(channel.stats().depth, 2, "the good lines went on");
        let msg = buried.message();
        assert_eq!(msg.payload_str(), Some("bad one"));
        let death = msg.death().unwrap().expect("a death record");
        assert_eq!(death.reason, eip_core::message::DeathReason::Invalid);
        assert_eq!(death.error.as_deref(), Some("line 2: bad"));
        let name = msg.headers().get("file-name").and_then(|v| v.as_str());
        assert_eq!(name, Some("r.txt"));
        buried.ack();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_grown_while_streamed_is_changed() {
        let dir = scratch("grown");
        let path = dir.join("g.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let file = File::open(&path).unwrap();
        let meta = file.metadata().unwrap();
        let at_open = super::super::read::AtOpen::of(&meta);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"three\n")
            .unwrap();
        let (tx, mut rx) = mpsc::channel(16);
        let mut splitter = ByLine.splitter(&Message::new(""));
        let ended = pump(Opened { file, at_open }, &path, splitter.as_mut(), &tx);
        match ended {
            Some(Err(FileError::Changed { reason, .. })) => {
                assert!(reason.starts_with("8 bytes at open, 9 read"), "{reason}")
            }
            other => panic!(
                "not Changed: {:?}",
                other.map(|r| r.map_err(|e| e.to_string()))
            ),
        }
        let mut parts = 0;
        while let Ok(Batch::Records(records)) = rx.try_recv() {
            parts += records.len();
        }
        assert_eq!(parts, 2, "what was read before is sent; the rest is not");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
