//! CSV (RFC 4180 and its common variants), read by `csv-core` and written by `csv`.
//!
//! A row becomes a JSON object keyed by the header's names (a JSON array without a header).
//! Every value is a JSON string: CSV has no types, and guessing them (is `007` a number?)
//! would change data. A quoted field may hold delimiters, quotes (doubled) and line breaks;
//! the row is then counted by the line it starts on and the lines it spans are counted too.
//! Empty lines between rows are skipped. A header with a name twice keeps both in the JSON
//! text (a reader of the object sees the later one). A quote that is never closed runs to the
//! end of the input, as in every CSV reader: the row it starts is then too long (reported,
//! and nothing after it is read as rows) or, when the input ends first, one last row.

mod convert;
mod decoder;

pub use convert::{CsvError, csv_to_json, json_to_csv};
pub use decoder::CsvDecoder;

use super::DEFAULT_MAX_RECORD_LEN;

/// How a CSV text is written: delimiter, quote, header, the longest row accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    delimiter: u8,
    quote: u8,
    has_header: bool,
    max_record_len: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            quote: b'"',
            has_header: true,
            max_record_len: DEFAULT_MAX_RECORD_LEN,
        }
    }
}

impl CsvOptions {
    /// Comma-separated, `"` quoted, with a header line, rows up to 1 MiB.
    pub fn new() -> Self {
        CsvOptions::default()
    }

    /// The field delimiter (`,` by default; `;` and `\t` are common).
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// The quote character (`"` by default).
    pub fn quote(mut self, quote: u8) -> Self {
        self.quote = quote;
        self
    }

    /// Whether the first row names the columns (yes by default).
    pub fn has_header(mut self, has_header: bool) -> Self {
        self.has_header = has_header;
        self
    }

    /// The longest row accepted, in bytes of input with its delimiters, quotes and line
    /// terminator (at least 1): a longer row is a
    /// [`Reason::TooLong`](super::Reason::TooLong) record and is never held whole.
    pub fn max_record_len(mut self, max: usize) -> Self {
        self.max_record_len = max.max(1);
        self
    }

    /// The field delimiter.
    pub fn delimiter_value(&self) -> u8 {
        self.delimiter
    }

    /// The quote character.
    pub fn quote_value(&self) -> u8 {
        self.quote
    }

    /// Whether the first row is the header.
    pub fn has_header_value(&self) -> bool {
        self.has_header
    }

    /// The longest row accepted.
    pub fn max_record_len_value(&self) -> usize {
        self.max_record_len
    }

    fn core_reader(&self) -> csv_core::Reader {
        csv_core::ReaderBuilder::new()
            .delimiter(self.delimiter)
            .quote(self.quote)
            .build()
    }
}
