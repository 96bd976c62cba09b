//! Making a part: the original's headers with the part's own sequence headers.

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::{Headers, names};

use crate::format::Format;

/// The headers every part of one split shares, made once per split.
#[derive(Debug, Clone)]
pub(crate) struct PartMaker {
    base: Headers,
}

impl PartMaker {
    pub(crate) fn new(original: &Message, format: &Format) -> Self {
        let mut base = original.headers().clone();
        base.remove(names::REDELIVERY_COUNT);
        base.remove(names::SEQUENCE_SIZE);
        base.insert(names::CORRELATION_ID, original.id().to_string());
        if let Some(content_type) = format.record_content_type() {
            base.insert(names::CONTENT_TYPE, content_type);
        }
        PartMaker { base }
    }

    /// Part `number`, with the size when it is known.
    pub(crate) fn part(&self, payload: Bytes, number: u64, size: Option<u64>) -> Message {
        let mut part = Message::new(payload);
        let headers = part.headers_mut();
        *headers = self.base.clone();
        headers.insert(names::SEQUENCE_NUMBER, count(number));
        if let Some(size) = size {
            headers.insert(names::SEQUENCE_SIZE, count(size));
        }
        part
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
