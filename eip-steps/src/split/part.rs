//! Making a part: the original's headers with the part's own sequence headers.

use bytes::Bytes;
use eip_core::message::{HeaderName, HeaderValue, Headers, names};
use eip_core::{Message, MessageId};

use crate::format::{Format, Malformed};

/// The headers every part of one split shares, made once per split.
#[derive(Debug, Clone)]
pub(crate) struct PartMaker {
    base: Headers,
}

impl PartMaker {
    pub(crate) fn new(original: &Message, format: &Format) -> Self {
        PartMaker::with_content_type(original, format.record_content_type())
    }

    /// The parts of `original` whose payloads are of `content_type` (when it is known).
    pub(crate) fn with_content_type(
        original: &Message,
        content_type: Option<&'static str>,
    ) -> Self {
        let mut base = original.headers().clone();
        base.remove(names::REDELIVERY_COUNT);
        base.remove(names::SEQUENCE_SIZE);
        base.insert(names::CORRELATION_ID, original.id().to_string());
        if let Some(content_type) = content_type {
            base.insert(names::CONTENT_TYPE, content_type);
        }
        PartMaker { base }
    }

    /// A message holding a malformed record, for the invalid message channel: the original's
    /// headers and correlation id, the record's `line`, no sequence headers, and no content
    /// type when the format decides it (the record is not what the format makes).
    pub(crate) fn malformed(original: &Message, format: &Format, malformed: &Malformed) -> Message {
        let mut message = Message::new(malformed.record.clone());
        let headers = message.headers_mut();
        *headers = original.headers().clone();
        for name in [
            names::REDELIVERY_COUNT,
            names::SEQUENCE_NUMBER,
            names::SEQUENCE_SIZE,
            super::LINE,
        ] {
            headers.remove(name);
        }
        if format.record_content_type().is_some() {
            headers.remove(names::CONTENT_TYPE);
        }
        headers.insert(names::CORRELATION_ID, original.id().to_string());
        headers.insert(super::LINE, count(malformed.line));
        message
    }

    /// Part `number`, with the size when it is known, and the line its record started on
    /// when it came from a format. A part from a format shares the split's headers and holds
    /// only its own beside them (no copy of the original's headers per part).
    pub(crate) fn part(
        &self,
        payload: Bytes,
        number: u64,
        size: Option<u64>,
        line: Option<u64>,
    ) -> Message {
        let sequence_number = || (names::SEQUENCE_NUMBER.into(), count(number).into());
        let sequence_size = |size| (names::SEQUENCE_SIZE.into(), count(size).into());
        let headers = match (line, size) {
            (Some(line), None) => self.base.overlaid([sequence_number(), line_header(line)]),
            (Some(line), Some(size)) => {
                let own = [sequence_number(), sequence_size(size), line_header(line)];
                self.base.overlaid(own)
            }
            (None, None) => self.without_line().overlaid([sequence_number()]),
            (None, Some(size)) => {
                let own = [sequence_number(), sequence_size(size)];
                self.without_line().overlaid(own)
            }
        };
        Message::from_parts(MessageId::new(), headers, payload)
    }
}

impl PartMaker {
    /// The split's headers without `line` (a part not from a format has none).
    fn without_line(&self) -> std::borrow::Cow<'_, Headers> {
        if self.base.contains(super::LINE) {
            let mut headers = self.base.clone();
            headers.remove(super::LINE);
            std::borrow::Cow::Owned(headers)
        } else {
            std::borrow::Cow::Borrowed(&self.base)
        }
    }
}

fn line_header(line: u64) -> (HeaderName, HeaderValue) {
    (super::LINE.into(), count(line).into())
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
