//! The decoders on any input: no panic, and the same records whatever the chunk sizes.
#![cfg(feature = "csv")]

use bytes::Bytes;
use eip_steps::format::{CsvOptions, Decoded, Format, LineOptions};
use proptest::prelude::*;

fn formats() -> Vec<Format> {
    vec![
        Format::Lines(LineOptions::default().max_line_len(8)),
        Format::JsonLines(LineOptions::default().max_line_len(16)),
        Format::csv(CsvOptions::new().max_record_len(12)),
        Format::csv(CsvOptions::new().has_header(false).delimiter(b';')),
    ]
}

fn in_chunks(format: &Format, input: &[u8], cuts: &[usize]) -> Vec<Decoded> {
    let mut decoder = format.decoder();
    let mut out = Vec::new();
    let mut rest = input;
    for cut in cuts {
        let (chunk, after) = rest.split_at((*cut).min(rest.len()));
        decoder.feed(chunk, &mut out);
        rest = after;
    }
    decoder.feed(rest, &mut out);
    decoder.finish(&mut out);
    out
}

/// Bytes that are mostly the characters the formats give meaning to.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        Just(b'\n'),
        Just(b'\r'),
        Just(b','),
        Just(b';'),
        Just(b'"'),
        Just(b'{'),
        Just(b'}'),
        Just(b'1'),
        Just(b'a'),
        Just(0xff_u8),
        Just(0xc3_u8),
        Just(0xa9_u8),
        any::<u8>(),
    ];
    proptest::collection::vec(byte, 0..200)
}

proptest! {
    #[test]
    fn any_input_in_any_chunks_decodes_as_it_does_whole(
        input in input(),
        cuts in proptest::collection::vec(0usize..40, 0..10),
    ) {
        for format in formats() {
            let whole = format.decode(&Bytes::copy_from_slice(&input));
            prop_assert_eq!(&in_chunks(&format, &input, &cuts), &whole, "{}", format.name());
            let mut last_line = 0;
            for d in &whole {
                let line = match d { Ok(r) => r.line, Err(m) => m.line };
                prop_assert!(line >= 1 && line >= last_line, "lines go forward: {:?}", whole);
                last_line = line;
                if let (Ok(r), Some("application/json")) = (d, format.record_content_type()) {
                    prop_assert!(serde_json::from_slice::<serde_json::Value>(&r.bytes).is_ok());
                }
            }
        }
    }
}
