//! Reading records from a stream: a [`Decoder`] fed from an `AsyncBufRead`'s own buffer.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::Stream;
use tokio::io::AsyncBufRead;

use super::{Decoded, Decoder, Format};

/// Records read from a stream, one at a time, with the decoder's bounded memory: what is held
/// is the reader's buffer, the records of one buffer's worth of input, and the decoder's
/// unfinished record.
///
/// ```
/// use eip_steps::format::{Format, FormatReader};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// let input: &[u8] = b"first\nsecond\n";
/// let mut reader = FormatReader::new(input, &Format::lines());
/// let mut lines = Vec::new();
/// while let Some(decoded) = reader.next_record().await? {
///     lines.push(decoded.map(|r| r.bytes).unwrap_or_default());
/// }
/// assert_eq!(lines, ["first", "second"]);
/// # Ok(()) }
/// ```
pub struct FormatReader<R> {
    reader: R,
    decoder: Box<dyn Decoder>,
    ready: VecDeque<Decoded>,
    scratch: Vec<Decoded>,
    finished: bool,
}

impl<R> FormatReader<R> {
    /// Reads `reader` in `format`.
    pub fn new(reader: R, format: &Format) -> Self {
        FormatReader::with_decoder(reader, format.decoder())
    }

    /// Reads `reader` with this decoder.
    pub fn with_decoder(reader: R, decoder: Box<dyn Decoder>) -> Self {
        FormatReader {
            reader,
            decoder,
            ready: VecDeque::new(),
            scratch: Vec::new(),
            finished: false,
        }
    }

    /// The decoder (to see how much it holds).
    pub fn decoder(&self) -> &dyn Decoder {
        self.decoder.as_ref()
    }

    /// The reader.
    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: AsyncBufRead + Unpin> FormatReader<R> {
    /// The next record or malformed record; `None` at the end of the input. An I/O error
    /// leaves the reader where it was: calling again retries the read.
    pub async fn next_record(&mut self) -> io::Result<Option<Decoded>> {
        std::future::poll_fn(|cx| self.poll_record(cx)).await
    }

    /// Polls for the next record.
    pub fn poll_record(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Decoded>>> {
        loop {
            if let Some(decoded) = self.ready.pop_front() {
                return Poll::Ready(Ok(Some(decoded)));
            }
            if self.finished {
                return Poll::Ready(Ok(None));
            }
            let chunk = ready!(Pin::new(&mut self.reader).poll_fill_buf(cx))?;
            if chunk.is_empty() {
                self.decoder.finish(&mut self.scratch);
                self.finished = true;
            } else {
                let n = chunk.len();
                self.decoder.feed(chunk, &mut self.scratch);
                Pin::new(&mut self.reader).consume(n);
            }
            self.ready.extend(self.scratch.drain(..));
        }
    }
}

impl<R: AsyncBufRead + Unpin> Stream for FormatReader<R> {
    type Item = io::Result<Decoded>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_record(cx).map(Result::transpose)
    }
}
