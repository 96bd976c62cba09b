//! A streamed split: the parts of a stream, read with bounded memory, pulled from an
//! `AsyncBufRead` ([`SplitStream`]) or pushed chunk by chunk ([`SplitFeed`]).

use std::io;

use eip_core::Message;
use tokio::io::AsyncBufRead;

use super::PartMaker;
use crate::format::{Decoded, Decoder, Format, FormatReader, Malformed, Record};

/// Numbers the good records of a stream as parts. The latest record is held back until the
/// next one is read (or the input ends), so that the last part can carry the sequence size.
struct Sequencer {
    maker: PartMaker,
    held: Option<Record>,
    /// Good records read so far (the held one included).
    read: u64,
}

impl Sequencer {
    fn new(original: &Message, format: &Format) -> Self {
        Sequencer {
            maker: PartMaker::new(original, format),
            held: None,
            read: 0,
        }
    }

    /// Takes a good record; hands back the part of the one before it, if any.
    fn push(&mut self, record: Record) -> Option<Message> {
        self.read += 1;
        let previous = self.held.replace(record)?;
        let line = Some(previous.line);
        Some(self.maker.part(previous.bytes, self.read - 1, None, line))
    }

    /// The input has ended: the last part, with the size, if there was any good record.
    fn end(&mut self) -> Option<Message> {
        let last = self.held.take()?;
        let line = Some(last.line);
        Some(
            self.maker
                .part(last.bytes, self.read, Some(self.read), line),
        )
    }
}

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
    sequencer: Sequencer,
}

impl<R> SplitStream<R> {
    pub(super) fn new(reader: R, original: &Message, format: &Format) -> Self {
        SplitStream {
            reader: FormatReader::new(reader, format),
            sequencer: Sequencer::new(original, format),
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
                    if let Some(part) = self.sequencer.push(record) {
                        return Ok(Some(Ok(part)));
                    }
                }
                None => return Ok(self.sequencer.end().map(Ok)),
            }
        }
    }
}

/// A streamed split pushed its input chunk by chunk, made by [`Split::feed`](super::Split::feed):
/// for a reader that is not async (a file read on a blocking thread). The parts are those of
/// [`SplitStream`], the size on the last; memory is the decoder's bound plus the parts of one
/// chunk, which the caller takes from `out` after each call.
///
/// ```
/// use eip_core::Message;
/// use eip_steps::split::Split;
///
/// let mut feed = Split::lines().feed(&Message::new(""));
/// let mut out = Vec::new();
/// feed.feed(b"one\ntw", &mut out);
/// assert!(out.is_empty(), "`one` is held until the next line is complete");
/// feed.feed(b"o\n", &mut out);
/// feed.finish(&mut out);
/// let parts: Vec<_> = out.into_iter().map(|p| p.unwrap()).collect();
/// assert_eq!(parts[1].payload_str(), Some("two"));
/// assert_eq!(parts[1].sequence_size().unwrap(), Some(2));
/// ```
pub struct SplitFeed {
    decoder: Box<dyn Decoder>,
    sequencer: Sequencer,
    scratch: Vec<Decoded>,
    original: Message,
    format: Format,
}

impl SplitFeed {
    pub(super) fn new(original: &Message, format: &Format) -> Self {
        SplitFeed {
            decoder: format.decoder(),
            sequencer: Sequencer::new(original, format),
            scratch: Vec::new(),
            original: original.clone(),
            format: format.clone(),
        }
    }

    /// Reads `chunk`, appending the parts it completes and its malformed records to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Result<Message, Malformed>>) {
        self.decoder.feed(chunk, &mut self.scratch);
        self.drain(out);
    }

    /// The input has ended: appends what is left, the last part (with the size) among it.
    pub fn finish(&mut self, out: &mut Vec<Result<Message, Malformed>>) {
        self.decoder.finish(&mut self.scratch);
        self.drain(out);
        out.extend(self.sequencer.end().map(Ok));
    }

    /// The message for the invalid message channel holding `malformed`, as
    /// [`Split::malformed_message`](super::Split::malformed_message) makes it.
    pub fn malformed_message(&self, malformed: &Malformed) -> Message {
        PartMaker::malformed(&self.original, &self.format, malformed)
    }

    /// The bytes the decoder holds (its bound, not the input's length).
    pub fn buffered(&self) -> usize {
        self.decoder.buffered()
    }

    fn drain(&mut self, out: &mut Vec<Result<Message, Malformed>>) {
        for decoded in self.scratch.drain(..) {
            match decoded {
                Ok(record) => out.extend(self.sequencer.push(record).map(Ok)),
                Err(malformed) => out.push(Err(malformed)),
            }
        }
    }
}
