//! The splitter's formats: any bytes decoded as lines, JSON lines or CSV (with the options the
//! input chooses), whole and in chunks the input chooses.
//!
//! The first byte picks the format and its options (lines or JSON lines with a small or the
//! default line limit; CSV with or without a header, with `,` or `;`); the second the chunk
//! size; the rest is the input. What must hold: no panic; decoding in chunks gives exactly
//! what decoding whole does (every record and malformed record, with its line); lines only
//! grow; a record's line is within the input's lines; and the decoder's own buffers stay within
//! a bound set by its record limit, whatever the input.

#![no_main]

use bytes::Bytes;
use eip_steps::format::{CsvOptions, Decoded, Format, LineOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [pick, chunk, input @ ..] = data else {
        return;
    };
    let (format, limit) = format(*pick);
    let whole = format.decode(&Bytes::copy_from_slice(input));
    let mut decoder = format.decoder();
    let mut chunked: Vec<Decoded> = Vec::new();
    let size = usize::from(*chunk % 64) + 1;
    for piece in input.chunks(size) {
        decoder.feed(piece, &mut chunked);
        assert!(
            decoder.buffered() <= 16 * limit + 256 * 1024,
            "the decoder holds {} bytes with a record limit of {limit}",
            decoder.buffered()
        );
    }
    decoder.finish(&mut chunked);
    assert_eq!(whole, chunked, "chunks of {size} decode as the whole does");

    let lines = input.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut previous = 0;
    for decoded in &whole {
        let line = match decoded {
            Ok(record) => record.line,
            Err(malformed) => malformed.line,
        };
        assert!(line >= 1 && line <= lines, "line {line} of {lines}");
        assert!(line >= previous, "line {line} after {previous}");
        previous = line;
    }
});

/// The format and its record limit the first byte picks.
fn format(pick: u8) -> (Format, usize) {
    let limit = if pick & 0x10 == 0 { 32 } else { 1 << 20 };
    let lines = LineOptions::default().max_line_len(limit);
    let format = match pick % 4 {
        0 => Format::Lines(lines),
        1 => Format::JsonLines(lines),
        n => Format::csv(
            CsvOptions::new()
                .has_header(n == 2)
                .delimiter(if pick & 0x20 == 0 { b',' } else { b';' })
                .max_record_len(limit),
        ),
    };
    (format, limit)
}
