//! How a message is written on disk: a versioned, self-describing binary record.
//!
//! ```text
//! record  = version:u8 (1) id:[u8;16] headers:u32 header* payload:rest
//! header  = name_len:u16 name:utf8 value
//! value   = 0 str_len:u32 utf8 | 1 i64 | 2 f64 | 3 bool:u8 | 4 bytes_len:u32 bytes
//! ```
//!
//! Integers are little-endian. Reading checks every length against what is left, so a damaged
//! record is an error naming what was wrong and where, never a panic or a wrong message.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::message::{HeaderValue, Headers, Message, MessageId};

const VERSION: u8 = 1;

/// A record that is not a message this version of eip wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("damaged message record at byte {offset}: {what}")]
pub struct CodecError {
    /// Where in the record reading stopped.
    pub offset: usize,
    /// What was wrong there.
    pub what: String,
}

/// The record for `msg`.
pub fn encode(msg: &Message) -> Bytes {
    let headers = msg.headers();
    let mut out = BytesMut::with_capacity(32 + msg.payload().len() + 32 * headers.len());
    out.put_u8(VERSION);
    out.put_slice(msg.id().as_uuid().as_bytes());
    out.put_u32_le(u32::try_from(headers.len()).unwrap_or(u32::MAX));
    for (name, value) in headers.iter() {
        // Header names are short by construction; a longer one is cut at a char boundary.
        let name = truncate(name, usize::from(u16::MAX));
        out.put_u16_le(name.len() as u16);
        out.put_slice(name.as_bytes());
        match value {
            HeaderValue::Str(s) => {
                out.put_u8(0);
                put_blob(&mut out, s.as_bytes());
            }
            HeaderValue::Int(i) => {
                out.put_u8(1);
                out.put_i64_le(*i);
            }
            HeaderValue::Float(f) => {
                out.put_u8(2);
                out.put_f64_le(*f);
            }
            HeaderValue::Bool(b) => {
                out.put_u8(3);
                out.put_u8(u8::from(*b));
            }
            HeaderValue::Bytes(b) => {
                out.put_u8(4);
                put_blob(&mut out, b);
            }
        }
    }
    out.put_slice(msg.payload());
    out.freeze()
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn put_blob(out: &mut BytesMut, blob: &[u8]) {
    // A header value past 4 GiB can not be in a message that fits in memory twice.
    let len = u32::try_from(blob.len()).unwrap_or(u32::MAX);
    out.put_u32_le(len);
    out.put_slice(&blob[..len as usize]);
}

/// The message in `record`.
pub fn decode(record: &Bytes) -> Result<Message, CodecError> {
    let mut r = Reader { record, at: 0 };
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(r.error(format!("version {version}, expected {VERSION}")));
    }
    let id = MessageId::from(Uuid::from_bytes(r.array("message id")?));
    let count = r.u32("header count")?;
    let mut headers = Headers::new();
    for _ in 0..count {
        let len = usize::from(r.u16("header name length")?);
        let name = r.utf8(len, "header name")?;
        let value = match r.u8("header type")? {
            0 => {
                let len = r.u32("string length")? as usize;
                HeaderValue::Str(r.utf8(len, "string header")?)
            }
            1 => HeaderValue::Int(i64::from_le_bytes(r.array("integer header")?)),
            2 => HeaderValue::Float(f64::from_le_bytes(r.array("float header")?)),
            3 => HeaderValue::Bool(r.u8("bool header")? != 0),
            4 => {
                let len = r.u32("bytes length")? as usize;
                HeaderValue::Bytes(r.slice(len, "bytes header")?)
            }
            other => return Err(r.error(format!("unknown header type {other}"))),
        };
        headers.insert(name, value);
    }
    let payload = record.slice(r.at..);
    Ok(Message::from_parts(id, headers, payload))
}

struct Reader<'a> {
    record: &'a Bytes,
    at: usize,
}

impl Reader<'_> {
    fn error(&self, what: String) -> CodecError {
        CodecError {
            offset: self.at,
            what,
        }
    }

    fn slice(&mut self, len: usize, what: &str) -> Result<Bytes, CodecError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.record.len())
            .ok_or_else(|| {
                self.error(format!(
                    "{what} of {len} bytes passes the end of the record ({} bytes)",
                    self.record.len()
                ))
            })?;
        let slice = self.record.slice(self.at..end);
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], CodecError> {
        let bytes = self.slice(N, what)?;
        let mut array = [0; N];
        array.copy_from_slice(&bytes);
        Ok(array)
    }

    fn u8(&mut self, what: &str) -> Result<u8, CodecError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn utf8(&mut self, len: usize, what: &str) -> Result<String, CodecError> {
        let at = self.at;
        let bytes = self.slice(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CodecError {
            offset: at,
            what: format!("{what} is not UTF-8"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::names;

    fn sample() -> Message {
        let mut msg = Message::builder(&b"{\"qty\":5}"[..])
            .content_type("application/json")
            .build();
        let h = msg.headers_mut();
        h.insert(names::SUBJECT, "trades.nyse.ibm");
        h.insert("count", 42_i64);
        h.insert("ratio", 0.25_f64);
        h.insert("urgent", true);
        h.insert("blob", Bytes::from_static(&[0, 159, 255]));
        msg
    }

    #[test]
    fn a_message_reads_back_as_written() {
        let msg = sample();
        let back = decode(&encode(&msg)).expect("decodes");
        assert_eq!(back, msg);
        assert_eq!(back.id(), msg.id());
    }

    #[test]
    fn every_truncation_of_a_record_is_an_error_not_a_panic() {
        let record = encode(&sample());
        let payload_start = record.len() - sample().payload().len();
        for end in 0..payload_start {
            assert!(
                decode(&record.slice(..end)).is_err(),
                "a record cut at {end} decoded"
            );
        }
    }

    #[test]
    fn a_record_of_another_version_names_it() {
        let mut record = encode(&sample()).to_vec();
        record[0] = 9;
        let error = decode(&Bytes::from(record)).expect_err("refused");
        assert!(error.to_string().contains("version 9"), "{error}");
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed & 0xff) as u8
                })
                .collect();
            let _ = decode(&Bytes::from(bytes));
        }
    }
}
