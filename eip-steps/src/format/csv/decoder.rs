//! The CSV decoder: `csv-core`'s push parser, one row's fields held at a time.

use bytes::Bytes;
use csv_core::ReadRecordResult;

use super::CsvOptions;
use crate::format::{Decoded, Decoder, Malformed, Reason, Record, json_text};

/// The decoder of [`Format::Csv`](crate::format::Format::Csv): each row a JSON object keyed by
/// the header, or a JSON array of strings without a header.
///
/// It holds the current row only (its fields and its text, each at most the row limit),
/// whatever the input's length; a row over the limit is read through and reported without being kept.
#[derive(Debug)]
pub struct CsvDecoder {
    options: CsvOptions,
    core: csv_core::Reader,
    /// The current row's field bytes, `fields[..out_len]` written so far.
    fields: Vec<u8>,
    out_len: usize,
    /// Where each field of the current row ends in `fields`.
    ends: Vec<usize>,
    ends_len: usize,
    /// Input bytes the current row has taken so far.
    row_input: usize,
    /// Those bytes, while the row is within the limit: the record of a malformed row.
    raw: Vec<u8>,
    too_long: bool,
    /// Between rows: line terminators are skipped here, so that a row's first line is known.
    at_row_start: bool,
    /// Line feeds skipped between rows (the core counts the ones it reads).
    skipped_lines: u64,
    row_line: u64,
    header: Header,
}

#[derive(Debug)]
enum Header {
    /// The next row is the header.
    Expected,
    /// Each column's name, written as a JSON key with its colon: `"name":`.
    Keys(Vec<Vec<u8>>),
    /// No header: rows are arrays, as long as the first one (once it is seen).
    None(Option<usize>),
    /// The header could not be read: no row can be keyed.
    Unusable,
}

const FIRST_FIELDS_CAPACITY: usize = 1024;
const FIRST_ENDS_CAPACITY: usize = 32;

impl CsvDecoder {
    /// A decoder with these options.
    pub fn new(options: CsvOptions) -> Self {
        let header = if options.has_header {
            Header::Expected
        } else {
            Header::None(None)
        };
        CsvDecoder {
            core: options.core_reader(),
            options,
            fields: Vec::new(),
            out_len: 0,
            ends: Vec::new(),
            ends_len: 0,
            row_input: 0,
            raw: Vec::new(),
            too_long: false,
            at_row_start: true,
            skipped_lines: 0,
            row_line: 1,
            header,
        }
    }

    fn max(&self) -> usize {
        self.options.max_record_len
    }

    /// Runs the parser over `chunk` (empty: the end of the input) until it is used up.
    fn read(&mut self, chunk: &[u8], out: &mut Vec<Decoded>) {
        let at_end = chunk.is_empty();
        // `chunk[pos..]` is still to read; the current row's input in this chunk starts at
        // `row_from` (what it took of earlier chunks is in `raw`).
        let (mut pos, mut row_from) = (0, 0);
        loop {
            if self.at_row_start {
                let rest = &chunk[pos..];
                let skip = rest
                    .iter()
                    .position(|b| *b != b'\n' && *b != b'\r')
                    .unwrap_or(rest.len());
                self.skipped_lines += memchr::memchr_iter(b'\n', &rest[..skip]).count() as u64;
                pos += skip;
                if pos == chunk.len() && !at_end {
                    return;
                }
                self.at_row_start = false;
                self.row_line = self.core.line() + self.skipped_lines;
                row_from = pos;
            }
            self.make_room();
            let (result, nin, nout, nend) = self.core.read_record(
                &chunk[pos..],
                &mut self.fields[self.out_len..],
                &mut self.ends[self.ends_len..],
            );
            self.row_input += nin;
            pos += nin;
            if self.row_input > self.max() {
                self.too_long = true;
            }
            self.out_len += nout;
            self.ends_len += nend;
            match result {
                ReadRecordResult::InputEmpty => {
                    self.keep_raw(&chunk[row_from..pos]);
                    return;
                }
                ReadRecordResult::OutputFull => self.grow_fields(),
                ReadRecordResult::OutputEndsFull => self.grow_ends(),
                // At the end of the input, read on: the core answers `End` next.
                ReadRecordResult::Record => self.row(&chunk[row_from..pos], out),
                ReadRecordResult::End => return,
            }
        }
    }

    /// The chunk ends inside a row: keeps the row's input read so far (while within the
    /// limit), the text of the row if it turns out malformed. A row within one chunk is never
    /// copied here.
    fn keep_raw(&mut self, part: &[u8]) {
        if self.row_input > self.max() {
            self.raw.clear();
        } else {
            self.raw.extend_from_slice(part);
        }
    }

    fn make_room(&mut self) {
        if self.fields.is_empty() {
            self.fields.resize(FIRST_FIELDS_CAPACITY.min(self.max()), 0);
        }
        if self.ends.is_empty() {
            self.ends.resize(FIRST_ENDS_CAPACITY, 0);
        }
    }

    /// More room for field bytes, up to the limit; past it the row is too long and what it
    /// wrote is dropped (the core goes on reading it to its end).
    fn grow_fields(&mut self) {
        let len = self.fields.len();
        if self.too_long || len >= self.max() {
            self.too_long = true;
            self.out_len = 0;
        } else {
            self.fields.resize(len.saturating_mul(2).min(self.max()), 0);
        }
    }

    fn grow_ends(&mut self) {
        let len = self.ends.len();
        // A field takes at least one byte of input (its delimiter): more ends than bytes
        // allowed means the row is too long.
        if self.too_long || len > self.max() {
            self.too_long = true;
            self.ends_len = 0;
        } else {
            self.ends
                .resize(len.saturating_mul(2).min(self.max() + 1), 0);
        }
    }

    /// A row is complete, `part` its input in the current chunk: hand it back (or say what is
    /// wrong with it) and start the next.
    fn row(&mut self, part: &[u8], out: &mut Vec<Decoded>) {
        let line = self.row_line;
        let result = if self.too_long {
            Err(Reason::TooLong { max: self.max() })
        } else {
            self.row_json()
        };
        if result.is_err() && matches!(self.header, Header::Expected) {
            self.header = Header::Unusable;
        }
        match result {
            Ok(Some(bytes)) => out.push(Ok(Record { line, bytes })),
            Ok(None) => {}
            Err(reason) => {
                self.keep_raw(part);
                let text = self.raw.strip_suffix(b"\n").unwrap_or(&self.raw);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                let record = Bytes::copy_from_slice(text);
                out.push(Err(Malformed::new(line, reason, record)));
            }
        }
        self.raw.clear();
        self.out_len = 0;
        self.ends_len = 0;
        self.row_input = 0;
        self.too_long = false;
        self.at_row_start = true;
    }

    /// The row as JSON; `None` for the header row, which is kept.
    fn row_json(&mut self) -> Result<Option<Bytes>, Reason> {
        let ends = &self.ends[..self.ends_len];
        let text = row_text(&self.fields[..self.out_len], ends)?;
        let field = |i: usize| {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            // Every field ends on a character boundary: `row_text` checked.
            text.get(start..ends[i]).unwrap_or_default()
        };
        let count = ends.len();
        match &mut self.header {
            Header::Expected => {
                let keys = (0..count)
                    .map(|i| {
                        let name = field(i);
                        let mut key = Vec::with_capacity(name.len() + 3);
                        json_text::push_str(&mut key, name);
                        key.push(b':');
                        key
                    })
                    .collect();
                self.header = Header::Keys(keys);
                Ok(None)
            }
            Header::Unusable => Err(Reason::NoHeader),
            Header::Keys(keys) => {
                if keys.len() != count {
                    return Err(Reason::FieldCount {
                        expected: keys.len(),
                        found: count,
                    });
                }
                // Exact when no field needs escaping: `Bytes` then takes the buffer as it is.
                let size = keys.iter().map(Vec::len).sum::<usize>() + text.len() + 3 * count + 1;
                let mut json = Vec::with_capacity(size);
                json.push(b'{');
                for (i, key) in keys.iter().enumerate() {
                    if i > 0 {
                        json.push(b',');
                    }
                    json.extend_from_slice(key);
                    json_text::push_str(&mut json, field(i));
                }
                json.push(b'}');
                Ok(Some(Bytes::from(json)))
            }
            Header::None(expected) => {
                let expected = *expected.get_or_insert(count);
                if expected != count {
                    return Err(Reason::FieldCount {
                        expected,
                        found: count,
                    });
                }
                let mut json = Vec::with_capacity(text.len() + 3 * count + 1);
                json.push(b'[');
                for i in 0..count {
                    if i > 0 {
                        json.push(b',');
                    }
                    json_text::push_str(&mut json, field(i));
                }
                json.push(b']');
                Ok(Some(Bytes::from(json)))
            }
        }
    }
}

/// A row's field bytes as text, if every field is UTF-8 on its own.
fn row_text<'a>(bytes: &'a [u8], ends: &[usize]) -> Result<&'a str, Reason> {
    let field_at = |offset: usize| ends.iter().take_while(|end| **end <= offset).count() + 1;
    let text = std::str::from_utf8(bytes).map_err(|e| Reason::FieldNotUtf8 {
        field: field_at(e.valid_up_to()),
    })?;
    // Valid as a whole, a field may still begin or end inside a character.
    for (i, end) in ends.iter().enumerate() {
        if !text.is_char_boundary(*end) {
            return Err(Reason::FieldNotUtf8 { field: i + 1 });
        }
    }
    Ok(text)
}

impl Decoder for CsvDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Decoded>) {
        if !chunk.is_empty() {
            self.read(chunk, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<Decoded>) {
        self.read(&[], out);
        *self = CsvDecoder::new(self.options.clone());
    }

    fn buffered(&self) -> usize {
        self.fields.capacity()
            + self.raw.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
    }
}
