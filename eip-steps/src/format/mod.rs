//! Formats besides JSON: the shapes a payload or a file may come in, read part by part.
//!
//! A [`Format`] names how bytes divide into records: [`Format::Lines`] (one record per line),
//! [`Format::JsonLines`] (one JSON value per non-empty line) and, with the cargo feature `csv`,
//! [`Format::Csv`] (one JSON object per row, keyed by the header). Its [`Decoder`] is pushed the
//! bytes chunk by chunk, in any sizes, and hands back each record as soon as it is complete, so
//! a file of any length is read with memory bounded by the longest record allowed (never by the
//! file): a record longer than that is reported, skipped and forgotten. A record that can not be
//! read (too long, not UTF-8, not JSON, the wrong number of CSV fields) is a [`Malformed`] with
//! its 1-based line number and the reason; the records after it go on. The same decoder serves
//! a payload held in memory ([`Format::decode`]) and a stream ([`FormatReader`] over any
//! `tokio::io::AsyncBufRead`), so both read a record the same way.
//!
//! Besides splitting, a whole payload can change format: CSV text to and from a JSON array
//! ([`csv_to_json`], [`json_to_csv`]) and XML to and from JSON ([`xml_to_json`],
//! [`json_to_xml`], feature `xml`).
//!
//! ```
//! use bytes::Bytes;
//! use eip_steps::format::{Format, Reason};
//!
//! let decoded = Format::json_lines().decode(&Bytes::from("{\"a\":1}\nnot json\n[2]\n"));
//! let good: Vec<_> = decoded.iter().filter_map(|d| d.as_ref().ok()).map(|r| r.line).collect();
//! assert_eq!(good, [1, 3]);
//! let bad = decoded[1].as_ref().unwrap_err();
//! assert_eq!(bad.line, 2);
//! assert_eq!(bad.record, "not json");
//! assert!(matches!(bad.reason, Reason::Json(_)));
//! ```

#[cfg(feature = "csv")]
mod csv;
#[cfg(any(feature = "csv", feature = "xml"))]
mod json_text;
mod lines;
mod reader;
#[cfg(feature = "xml")]
mod xml;

use bytes::Bytes;

#[cfg(feature = "csv")]
pub use self::csv::{CsvDecoder, CsvError, CsvOptions, csv_to_json, json_to_csv};
pub use lines::{LineDecoder, LineOptions};
pub use reader::FormatReader;
#[cfg(feature = "xml")]
pub use xml::{XmlError, json_to_xml, xml_to_json};

/// The longest record a decoder accepts unless told otherwise: 1 MiB.
pub const DEFAULT_MAX_RECORD_LEN: usize = 1 << 20;

/// One record read from the input: a part's payload and where it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The line the record starts on, counted from 1 (a CSV row may span several lines).
    pub line: u64,
    /// The record: the line without its terminator (lines, JSON lines) or a JSON object or
    /// array (CSV).
    pub bytes: Bytes,
}

/// A record that could not be read; the records after it are read on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct Malformed {
    /// The line the record starts on, counted from 1.
    pub line: u64,
    /// What is wrong with it.
    pub reason: Reason,
    /// The record as it was read, without its line terminator, for the invalid message
    /// channel; empty when it was too long to keep.
    pub record: Bytes,
}

impl Malformed {
    /// A malformed record at `line`, its text kept.
    pub fn new(line: u64, reason: Reason, record: Bytes) -> Self {
        Malformed {
            line,
            reason,
            record,
        }
    }

    /// A record too long to keep.
    pub fn too_long(line: u64, max: usize) -> Self {
        Malformed::new(line, Reason::TooLong { max }, Bytes::new())
    }
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Reason {
    /// Longer than the decoder's limit; the rest of it was skipped unread.
    #[error("record longer than {max} bytes")]
    TooLong {
        /// The limit, in bytes.
        max: usize,
    },
    /// A line (of lines or JSON lines) that is not UTF-8.
    #[error("not UTF-8 (valid up to byte {valid_up_to})")]
    NotUtf8 {
        /// How many bytes of the line are valid UTF-8.
        valid_up_to: usize,
    },
    /// A line of JSON lines that is not one JSON value: serde's reason, with the column.
    #[error("not JSON: {0}")]
    Json(String),
    /// A CSV field that is not UTF-8 (a JSON string can not hold it).
    #[error("field {field} is not UTF-8")]
    FieldNotUtf8 {
        /// The field's place in its row, counted from 1.
        field: usize,
    },
    /// A CSV row with another number of fields than the header (or, without a header, the
    /// first row).
    #[error("expected {expected} fields, found {found}")]
    FieldCount {
        /// The number of fields of the header or first row.
        expected: usize,
        /// The number found in this row.
        found: usize,
    },
    /// A CSV row after a header that could not be read: there are no names to key it by.
    #[error("no usable header line")]
    NoHeader,
}

/// What a decoder hands back for each record: the record, or why it could not be read.
pub type Decoded = Result<Record, Malformed>;

/// Turns bytes into records, incrementally: push chunks with [`feed`](Decoder::feed), then call
/// [`finish`](Decoder::finish) once at the end of the input.
///
/// A decoder keeps only the record it is in the middle of, bounded by its limit on a record's
/// length; [`buffered`](Decoder::buffered) says how much it holds.
pub trait Decoder: Send {
    /// Reads `chunk`, appending every record it completes to `out`, in input order.
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Decoded>);

    /// Like [`feed`](Decoder::feed); a decoder may hand back slices of `chunk` instead of
    /// copies.
    fn feed_bytes(&mut self, chunk: &Bytes, out: &mut Vec<Decoded>) {
        self.feed(chunk, out);
    }

    /// The input has ended: appends the last record (one without a terminator) to `out`.
    /// The decoder is then ready for a new input.
    fn finish(&mut self, out: &mut Vec<Decoded>);

    /// The bytes the decoder's own buffers hold (their capacity), for checking its bound.
    fn buffered(&self) -> usize;
}

/// How a payload or a file divides into records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// One record per line, `\n` or `\r\n` terminated; empty lines are records too.
    Lines(LineOptions),
    /// One JSON value per line; empty and blank lines are skipped.
    JsonLines(LineOptions),
    /// One JSON object per row keyed by the header (a JSON array of strings without one).
    #[cfg(feature = "csv")]
    Csv(CsvOptions),
}

impl Format {
    /// Lines, at most [`DEFAULT_MAX_RECORD_LEN`] bytes each.
    pub fn lines() -> Self {
        Format::Lines(LineOptions::default())
    }

    /// JSON lines, at most [`DEFAULT_MAX_RECORD_LEN`] bytes each.
    pub fn json_lines() -> Self {
        Format::JsonLines(LineOptions::default())
    }

    /// CSV with these options.
    #[cfg(feature = "csv")]
    pub fn csv(options: CsvOptions) -> Self {
        Format::Csv(options)
    }

    /// The format's name, as a flow file writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Lines(_) => "lines",
            Format::JsonLines(_) => "json-lines",
            #[cfg(feature = "csv")]
            Format::Csv(_) => "csv",
        }
    }

    /// The content type of a record, when the format decides it: `application/json` for JSON
    /// lines and CSV; none for lines (a line is whatever its input was).
    pub fn record_content_type(&self) -> Option<&'static str> {
        match self {
            Format::Lines(_) => None,
            Format::JsonLines(_) => Some("application/json"),
            #[cfg(feature = "csv")]
            Format::Csv(_) => Some("application/json"),
        }
    }

    /// A new decoder for one input in this format.
    pub fn decoder(&self) -> Box<dyn Decoder> {
        match self {
            Format::Lines(o) => Box::new(LineDecoder::lines(o.clone())),
            Format::JsonLines(o) => Box::new(LineDecoder::json_lines(o.clone())),
            #[cfg(feature = "csv")]
            Format::Csv(o) => Box::new(CsvDecoder::new(o.clone())),
        }
    }

    /// Every record of a payload held in memory, in order.
    pub fn decode(&self, payload: &Bytes) -> Vec<Decoded> {
        let mut decoder = self.decoder();
        let mut out = Vec::new();
        decoder.feed_bytes(payload, &mut out);
        decoder.finish(&mut out);
        out
    }
}
