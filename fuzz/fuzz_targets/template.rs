//! Templates (file names, bridge destinations, HTTP lookups, SQL parameters): any text parsed,
//! and every one that parses rendered on messages made from the input.
//!
//! The input is two parts: the first line is the template, the rest the payload (JSON or not).
//! Each template that parses is rendered on two messages carrying a subject and two headers
//! (one of them bytes): one with the payload as given, one with a JSON object holding the
//! payload as a string under `payload` and the template's text under `template`, so a JSON
//! payload is in play whatever the mutations did to the bytes.
//!
//! What must hold: parsing never panics; an error points inside the template and says why.
//! Rendering never panics, and gives the same text or the same error whether the payload is read
//! from its bytes (only what the `{$.path}` placeholders name) or from a full parse made first.
//! A template's own text parses again into a template that renders the same.

#![no_main]

use eip_core::Message;
use eip_core::message::{HeaderValue, names};
use eip_core::template::Template;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (line, payload) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(line);
    let template = match Template::parse(&text) {
        Ok(template) => template,
        Err(e) => {
            assert!(
                e.offset <= text.len(),
                "error offset {} past the template's {} bytes",
                e.offset,
                text.len()
            );
            assert!(!e.reason.is_empty(), "an error without a reason");
            let _ = e.at_byte();
            return;
        }
    };
    let again = Template::parse(template.as_str())
        .unwrap_or_else(|e| panic!("`{}` does not parse again: {e}", template.as_str()));
    let _ = template.sample("x");
    let built = serde_json::json!({
        "payload": String::from_utf8_lossy(payload),
        "template": text,
    });
    for payload in [payload.to_vec(), built.to_string().into_bytes()] {
        let msg = message(payload);
        let parsed = msg.clone();
        let whole = parsed.json_value().is_ok();
        let from_bytes = template.render(&msg).map_err(|e| e.to_string());
        let from_parse = template.render(&parsed).map_err(|e| e.to_string());
        assert_eq!(
            from_bytes,
            from_parse,
            "`{}` renders otherwise from the bytes than from the full parse (parsed: {whole})",
            template.as_str()
        );
        assert_eq!(
            again.render(&msg).map_err(|e| e.to_string()),
            from_bytes,
            "`{}` parsed again renders otherwise",
            template.as_str()
        );
    }
});

fn message(payload: Vec<u8>) -> Message {
    let mut msg = Message::new(payload);
    let headers = msg.headers_mut();
    headers.insert(names::SUBJECT, HeaderValue::Str("orders.eu.new".into()));
    headers.insert("desk", HeaderValue::Str("fx".into()));
    headers.insert("raw", HeaderValue::Bytes(vec![0, 159, 146, 150].into()));
    msg
}
