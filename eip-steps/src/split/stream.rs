//! A streamed split: the parts of a stream, read with bounded memory.

use std::io;

use eip_core::Message;
use tokio::io::AsyncBufRead;

use super::PartMaker;
use crate::format::{Format, FormatReader, Malformed, Record};

/// The parts of a stream, one at a time, made by [`Split::stream`](super::Split::stream).
///
/// One good record is held back until the next one is read (or the input ends), so that the
/// last part can carry the sequence size. A malformed record is handed back as soon as it is
/// read, which may be before the good part just ahead of it.
///
/// ```
/// use eip_core::Message;
/// use eip_steps::split::Split;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// let file: &[u8] = b"{\"n\":1}\n{\"n\":2}\n";
/// let mut parts = Split::json_lines().stream(&Message::new(""), file);
/// let first = parts.next_part().await?.expect("a part").expect("JSON");
/// assert_eq!((first.sequence_number().unwrap(), first.sequence_size().unwrap()), (Some(1), None));
/// let last = parts.next_part().await?.expect("a part").expect("JSON");
/// assert_eq!((last.sequence_number().unwrap(), last.sequence_size().unwrap()), (Some(2), Some(2)));
/// assert!(parts.next_part().await?.is_none());
/// # Ok(()) }
/// ```
pub struct SplitStream<R> {
    reader: FormatReader<R>,
    maker: PartMaker,
    held: Option<Record>,
    /// Good records read so far (the held one included).
    read: u64,
}

impl<R> SplitStream<R> {
    pub(super) fn new(reader: R, original: &Message, format: &Format) -> Self {
        SplitStream {
            reader: FormatReader::new(reader, format),
            maker: PartMaker::new(original, format),
            held: None,
            read: 0,
        }
    }

    /// The record reader (to see how much its decoder holds).
    pub fn reader(&self) -> &FormatReader<R> {
        &self.reader
    }
}

impl<R: AsyncBufRead + Unpin> SplitStream<R> {
    /// The next part or malformed record; `None` when the stream has ended and every part was
    /// handed back.
    pub async fn next_part(&mut self) -> io::Result<Option<Result<Message, Malformed>>> {
        loop {
            match self.reader.next_record().await? {
                Some(Err(malformed)) => return Ok(Some(Err(malformed))),
                Some(Ok(record)) => {
                    self.read += 1;
                    if let Some(previous) = self.held.replace(record) {
                        let part = self.maker.part(
                            previous.bytes,
                            self.read - 1,
                            None,
                            Some(previous.line),
                        );
                        return Ok(Some(Ok(part)));
                    }
                }
                None => {
                    return Ok(self.held.take().map(|last| {
                        let line = Some(last.line);
                        Ok(self
                            .maker
                            .part(last.bytes, self.read, Some(self.read), line))
                    }));
                }
            }
        }
    }
}
