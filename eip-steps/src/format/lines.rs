//! Lines and JSON lines: records end at `\n` (a `\r` before it is dropped too).

use bytes::Bytes;
use serde::de::IgnoredAny;

use super::{DEFAULT_MAX_RECORD_LEN, Decoded, Decoder, Malformed, Reason, Record};

/// Options of the line formats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineOptions {
    max_line_len: usize,
}

impl Default for LineOptions {
    fn default() -> Self {
        LineOptions {
            max_line_len: DEFAULT_MAX_RECORD_LEN,
        }
    }
}

impl LineOptions {
    /// The longest line accepted, in bytes, its terminator not counted (at least 1). A longer
    /// line is a [`Reason::TooLong`] record and is never held in memory whole.
    pub fn max_line_len(mut self, max: usize) -> Self {
        self.max_line_len = max.max(1);
        self
    }

    /// The longest line accepted.
    pub fn max_line_len_value(&self) -> usize {
        self.max_line_len
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Every line is a record, and must be UTF-8.
    Text,
    /// Every non-blank line is a record, and must be one JSON value.
    Json,
}

/// The decoder of [`Format::Lines`](super::Format::Lines) and
/// [`Format::JsonLines`](super::Format::JsonLines).
///
/// A line that arrives whole inside one chunk is handed back without being buffered; only the
/// start of a line cut by a chunk's end is kept, at most the limit.
#[derive(Debug)]
pub struct LineDecoder {
    kind: Kind,
    max: usize,
    /// The start of the current line, when a chunk ended inside it.
    partial: Vec<u8>,
    /// Lines completed so far.
    lines: u64,
    /// The current line is over the limit (already reported): skip to its end.
    skipping: bool,
}

impl LineDecoder {
    /// A decoder of lines.
    pub fn lines(options: LineOptions) -> Self {
        LineDecoder::new(Kind::Text, options)
    }

    /// A decoder of JSON lines.
    pub fn json_lines(options: LineOptions) -> Self {
        LineDecoder::new(Kind::Json, options)
    }

    fn new(kind: Kind, options: LineOptions) -> Self {
        LineDecoder {
            kind,
            max: options.max_line_len,
            partial: Vec::new(),
            lines: 0,
            skipping: false,
        }
    }

    fn read(&mut self, chunk: &[u8], whole: Option<&Bytes>, out: &mut Vec<Decoded>) {
        let mut rest = chunk;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let line = &rest[..end];
            self.lines += 1;
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                if self.fits(line.len(), line.last()) {
                    let bytes = match whole {
                        Some(whole) => whole.slice_ref(line),
                        None => Bytes::copy_from_slice(line),
                    };
                    self.emit(bytes, out);
                } else {
                    self.too_long(self.lines, out);
                }
            } else if self.fits(
                self.partial.len() + line.len(),
                line.last().or(self.partial.last()),
            ) {
                self.partial.extend_from_slice(line);
                let bytes = Bytes::copy_from_slice(&self.partial);
                self.partial.clear();
                self.emit(bytes, out);
            } else {
                self.partial.clear();
                self.too_long(self.lines, out);
            }
            rest = &rest[end + 1..];
        }
        if self.skipping || rest.is_empty() {
            return;
        }
        if self.partial.len() + rest.len() > self.max + 1 {
            // Report it now, while its line is the current one, and hold none of it.
            self.partial = Vec::new();
            self.skipping = true;
            out.push(Err(Malformed::too_long(self.lines + 1, self.max)));
        } else {
            self.partial.extend_from_slice(rest);
        }
    }

    /// Whether a line of `len` bytes (a final `\r` included) is within the limit.
    fn fits(&self, len: usize, last: Option<&u8>) -> bool {
        len <= self.max || (len == self.max + 1 && last == Some(&b'\r'))
    }

    fn too_long(&mut self, line: u64, out: &mut Vec<Decoded>) {
        out.push(Err(Malformed::too_long(line, self.max)));
    }

    /// Hands back line number `self.lines`, `\r` terminator removed.
    fn emit(&self, mut bytes: Bytes, out: &mut Vec<Decoded>) {
        if bytes.last() == Some(&b'\r') {
            bytes.truncate(bytes.len() - 1);
        }
        let line = self.lines;
        let decoded = match self.kind {
            Kind::Text => match std::str::from_utf8(&bytes) {
                Ok(_) => Ok(Record { line, bytes }),
                Err(e) => Err(Malformed::new(
                    line,
                    Reason::NotUtf8 {
                        valid_up_to: e.valid_up_to(),
                    },
                    bytes,
                )),
            },
            Kind::Json => {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                // serde checks UTF-8 only where it keeps a string, and skipping keeps none.
                let checked = std::str::from_utf8(&bytes)
                    .map_err(|e| Reason::NotUtf8 {
                        valid_up_to: e.valid_up_to(),
                    })
                    .and_then(|text| {
                        serde_json::from_str::<IgnoredAny>(text)
                            .map_err(|e| Reason::Json(e.to_string()))
                    });
                match checked {
                    Ok(_) => Ok(Record { line, bytes }),
                    Err(reason) => Err(Malformed::new(line, reason, bytes)),
                }
            }
        };
        out.push(decoded);
    }
}

impl Decoder for LineDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Decoded>) {
        self.read(chunk, None, out);
    }

    fn feed_bytes(&mut self, chunk: &Bytes, out: &mut Vec<Decoded>) {
        self.read(chunk, Some(chunk), out);
    }

    fn finish(&mut self, out: &mut Vec<Decoded>) {
        if !self.skipping && !self.partial.is_empty() {
            self.lines += 1;
            if self.fits(self.partial.len(), self.partial.last()) {
                let bytes = Bytes::copy_from_slice(&self.partial);
                self.emit(bytes, out);
            } else {
                self.too_long(self.lines, out);
            }
        }
        self.partial.clear();
        self.lines = 0;
        self.skipping = false;
    }

    fn buffered(&self) -> usize {
        self.partial.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_chunks(mut d: LineDecoder, input: &[u8], size: usize) -> Vec<Decoded> {
        let mut out = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            d.feed(chunk, &mut out);
        }
        d.finish(&mut out);
        out
    }

    #[test]
    fn chunk_boundaries_do_not_change_the_lines() {
        let input = b"alpha\r\nbeta\n\ngamma";
        let whole = decode_in_chunks(LineDecoder::lines(LineOptions::default()), input, 1000);
        for size in 1..input.len() {
            let cut = decode_in_chunks(LineDecoder::lines(LineOptions::default()), input, size);
            assert_eq!(cut, whole, "chunks of {size}");
        }
        let texts: Vec<_> = whole.iter().map(|d| d.clone().unwrap().bytes).collect();
        assert_eq!(texts, ["alpha", "beta", "", "gamma"]);
    }

    #[test]
    fn a_line_cut_by_chunks_never_buffers_past_the_limit() {
        let mut d = LineDecoder::lines(LineOptions::default().max_line_len(8));
        let mut out = Vec::new();
        for _ in 0..1000 {
            d.feed(b"0123456789", &mut out);
            assert!(d.buffered() <= 18, "{}", d.buffered());
        }
        d.feed(b"\nok\n", &mut out);
        d.finish(&mut out);
        assert_eq!(
            out,
            [
                Err(Malformed::too_long(1, 8)),
                Ok(Record {
                    line: 2,
                    bytes: Bytes::from("ok")
                })
            ]
        );
    }
}
