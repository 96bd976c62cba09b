//! eip reads a payload into jq's values with a reader of its own, and leaves to serde_json what
//! that reader does not take: the values are serde_json's, and so are the errors, for every form
//! JSON allows and many it does not, whether the part is built or skipped.
#![cfg(feature = "jq")]

use eip_core::Message;
use eip_steps::expr::Jq;
use proptest::prelude::*;

/// The programs the payloads are read for: everything built (`.`), one field built and the
/// rest skipped (`.a`), and nothing built but the payload still checked.
const PROGRAMS: [&str; 4] = [".", ".a", ".[]?", "1"];

fn same_as_serde_json(payload: &[u8]) -> Result<(), String> {
    let msg = Message::builder(payload.to_vec()).build();
    for source in PROGRAMS {
        let jq = Jq::compile(source).map_err(|e| e.to_string())?;
        let read = jq.all(&msg);
        let reference = jq.all_reading_everything(&msg);
        if read != reference {
            return Err(format!(
                "{source:?} on {:?}:\n read  {read:?}\n serde {reference:?}",
                String::from_utf8_lossy(payload)
            ));
        }
    }
    Ok(())
}

/// `text` as the value of `a`, and again as a value no program but `.` reads.
fn in_both_places(text: &str) -> Vec<u8> {
    format!(r#"{{"z": {text}, "a": {text}, "y": [{text}]}}"#).into_bytes()
}

#[test]
fn numbers_read_as_serde_json_reads_them() {
    let numbers = [
        "0",
        "-0",
        "-0.0",
        "0.0",
        "1",
        "-1",
        "123456789012345678",
        "-123456789012345678",
        "999999999999999999",
        "1234567890123456789",
        "-1234567890123456789",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "123456789012345678901234567890",
        "1.5",
        "-1.5",
        "0.1",
        "12.15",
        "1e3",
        "1E3",
        "1e+3",
        "1e-3",
        "-1.25e-7",
        "2.2250738585072014e-308",
        "4.9e-324",
        "1e-400",
        "-1e-400",
        "0e999999999999",
        "1e308",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e309",
        "-1e309",
        "1e99999999999",
        "1e-99999999999",
        "0.30000000000000004",
        "3.141592653589793238462643383279",
        "123456789012345678901234567890.123456789e-10",
        &"9".repeat(300),
        &"9".repeat(301),
        &"9".repeat(400),
        &format!("{}.5", "1".repeat(310)),
        // Not JSON.
        "01",
        "-01",
        "00",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "1.e3",
        "0x10",
        "1_000",
        "Infinity",
        "NaN",
        "-Infinity",
    ];
    let failures: Vec<String> = numbers
        .iter()
        .filter_map(|n| same_as_serde_json(&in_both_places(n)).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn strings_read_as_serde_json_reads_them() {
    let strings: [&[u8]; 24] = [
        br#""""#,
        br#""plain""#,
        br#""caf\u00e9 \u20ac""#,
        r#""café €""#.as_bytes(),
        br#""\" \\ \/ \b \f \n \r \t""#,
        br#""\u0000""#,
        br#""\ud83d\ude00""#,
        br#""\ud800""#,
        br#""\udc00""#,
        br#""\ud83d\u0041""#,
        br#""\u12""#,
        br#""\u12g4""#,
        br#""\x""#,
        br#""\'""#,
        b"\"tab\there\"",
        b"\"line\nbreak\"",
        b"\"\x7f\"",
        b"\"\xff\"",
        b"\"\xc3\"",
        b"\"\xe2\x82\"",
        b"\"\xed\xa0\x80\"",
        b"\"\xf4\x90\x80\x80\"",
        b"\"unclosed",
        b"\"\\",
    ];
    let mut failures = Vec::new();
    for s in strings {
        let mut field = b"{\"z\": ".to_vec();
        field.extend_from_slice(s);
        field.extend_from_slice(b", \"a\": ");
        field.extend_from_slice(s);
        field.extend_from_slice(b"}");
        let mut key = b"{".to_vec();
        key.extend_from_slice(s);
        key.extend_from_slice(b": 1, \"a\": 2}");
        for payload in [s.to_vec(), field, key] {
            if let Err(failure) = same_as_serde_json(&payload) {
                failures.push(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn escaped_keys_are_found_by_their_text() {
    let msg = Message::new(r#"{"\u0061": 1, "b\n": 2, "\u00e9": 3}"#);
    let jq = Jq::compile(r#"[.a, ."b\n", ."é"]"#).unwrap();
    assert!(!jq.reads_whole_payload());
    assert_eq!(jq.all(&msg).unwrap(), vec![serde_json::json!([1, 2, 3])]);
}

#[test]
fn structure_and_whitespace_read_as_serde_json_reads_them() {
    let payloads: [&[u8]; 30] = [
        b"",
        b" ",
        b" \t\r\n{\"a\" \t:\r\n1 , \"b\":[ 1 ,2 ] } \n",
        b"{\"a\":1}",
        b"\xef\xbb\xbf{\"a\": 1}",
        b"{\"a\": 1}\x0c",
        b"{\"a\": 1} {}",
        b"{\"a\": 1,}",
        b"{,\"a\": 1}",
        b"{\"a\" 1}",
        b"{\"a\": }",
        b"{a: 1}",
        b"{'a': 1}",
        b"{1: 1}",
        b"[1, 2,]",
        b"[,]",
        b"[1 2]",
        b"{\"a\": [}",
        b"{\"a\": tru}",
        b"{\"a\": truex}",
        b"{\"a\": nul, \"b\": 1}",
        b"{\"z\": falsy, \"a\": 1}",
        b"{\"z\": [true, false, null], \"a\": [true, false, null]}",
        b"{\"a\": 1, \"a\": 2}",
        b"{\"z\": {\"a\": 1, \"a\": [2]}, \"a\": {\"x\": 1}, \"a\": {\"a\": 3}}",
        b"[]",
        b"{}",
        b"[[[]]]",
        b"{\"a\": {}}",
        b"{\"a\": 1}\x00",
    ];
    let failures: Vec<String> = payloads
        .iter()
        .filter_map(|p| same_as_serde_json(p).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn deep_nesting_reads_as_serde_json_reads_it() {
    let mut failures = Vec::new();
    for depth in [98, 99, 100, 101, 102, 126, 127, 128, 129, 200] {
        for (open, close) in [("[", "]"), (r#"{"a": "#, "}")] {
            let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            for payload in [nested.clone(), format!(r#"{{"z": {nested}, "a": 1}}"#)] {
                if let Err(failure) = same_as_serde_json(payload.as_bytes()) {
                    failures.push(failure);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Text shaped like a JSON number, often one, sometimes not quite.
fn number_text() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(""), Just("-"), Just("+")],
        prop_oneof!["0", "[1-9][0-9]{0,25}", "0[0-9]{1,3}", ""],
        prop_oneof![Just(String::new()), "\\.[0-9]{0,20}"],
        prop_oneof![Just(String::new()), "[eE][+-]?[0-9]{0,4}"],
    )
        .prop_map(|(sign, int, frac, exp)| format!("{sign}{int}{frac}{exp}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_number_text_reads_as_serde_json_reads_it(text in number_text()) {
        same_as_serde_json(&in_both_places(&text)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn any_f64_reads_back_as_serde_json_reads_it(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        for text in [f.to_string(), format!("{f:e}"), serde_json::to_string(&f).unwrap_or_default()] {
            same_as_serde_json(&in_both_places(&text)).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn any_string_reads_as_serde_json_reads_it(s in any::<String>(), raw in prop::collection::vec(any::<u8>(), 0..12)) {
        let escaped = serde_json::to_string(&s).unwrap_or_default();
        same_as_serde_json(&in_both_places(&escaped)).map_err(TestCaseError::fail)?;
        let mut bytes = b"\"".to_vec();
        bytes.extend_from_slice(&raw);
        bytes.push(b'"');
        let mut payload = b"{\"z\": ".to_vec();
        payload.extend_from_slice(&bytes);
        payload.extend_from_slice(b", \"a\": ");
        payload.extend_from_slice(&bytes);
        payload.push(b'}');
        same_as_serde_json(&payload).map_err(TestCaseError::fail)?;
    }
}
