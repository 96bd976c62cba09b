//! The formats: what each makes of the edge cases of its input, whole or in chunks.
#![cfg(feature = "csv")]

use bytes::Bytes;
use eip_steps::format::{
    CsvOptions, Decoded, Format, FormatReader, LineOptions, Malformed, Reason, Record,
};

fn decode(format: &Format, input: &[u8]) -> Vec<Decoded> {
    format.decode(&Bytes::copy_from_slice(input))
}

/// The same input fed in chunks of every size from 1 to 7 gives the same records.
fn decode_every_way(format: &Format, input: &[u8]) -> Vec<Decoded> {
    let whole = decode(format, input);
    for size in 1..8 {
        let mut decoder = format.decoder();
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            decoder.feed(chunk, &mut out);
        }
        decoder.finish(&mut out);
        assert_eq!(out, whole, "{} in chunks of {size}", format.name());
    }
    whole
}

fn ok(line: u64, bytes: &str) -> Decoded {
    Ok(Record {
        line,
        bytes: Bytes::copy_from_slice(bytes.as_bytes()),
    })
}

fn bad(line: u64, reason: Reason, record: &[u8]) -> Decoded {
    Err(Malformed::new(line, reason, Bytes::copy_from_slice(record)))
}

#[test]
fn lines_end_at_lf_or_crlf_and_the_last_needs_no_terminator() {
    let out = decode_every_way(&Format::lines(), b"one\r\ntwo\n\nthree");
    assert_eq!(out, [ok(1, "one"), ok(2, "two"), ok(3, ""), ok(4, "three")]);
}

#[test]
fn empty_input_has_no_records_in_any_format() {
    for format in [
        Format::lines(),
        Format::json_lines(),
        Format::csv(CsvOptions::new()),
    ] {
        assert_eq!(decode_every_way(&format, b""), [], "{}", format.name());
    }
}

#[test]
fn an_over_long_line_is_malformed_and_the_next_lines_go_on() {
    let format = Format::Lines(LineOptions::default().max_line_len(5));
    let out = decode_every_way(&format, b"short\r\nmuch too long\nok\n123456");
    assert_eq!(
        out,
        [
            ok(1, "short"),
            bad(2, Reason::TooLong { max: 5 }, b""),
            ok(3, "ok"),
            bad(4, Reason::TooLong { max: 5 }, b""),
        ]
    );
}

#[test]
fn a_line_that_is_not_utf8_is_malformed_with_where_it_breaks() {
    let out = decode_every_way(&Format::lines(), b"fine\nab\xffcd\nalso fine\n");
    assert_eq!(
        out,
        [
            ok(1, "fine"),
            bad(2, Reason::NotUtf8 { valid_up_to: 2 }, b"ab\xffcd"),
            ok(3, "also fine"),
        ]
    );
}

#[test]
fn a_bad_json_line_is_malformed_with_its_number_and_serdes_reason() {
    let out = decode_every_way(&Format::json_lines(), b"{\"a\":1}\r\n\n  \n{\"a\":\n[1,2]");
    assert_eq!(out[0], ok(1, "{\"a\":1}"));
    let Err(Malformed {
        line: 4,
        reason: Reason::Json(reason),
        record,
    }) = &out[1]
    else {
        panic!("line 4 is not JSON: {:?}", out[1]);
    };
    assert!(reason.contains("EOF"), "{reason}");
    assert_eq!(record, "{\"a\":", "the line as it was read");
    assert_eq!(out[2], ok(5, "[1,2]"));
    assert_eq!(out.len(), 3, "blank lines are skipped");
}

#[test]
fn two_json_values_on_one_line_or_a_line_not_utf8_are_malformed() {
    let out = decode(&Format::json_lines(), b"1 2\n\"\xff\"\n");
    assert!(matches!(
        out[0],
        Err(Malformed {
            line: 1,
            reason: Reason::Json(_),
            ..
        })
    ));
    assert!(matches!(
        out[1],
        Err(Malformed {
            line: 2,
            reason: Reason::NotUtf8 { valid_up_to: 1 },
            ..
        })
    ));
}

#[test]
fn csv_rows_become_objects_keyed_by_the_header() {
    let out = decode_every_way(
        &Format::csv(CsvOptions::new()),
        b"sku,qty\r\nA-1,3\r\nB-2,\r\n",
    );
    assert_eq!(
        out,
        [
            ok(2, r#"{"sku":"A-1","qty":"3"}"#),
            ok(3, r#"{"sku":"B-2","qty":""}"#)
        ]
    );
}

#[test]
fn quoted_csv_fields_hold_commas_quotes_and_line_breaks_and_lines_are_counted() {
    let input = b"id,note\n1,\"a, b\"\n2,\"say \"\"hi\"\"\nover\r\nthree lines\"\n\n3,last";
    let out = decode_every_way(&Format::csv(CsvOptions::new()), input);
    assert_eq!(
        out,
        [
            ok(2, r#"{"id":"1","note":"a, b"}"#),
            ok(3, r#"{"id":"2","note":"say \"hi\"\nover\r\nthree lines"}"#),
            ok(7, r#"{"id":"3","note":"last"}"#),
        ]
    );
}

#[test]
fn a_csv_row_with_the_wrong_field_count_is_malformed_with_its_line() {
    let out = decode_every_way(
        &Format::csv(CsvOptions::new()),
        b"a,b\n1,2\n1,2,3\n\"x\ny\"\n4,5",
    );
    assert_eq!(
        out,
        [
            ok(2, r#"{"a":"1","b":"2"}"#),
            bad(
                3,
                Reason::FieldCount {
                    expected: 2,
                    found: 3
                },
                b"1,2,3"
            ),
            bad(
                4,
                Reason::FieldCount {
                    expected: 2,
                    found: 1
                },
                b"\"x\ny\""
            ),
            ok(6, r#"{"a":"4","b":"5"}"#),
        ]
    );
}

#[test]
fn csv_without_a_header_gives_arrays_as_long_as_the_first_row() {
    let options = CsvOptions::new()
        .has_header(false)
        .delimiter(b';')
        .quote(b'\'');
    let out = decode_every_way(&Format::csv(options), b"1;'x;y'\n2\n3;z\n");
    assert_eq!(
        out,
        [
            ok(1, r#"["1","x;y"]"#),
            bad(
                2,
                Reason::FieldCount {
                    expected: 2,
                    found: 1
                },
                b"2"
            ),
            ok(3, r#"["3","z"]"#),
        ]
    );
}

#[test]
fn a_csv_field_that_is_not_utf8_is_malformed_and_a_bad_header_spoils_every_row() {
    let out = decode_every_way(&Format::csv(CsvOptions::new()), b"a,b\n1,\xff\n2,3\n");
    assert_eq!(
        out,
        [
            bad(2, Reason::FieldNotUtf8 { field: 2 }, b"1,\xff"),
            ok(3, r#"{"a":"2","b":"3"}"#)
        ]
    );
    let out = decode_every_way(&Format::csv(CsvOptions::new()), b"a,\xff\n1,2\n");
    assert_eq!(
        out,
        [
            bad(1, Reason::FieldNotUtf8 { field: 2 }, b"a,\xff"),
            bad(2, Reason::NoHeader, b"1,2")
        ]
    );
}

#[test]
fn an_over_long_csv_row_is_malformed_and_the_next_rows_go_on() {
    let options = CsvOptions::new().max_record_len(16);
    let long = format!("h\n\"{}\"\nok\n", "x\n".repeat(100));
    let out = decode_every_way(&Format::csv(options), long.as_bytes());
    assert_eq!(
        out,
        [
            bad(2, Reason::TooLong { max: 16 }, b""),
            ok(103, r#"{"h":"ok"}"#)
        ]
    );
}

#[test]
fn csv_values_with_control_characters_are_valid_json() {
    let out = decode(
        &Format::csv(CsvOptions::new()),
        "k\n\"tab\there \\ \u{1}\"\n".as_bytes(),
    );
    let Ok(record) = &out[0] else {
        panic!("{out:?}")
    };
    let value: serde_json::Value = serde_json::from_slice(&record.bytes).unwrap();
    assert_eq!(value["k"], "tab\there \\ \u{1}");
}

#[tokio::test]
async fn a_stream_reads_the_same_records_as_the_payload() {
    let input: &[u8] = b"a,b\n1,2\n3\n\"4\n\",5";
    let format = Format::csv(CsvOptions::new());
    let mut reader = FormatReader::new(tokio::io::BufReader::with_capacity(3, input), &format);
    let mut streamed = Vec::new();
    while let Some(decoded) = reader.next_record().await.unwrap() {
        streamed.push(decoded);
    }
    assert_eq!(streamed, decode(&format, input));
    assert_eq!(streamed.len(), 3);
}

mod marshal {
    use eip_steps::format::{CsvError, CsvOptions, Reason, csv_to_json, json_to_csv};
    use serde_json::json;

    #[test]
    fn csv_to_json_and_back_keeps_the_rows() {
        let csv = b"name,qty\n\"Smith, J\",3\nLee,\n";
        let json = csv_to_json(csv, &CsvOptions::new()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            value,
            json!([{"name": "Smith, J", "qty": "3"}, {"name": "Lee", "qty": ""}])
        );
        let back = json_to_csv(&json, &CsvOptions::new()).unwrap();
        assert_eq!(back, csv);
    }

    #[test]
    fn csv_to_json_names_the_first_bad_row() {
        let err = csv_to_json(b"a,b\n1,2\n3\n", &CsvOptions::new()).unwrap_err();
        let CsvError::Malformed(m) = err else {
            panic!("{err}")
        };
        assert_eq!(
            (m.line, m.reason),
            (
                3,
                Reason::FieldCount {
                    expected: 2,
                    found: 1
                }
            )
        );
    }

    #[test]
    fn json_to_csv_writes_scalars_and_refuses_what_a_field_can_not_hold() {
        let csv = json_to_csv(br#"[[1,true,null,"x"],["a"]]"#, &CsvOptions::new()).unwrap();
        assert_eq!(csv, b"1,true,,x\na\n");
        let cases: [(&[u8], &str); 5] = [
            (br#"{"a":1}"#, "found object"),
            (br#"[{"a":{"b":1}}]"#, "row 1, column `a`"),
            (br#"[{"a":1},{"b":2}]"#, "row 2: column `b`"),
            (br#"[{"a":1},[2]]"#, "row 2: rows are all objects"),
            (b"[1,", "not JSON"),
        ];
        for (json, expected) in cases {
            let err = json_to_csv(json, &CsvOptions::new())
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err}");
        }
    }
}

#[cfg(feature = "xml")]
mod xml {
    use eip_steps::format::{XmlError, json_to_xml, xml_to_json};
    use serde_json::{Value, json};

    fn to_value(xml: &str) -> Value {
        serde_json::from_slice(&xml_to_json(xml.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn elements_attributes_text_and_repeats_map_to_keys_at_text_and_arrays() {
        let xml = r#"<?xml version="1.0"?>
            <!-- an order -->
            <order id="7" xmlns:x="urn:x">
              <item sku="A">two &amp; a &#x263A;</item>
              <item>B</item>
              <x:note><![CDATA[<raw>]]></x:note>
              <empty/>
              some text
            </order>"#;
        assert_eq!(
            to_value(xml),
            json!({"order": {
                "@id": "7",
                "@xmlns:x": "urn:x",
                "item": [{"@sku": "A", "#text": "two & a ☺"}, "B"],
                "x:note": "<raw>",
                "empty": null,
                "#text": "some text"
            }})
        );
    }

    #[test]
    fn json_to_xml_and_back_is_the_same_value() {
        let value =
            json!({"a": {"@k": "v", "b": ["1", "2"], "c": {"#text": "t", "@z": "<&>"}, "d": null}});
        let xml = json_to_xml(&serde_json::to_vec(&value).unwrap()).unwrap();
        let back: Value = serde_json::from_slice(&xml_to_json(&xml).unwrap()).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn malformed_xml_is_an_error_with_its_line_and_column() {
        let err = xml_to_json(b"<a>\n  <b></c>\n</a>").unwrap_err();
        let XmlError::Syntax { line, .. } = err else {
            panic!("{err}")
        };
        assert_eq!(line, 2);
        for (xml, expected) in [
            (&b"<a>"[..], "not closed"),
            (b"<a/><b/>", "2 root"),
            (b"", "0 root"),
            (b"<a>&nope;</a>", "unknown entity"),
            (b"text<a/>", "outside the root"),
            (b"<a>\xff</a>", "not UTF-8"),
        ] {
            let err = xml_to_json(xml).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let xml = "<a>".repeat(100_000);
        assert!(matches!(
            xml_to_json(xml.as_bytes()),
            Err(XmlError::TooDeep { line: 1 })
        ));
    }

    #[test]
    fn json_that_has_no_single_root_or_bad_names_is_refused() {
        for (json, expected) in [
            (&br#"{"a":1,"b":2}"#[..], "2 keys"),
            (b"[1]", "JSON array"),
            (br#"{"a":[1,2]}"#, "array under"),
            (br#"{"1a":null}"#, "not an XML name"),
            (br#"{"a":{"@b":[1]}}"#, "attribute or text"),
            (br#"{"a":{"b":[[1]]}}"#, "inside an array"),
        ] {
            let err = json_to_xml(json).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
    }
}
