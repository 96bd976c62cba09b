//! A CSV stream far larger than any record is decoded with the decoder's buffers bounded by
//! the record limit, whatever the stream's length.
#![cfg(feature = "csv")]

use eip_steps::format::{CsvOptions, Decoded, Format, Reason};

/// About 200 MB; `FORMAT_STREAM_MB` sets another size.
fn stream_len() -> usize {
    std::env::var("FORMAT_STREAM_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
        << 20
}

#[test]
fn a_200_mb_csv_stream_is_decoded_with_the_decoders_buffer_bounded() {
    const MAX: usize = 64 << 10;
    let format = Format::csv(CsvOptions::new().max_record_len(MAX));
    let mut decoder = format.decoder();
    // What the limit allows: the row's field bytes, its text (both grown by doubling) and the
    // end of each of its fields.
    let bound = 3 * MAX + (MAX + 1) * std::mem::size_of::<usize>();
    let total = stream_len();

    let mut out: Vec<Decoded> = Vec::new();
    let (mut fed, mut rows, mut line, mut largest) = (0usize, 0u64, 1u64, 0usize);
    let mut malformed = Vec::new();
    let mut chunk = Vec::with_capacity(80 << 10);
    chunk.extend_from_slice(b"id,name,note,price\n");
    let mut row = 0u64;
    let mut too_long_line = 0;
    while fed < total {
        while chunk.len() < (64 << 10) {
            row += 1;
            line += 1;
            if row.is_multiple_of(10) {
                chunk.extend_from_slice(
                    format!("{row},name-{row},\"two lines,\nquoted \"\"x\"\"\",{row}.5\n")
                        .as_bytes(),
                );
                line += 1;
            } else if row == 100_001 {
                // One row far over the limit, spanning many chunks.
                too_long_line = line;
                chunk.extend_from_slice(format!("{row},\"").as_bytes());
                for _ in 0..(3 * MAX / 8) {
                    chunk.extend_from_slice(b"xxxxxxx\n");
                    line += 1;
                }
                chunk.extend_from_slice(b"\",a,b\n");
            } else {
                chunk.extend_from_slice(format!("{row},name-{row},plain,{row}.25\n").as_bytes());
            }
        }
        // Cut where the chunk happens to end: rows and quoted fields straddle the cut.
        decoder.feed(&chunk, &mut out);
        fed += chunk.len();
        chunk.clear();
        largest = largest.max(decoder.buffered());
        assert!(
            decoder.buffered() <= bound,
            "{} > {bound}",
            decoder.buffered()
        );
        for d in out.drain(..) {
            match d {
                Ok(_) => rows += 1,
                Err(m) => malformed.push(m),
            }
        }
    }
    decoder.finish(&mut out);
    rows += out.iter().filter(|d| d.is_ok()).count() as u64;
    let expected_malformed = u64::from(too_long_line > 0);
    assert_eq!(rows + expected_malformed, row, "every row read once");
    if too_long_line > 0 {
        assert_eq!(malformed.len(), 1);
        assert_eq!(malformed[0].line, too_long_line);
        assert_eq!(malformed[0].reason, Reason::TooLong { max: MAX });
    }
    println!(
        "{} MB, {row} rows, decoder buffer at most {largest} bytes (bound {bound})",
        fed >> 20
    );
}
