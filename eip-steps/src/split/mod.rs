//! Splitter: one message becomes a message per record of its payload.
//!
//! [`Split`] names the format ([lines](Split::lines), [JSON lines](Split::json_lines),
//! [CSV](Split::csv)) and makes the parts; it decides and does nothing else, so the route and
//! its dry run (`eip route`) split a message the same way ([`Split::parts`]). Each part is a
//! new message (a new id) with EIP's Message Sequence headers:
//!
//! - `correlation-id`: the original message's id, the one the parts of a split share;
//! - `sequence-number`: the part's place, counted from 1, over the good parts only (a
//!   malformed record takes no number, so no aggregator waits for it);
//! - `sequence-size`: how many parts there are. A split of a payload held in memory knows it
//!   and sets it on every part; a streamed split ([`Split::stream`], a file of any length)
//!   knows it only at the end and sets it on the last part, whose number it equals. Either way
//!   an aggregator has every part when it holds the one that gives the size and every number
//!   up to it.
//!
//! A part keeps the original's headers, except `content-type`, which is `application/json`
//! for CSV and JSON lines (a line keeps the original's), `redelivery-count` (a part was never
//! delivered before) and the correlation and sequence headers, which are the part's own (so a
//! part of a part belongs to the inner split: aggregate the inner split first).
//!
//! A record that can not be read is handed back as a [`Malformed`] with its line number, its
//! reason and its text, and the other records go on: the route sends each to the invalid
//! message channel ([`Split::malformed_message`] makes the message).
//!
//! [`SplitService`] (and its [`SplitLayer`]) carries the split out in front of a service, say a
//! channel's sender: it passes the parts to it one at a time, in order, and completes only when
//! every part was accepted, so the original is acknowledged only when all it became was. If the
//! service fails on part k it stops there and fails: the original is then delivered again and
//! split again, and parts 1 to k-1 are sent a second time. The splitter is at-least-once; a
//! downstream Idempotent Receiver keyed by correlation id and sequence number drops the
//! repeats.
//!
//! ```
//! use eip_core::Message;
//! use eip_steps::split::Split;
//!
//! let order = Message::new("sku,qty\nA-1,3\nB-2\nC-3,1\n");
//! let parts = Split::csv(Default::default()).parts(&order);
//! let good: Vec<_> = parts.iter().filter_map(|p| p.as_ref().ok()).collect();
//! assert_eq!(good[0].payload_str(), Some(r#"{"sku":"A-1","qty":"3"}"#));
//! assert_eq!(good[1].sequence_number().unwrap(), Some(2));
//! assert_eq!(good[1].sequence_size().unwrap(), Some(2));
//! assert_eq!(good[1].correlation_id().unwrap(), Some(order.id().to_string().as_str()));
//! let bad = parts[1].as_ref().unwrap_err();
//! assert_eq!(bad.line, 3);
//! ```

mod error;
mod layer;
mod part;
mod service;
mod stream;

pub use error::SplitError;
pub use layer::SplitLayer;
pub use service::{SplitOutcome, SplitService};
pub use stream::{SplitFeed, SplitStream};

use eip_core::Message;

#[cfg(feature = "csv")]
use crate::format::CsvOptions;
use crate::format::{Decoded, Format, Malformed};
use part::PartMaker;

/// The header of a part split by a format: the line of the input its record started on
/// (from 1), so that what goes wrong with a part later (a transform that fails on it) can be
/// traced to its line.
pub const LINE: &str = "line";

/// The Splitter's decision: how a payload divides into parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    format: Format,
}

impl Split {
    /// Splits by `format`.
    pub fn new(format: Format) -> Self {
        Split { format }
    }

    /// A part per line.
    pub fn lines() -> Self {
        Split::new(Format::lines())
    }

    /// A part per JSON value, one per line.
    pub fn json_lines() -> Self {
        Split::new(Format::json_lines())
    }

    /// A part per CSV row, a JSON object keyed by the header.
    #[cfg(feature = "csv")]
    pub fn csv(options: CsvOptions) -> Self {
        Split::new(Format::csv(options))
    }

    /// The format split by.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// The parts of `original`'s payload, in order, each with every sequence header (the
    /// size too), and the records that could not be read in their place.
    pub fn parts(&self, original: &Message) -> Vec<Result<Message, Malformed>> {
        self.parts_one_by_one(original).collect()
    }

    /// The same parts, each message made only when it is asked for: what is held until then
    /// is the records, not a message (and its own headers) per record.
    pub(crate) fn parts_one_by_one(&self, original: &Message) -> Parts {
        let decoded = self.format.decode(original.payload());
        let size = decoded.iter().filter(|d| d.is_ok()).count() as u64;
        Parts {
            decoded: decoded.into_iter(),
            maker: PartMaker::new(original, &self.format),
            number: 0,
            size,
        }
    }

    /// The parts of `original` whose payloads (JSON, in order) something other than a format
    /// computed, such as a jq program's outputs: made as [`parts`](Self::parts) makes them,
    /// with every sequence header.
    pub fn parts_of(
        original: &Message,
        payloads: impl IntoIterator<Item = bytes::Bytes>,
    ) -> Vec<Message> {
        let payloads: Vec<bytes::Bytes> = payloads.into_iter().collect();
        let size = payloads.len() as u64;
        let maker = PartMaker::with_content_type(original, Some("application/json"));
        payloads
            .into_iter()
            .zip(1..)
            .map(|(payload, number)| maker.part(payload, number, Some(size), None))
            .collect()
    }

    /// A message for the invalid message channel holding a record of `original` that could
    /// not be read: its text as the payload, the original's headers and its id as the
    /// correlation id. The route puts it there with `malformed`'s line and reason as the
    /// error (its `Display`: `line 3: expected 2 fields, found 1`).
    pub fn malformed_message(&self, original: &Message, malformed: &Malformed) -> Message {
        PartMaker::malformed(original, &self.format, malformed)
    }

    /// The parts of a stream that `original` stands for (a file, say: its name and headers in
    /// `original`, its bytes in `reader`), read with bounded memory. The size is on the last
    /// part only.
    pub fn stream<R>(&self, original: &Message, reader: R) -> SplitStream<R> {
        SplitStream::new(reader, original, &self.format)
    }

    /// The same parts as [`stream`](Self::stream), for input pushed chunk by chunk (a file
    /// read on a blocking thread): see [`SplitFeed`].
    pub fn feed(&self, original: &Message) -> SplitFeed {
        SplitFeed::new(original, &self.format)
    }
}

/// The parts of a payload in memory, made one by one.
pub(crate) struct Parts {
    decoded: std::vec::IntoIter<Decoded>,
    maker: PartMaker,
    number: u64,
    size: u64,
}

impl Iterator for Parts {
    type Item = Result<Message, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let decoded = self.decoded.next()?;
        Some(decoded.map(|record| {
            self.number += 1;
            let line = Some(record.line);
            self.maker
                .part(record.bytes, self.number, Some(self.size), line)
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.decoded.size_hint()
    }
}
