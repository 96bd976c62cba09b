//! The durable store's message record: any bytes decoded, and messages made from the input
//! read back as written.
//!
//! A record on disk is outside data: decoding must give a message or a `CodecError`, never a
//! panic, and the error must point inside the record. A record that decodes is a fixed point
//! once written again: encoding the message and decoding that gives the same message, and
//! encoding it once more the same bytes (headers are a map, so a record naming a header twice
//! keeps the last value and comes out shorter, never longer).
//!
//! The same input, read as a message (id, headers of every type, payload), must come back from
//! `decode(encode(msg))` equal, id and header types included; floats are compared bit for bit,
//! so a NaN header counts as read back when its bits are.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use eip_core::message::{HeaderValue, Message, MessageId};
use eip_core::store::durable::codec::{decode, encode};
use libfuzzer_sys::fuzz_target;

/// A message as libFuzzer's bytes describe it.
#[derive(Debug, Arbitrary)]
struct Written {
    id: [u8; 16],
    headers: Vec<(String, Value)>,
    payload: Vec<u8>,
}

/// A header value of each type the record knows.
#[derive(Debug, Arbitrary)]
enum Value {
    Str(String),
    Int(i64),
    Float(u64),
    Bool(bool),
    Bytes(Vec<u8>),
}

fuzz_target!(|data: &[u8]| {
    check_record(data);
    if let Ok(written) = Written::arbitrary_take_rest(Unstructured::new(data)) {
        check_round_trip(written);
    }
});

/// Any bytes as a record: a message or an error inside the record; a message is a fixed point.
fn check_record(data: &[u8]) {
    let record = Bytes::copy_from_slice(data);
    match decode(&record) {
        Ok(msg) => {
            let again = encode(&msg);
            assert!(again.len() <= record.len(), "re-encoded record grew");
            let back = decode(&again).expect("a record eip wrote decodes");
            assert!(same(&back, &msg), "{back:?} differs from {msg:?}");
            assert_eq!(encode(&back), again, "encoding is not a fixed point");
        }
        Err(e) => {
            assert!(
                e.offset <= record.len(),
                "error offset {} past the record's {} bytes",
                e.offset,
                record.len()
            );
        }
    }
}

fn check_round_trip(written: Written) {
    let mut msg = Message::from_parts(
        MessageId::from(uuid::Uuid::from_bytes(written.id)),
        Default::default(),
        Bytes::from(written.payload),
    );
    for (name, value) in written.headers {
        let value = match value {
            Value::Str(s) => HeaderValue::Str(s),
            Value::Int(i) => HeaderValue::Int(i),
            Value::Float(bits) => HeaderValue::Float(f64::from_bits(bits)),
            Value::Bool(b) => HeaderValue::Bool(b),
            Value::Bytes(b) => HeaderValue::Bytes(Bytes::from(b)),
        };
        msg.headers_mut().insert(name, value);
    }
    let record = encode(&msg);
    let back = decode(&record).unwrap_or_else(|e| panic!("{msg:?} does not read back: {e}"));
    assert!(same(&back, &msg), "{back:?} read back from {msg:?}");
}

/// Equal messages, with float headers compared by their bits.
fn same(a: &Message, b: &Message) -> bool {
    let same_value = |x: &HeaderValue, y: &HeaderValue| match (x, y) {
        (HeaderValue::Float(x), HeaderValue::Float(y)) => x.to_bits() == y.to_bits(),
        (x, y) => x == y,
    };
    a.id() == b.id()
        && a.payload() == b.payload()
        && a.headers().len() == b.headers().len()
        && a.headers()
            .iter()
            .zip(b.headers().iter())
            .all(|((n, x), (m, y))| n == m && same_value(x, y))
}
