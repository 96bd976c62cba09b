//! The message: a unique id, typed headers and an opaque payload.
//!
//! A [`Message`] is cheap to clone: its payload is a reference-counted [`Bytes`] and its headers
//! a copy-on-write map, so fan-out to any number of subscribers never copies a payload. Ids are
//! UUID v7, ordered by creation time within a process. Well-known headers (subject, correlation
//! id, sequence number and size, return address, content type, expiration, priority, hop budget,
//! redelivery count, death record) have typed accessors; the body is read through serde with [`Message::json`].

mod death;
mod demand;
mod headers;
pub mod history;
mod id;
mod json_node;
mod projection;
mod reading;
mod tree;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

pub use death::{DeathReason, DeathRecord, UnknownDeathReason, host_name, now_millis};
pub(crate) use demand::Demand;
pub use headers::{HeaderError, HeaderName, HeaderValue, Headers, names};
pub use history::{HistoryEntry, HistoryKind};
pub(crate) use json_node::{JsonNode, Kind};
pub(crate) use reading::{Doc, Reading};

/// A message's unique, time-ordered identity (UUID v7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId(Uuid);

impl MessageId {
    /// A new id, later than every id made before it in this process.
    pub fn new() -> Self {
        MessageId(id::next_v7())
    }

    /// The id as a UUID.
    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl Default for MessageId {
    fn default() -> Self {
        MessageId::new()
    }
}

impl From<Uuid> for MessageId {
    fn from(u: Uuid) -> Self {
        MessageId(u)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for MessageId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(MessageId)
    }
}

/// The payload could not be read or written as the requested type.
#[derive(Debug, thiserror::Error)]
#[error("payload of message {id} is not valid {format}: {source}")]
pub struct BodyError {
    /// The message whose payload failed.
    pub id: MessageId,
    /// The format expected.
    pub format: &'static str,
    /// The parser's error, with line and column.
    #[source]
    pub source: serde_json::Error,
}

/// A message: id, headers and payload.
#[derive(Clone)]
pub struct Message {
    id: MessageId,
    headers: Headers,
    payload: Bytes,
    /// The payload parsed as JSON, once, by the first predicate or router that needed it.
    /// Clones made after that share it; the payload never changes, so it never goes stale.
    parsed: OnceLock<Arc<serde_json::Value>>,
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.headers == other.headers && self.payload == other.payload
    }
}

impl Message {
    /// A message with a new id, no headers and this payload.
    pub fn new(payload: impl Into<Bytes>) -> Self {
        Message {
            id: MessageId::new(),
            headers: Headers::new(),
            payload: payload.into(),
            parsed: OnceLock::new(),
        }
    }

    /// A builder for a message with this payload.
    pub fn builder(payload: impl Into<Bytes>) -> MessageBuilder {
        MessageBuilder {
            message: Message::new(payload),
        }
    }

    /// A message whose payload is `value` serialized as JSON, with content type
    /// `application/json`.
    pub fn json_payload<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        let bytes = serde_json::to_vec(value)?;
        Ok(Message::builder(bytes)
            .content_type("application/json")
            .build())
    }

    /// A message made of all three parts, as read back from a store or a broker.
    pub fn from_parts(id: MessageId, headers: Headers, payload: Bytes) -> Self {
        Message {
            id,
            headers,
            payload,
            parsed: OnceLock::new(),
        }
    }

    /// The parts of the message.
    pub fn into_parts(self) -> (MessageId, Headers, Bytes) {
        (self.id, self.headers, self.payload)
    }

    /// The message's id.
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// The headers.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// The headers, for change (copied first if shared with another message).
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.headers
    }

    /// The payload.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The payload as UTF-8 text, if it is.
    pub fn payload_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.payload).ok()
    }

    /// The payload read as JSON into `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, BodyError> {
        serde_json::from_slice(&self.payload).map_err(|source| BodyError {
            id: self.id,
            format: "JSON",
            source,
        })
    }

    /// The payload as a JSON value, parsed at most once per message: the first call parses
    /// and keeps the result, later calls (on this message or clones made after it) reuse it.
    /// A payload that is not JSON is an error every time (nothing is kept).
    pub fn json_value(&self) -> Result<&serde_json::Value, BodyError> {
        if let Some(v) = self.parsed.get() {
            return Ok(v);
        }
        let value: serde_json::Value = self.json()?;
        Ok(self.parsed.get_or_init(|| Arc::new(value)))
    }

    /// Whether the payload has been parsed as JSON already (see [`json_value`](Self::json_value)).
    pub fn is_json_parsed(&self) -> bool {
        self.parsed.get().is_some()
    }

    /// The subject (routing key), if set.
    pub fn subject(&self) -> Result<Option<&str>, HeaderError> {
        self.headers.str(names::SUBJECT)
    }

    /// The correlation id (on a reply: the id of the request), if set.
    pub fn correlation_id(&self) -> Result<Option<&str>, HeaderError> {
        self.headers.str(names::CORRELATION_ID)
    }

    /// A part's place in its split (Message Sequence), counted from 1, if set.
    pub fn sequence_number(&self) -> Result<Option<u64>, HeaderError> {
        self.positive(names::SEQUENCE_NUMBER)
    }

    /// How many parts the split made, if this part says (see [`names::SEQUENCE_SIZE`]: on a
    /// streamed split only the last part does).
    pub fn sequence_size(&self) -> Result<Option<u64>, HeaderError> {
        self.positive(names::SEQUENCE_SIZE)
    }

    /// The return address (the channel for the reply), if set.
    pub fn return_address(&self) -> Result<Option<&str>, HeaderError> {
        self.headers.str(names::RETURN_ADDRESS)
    }

    /// The content type (format indicator), if set.
    pub fn content_type(&self) -> Result<Option<&str>, HeaderError> {
        self.headers.str(names::CONTENT_TYPE)
    }

    /// The absolute expiration in milliseconds since the Unix epoch, if set.
    pub fn expires_at(&self) -> Result<Option<u64>, HeaderError> {
        match self.headers.int(names::EXPIRES_AT)? {
            None => Ok(None),
            Some(ms) => u64::try_from(ms)
                .map(Some)
                .map_err(|_| HeaderError::Malformed {
                    name: names::EXPIRES_AT,
                    reason: format!("{ms} is before the Unix epoch"),
                }),
        }
    }

    /// Makes the message expire `ttl` from now at the latest: an earlier expiration it has is
    /// kept. A malformed expiration is replaced.
    pub fn expire_within(&mut self, ttl: Duration) {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let deadline = now_millis().saturating_add(ttl_ms);
        if matches!(self.expires_at(), Ok(Some(at)) if at <= deadline) {
            return;
        }
        self.headers_mut().insert(
            names::EXPIRES_AT,
            i64::try_from(deadline).unwrap_or(i64::MAX),
        );
    }

    /// Whether the message has expired at `now_ms` (milliseconds since the Unix epoch).
    ///
    /// A malformed expiration header counts as expired: it can not be honoured, and delivering
    /// a message whose deadline is unknown would be the riskier guess.
    pub fn is_expired_at(&self, now_ms: u64) -> bool {
        match self.expires_at() {
            Ok(Some(at)) => at <= now_ms,
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// The priority, 0 to 9, if set.
    pub fn priority(&self) -> Result<Option<u8>, HeaderError> {
        match self.headers.int(names::PRIORITY)? {
            None => Ok(None),
            Some(p @ 0..=9) => Ok(Some(p as u8)),
            Some(p) => Err(HeaderError::Malformed {
                name: names::PRIORITY,
                reason: format!("{p} is outside 0..=9"),
            }),
        }
    }

    /// The remaining hop budget, if set.
    pub fn hop_budget(&self) -> Result<Option<u32>, HeaderError> {
        self.non_negative(names::HOP_BUDGET)
    }

    /// How many times this message was delivered before without being acknowledged.
    pub fn redelivery_count(&self) -> Result<u32, HeaderError> {
        Ok(self.non_negative(names::REDELIVERY_COUNT)?.unwrap_or(0))
    }

    /// Raises the redelivery count by one: the message is about to be delivered again (after a
    /// nack, or found unacknowledged after a restart). A malformed count starts again from one.
    pub fn mark_redelivered(&mut self) {
        let count = self.redelivery_count().unwrap_or(0).saturating_add(1);
        self.headers_mut()
            .insert(names::REDELIVERY_COUNT, i64::from(count));
    }

    /// The death record, if the message was dead-lettered or found invalid.
    pub fn death(&self) -> Result<Option<DeathRecord>, HeaderError> {
        match self.headers.str(names::DEATH)? {
            None => Ok(None),
            Some(json) => {
                serde_json::from_str(json)
                    .map(Some)
                    .map_err(|e| HeaderError::Malformed {
                        name: names::DEATH,
                        reason: e.to_string(),
                    })
            }
        }
    }

    /// Writes a death record into the `death` header.
    pub fn set_death(&mut self, record: &DeathRecord) {
        // A DeathRecord holds only strings, integers and an enum: serializing it cannot fail.
        let json = serde_json::to_string(record).unwrap_or_default();
        self.headers.insert(names::DEATH, json);
    }

    fn positive(&self, name: &'static str) -> Result<Option<u64>, HeaderError> {
        match self.headers.int(name)? {
            None => Ok(None),
            Some(v) if v >= 1 => Ok(Some(v.unsigned_abs())),
            Some(v) => Err(HeaderError::Malformed {
                name,
                reason: format!("{v} is not a count from 1"),
            }),
        }
    }

    fn non_negative(&self, name: &'static str) -> Result<Option<u32>, HeaderError> {
        match self.headers.int(name)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| HeaderError::Malformed {
                    name,
                    reason: format!("{v} is not a count from 0 to {}", u32::MAX),
                }),
        }
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id)
            .field("headers", &self.headers)
            .field("payload", &format_args!("<{} bytes>", self.payload.len()))
            .finish()
    }
}

/// Builds a [`Message`] header by header.
///
/// ```
/// use std::time::Duration;
/// use eip_core::Message;
///
/// let msg = Message::builder(r#"{"side":"buy"}"#)
///     .subject("trades.nyse.ibm")
///     .content_type("application/json")
///     .priority(7)
///     .time_to_live(Duration::from_secs(300))
///     .header("desk", "equities")
///     .build();
/// assert_eq!(msg.subject().unwrap(), Some("trades.nyse.ibm"));
/// assert_eq!(msg.priority().unwrap(), Some(7));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct MessageBuilder {
    message: Message,
}

impl MessageBuilder {
    /// Sets any header.
    pub fn header(mut self, name: impl Into<HeaderName>, value: impl Into<HeaderValue>) -> Self {
        self.message.headers.insert(name, value);
        self
    }

    /// Uses this id instead of a new one.
    pub fn id(mut self, id: MessageId) -> Self {
        self.message.id = id;
        self
    }

    /// Sets the subject (routing key).
    pub fn subject(self, subject: impl Into<String>) -> Self {
        self.header(names::SUBJECT, subject.into())
    }

    /// Sets the correlation id.
    pub fn correlation_id(self, id: impl Into<String>) -> Self {
        self.header(names::CORRELATION_ID, id.into())
    }

    /// Sets a part's place in its split, counted from 1.
    pub fn sequence_number(self, number: u64) -> Self {
        self.header(
            names::SEQUENCE_NUMBER,
            i64::try_from(number).unwrap_or(i64::MAX),
        )
    }

    /// Sets how many parts the split made.
    pub fn sequence_size(self, size: u64) -> Self {
        self.header(
            names::SEQUENCE_SIZE,
            i64::try_from(size).unwrap_or(i64::MAX),
        )
    }

    /// Sets the return address.
    pub fn return_address(self, channel: impl Into<String>) -> Self {
        self.header(names::RETURN_ADDRESS, channel.into())
    }

    /// Sets the content type (format indicator).
    pub fn content_type(self, content_type: impl Into<String>) -> Self {
        self.header(names::CONTENT_TYPE, content_type.into())
    }

    /// Sets the priority, clamped to 0..=9.
    pub fn priority(self, priority: u8) -> Self {
        self.header(names::PRIORITY, i64::from(priority.min(9)))
    }

    /// Sets the hop budget.
    pub fn hop_budget(self, hops: u32) -> Self {
        self.header(names::HOP_BUDGET, i64::from(hops))
    }

    /// Expires the message at an absolute time (milliseconds since the Unix epoch).
    pub fn expires_at(self, epoch_ms: u64) -> Self {
        self.header(
            names::EXPIRES_AT,
            i64::try_from(epoch_ms).unwrap_or(i64::MAX),
        )
    }

    /// Expires the message `ttl` from now.
    pub fn time_to_live(self, ttl: Duration) -> Self {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.expires_at(now_millis().saturating_add(ttl_ms))
    }

    /// The message.
    pub fn build(self) -> Message {
        self.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn cloning_a_message_never_copies_its_payload() {
        let msg = Message::builder(vec![7u8; 1024]).subject("a.b").build();
        let copy = msg.clone();
        assert_eq!(msg.payload().as_ptr(), copy.payload().as_ptr());
        assert!(msg.headers().shares_storage_with(copy.headers()));
        assert_eq!(msg, copy);
    }

    #[test]
    fn changing_a_clones_headers_leaves_the_original_and_the_payload_alone() {
        let msg = Message::builder(vec![1u8; 64]).subject("a").build();
        let mut copy = msg.clone();
        copy.headers_mut().insert(names::SUBJECT, "b");
        assert_eq!(msg.subject().unwrap(), Some("a"));
        assert_eq!(copy.subject().unwrap(), Some("b"));
        assert_eq!(msg.payload().as_ptr(), copy.payload().as_ptr());
    }

    #[test]
    fn ids_are_unique_and_time_ordered() {
        let ids: Vec<MessageId> = (0..1000).map(|_| MessageId::new()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn json_body_reads_into_a_type_and_reports_bad_payloads() {
        #[derive(Debug, Serialize, Deserialize, PartialEq)]
        struct Trade {
            side: String,
            qty: u32,
        }
        let t = Trade {
            side: "buy".into(),
            qty: 3,
        };
        let msg = Message::json_payload(&t).unwrap();
        assert_eq!(msg.content_type().unwrap(), Some("application/json"));
        assert_eq!(msg.json::<Trade>().unwrap(), t);
        let bad = Message::new("{\"side\": 1");
        let err = bad.json::<Trade>().unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
    }

    #[test]
    fn json_is_parsed_once_and_shared_with_later_clones() {
        let msg = Message::new(r#"{"price": 101}"#);
        let early = msg.clone();
        assert!(!msg.is_json_parsed());
        let first: *const serde_json::Value = msg.json_value().unwrap();
        let late = msg.clone();
        assert!(
            late.is_json_parsed(),
            "a clone made after parsing shares the value"
        );
        assert!(std::ptr::eq(first, late.json_value().unwrap()));
        assert!(!early.is_json_parsed(), "a clone made before does not");
        assert_eq!(msg.json_value().unwrap()["price"], 101);
        let bad = Message::new("nope");
        assert!(bad.json_value().is_err());
        assert!(!bad.is_json_parsed());
    }

    #[test]
    fn well_known_headers_are_typed() {
        let msg = Message::builder("x")
            .correlation_id("c-1")
            .return_address("replies")
            .hop_budget(4)
            .expires_at(10)
            .build();
        assert_eq!(msg.correlation_id().unwrap(), Some("c-1"));
        assert_eq!(msg.return_address().unwrap(), Some("replies"));
        assert_eq!(msg.hop_budget().unwrap(), Some(4));
        assert_eq!(msg.redelivery_count().unwrap(), 0);
        assert!(msg.is_expired_at(10));
        assert!(!msg.is_expired_at(9));
    }

    #[test]
    fn sequence_headers_are_counts_from_one() {
        let part = Message::builder("x")
            .correlation_id("original")
            .sequence_number(3)
            .sequence_size(3)
            .build();
        assert_eq!(part.sequence_number().unwrap(), Some(3));
        assert_eq!(part.sequence_size().unwrap(), Some(3));
        assert_eq!(Message::new("x").sequence_size().unwrap(), None);
        let zero = Message::builder("x")
            .header(names::SEQUENCE_NUMBER, 0_i64)
            .build();
        assert!(zero.sequence_number().is_err());
        let text = Message::builder("x")
            .header(names::SEQUENCE_SIZE, "3")
            .build();
        assert!(text.sequence_size().is_err());
    }

    #[test]
    fn malformed_well_known_headers_are_errors_not_panics() {
        let msg = Message::builder("x")
            .header(names::PRIORITY, 12_i64)
            .header(names::HOP_BUDGET, -1_i64)
            .header(names::EXPIRES_AT, "soon")
            .header(names::DEATH, "{not json")
            .build();
        assert!(msg.priority().is_err());
        assert!(msg.hop_budget().is_err());
        assert!(msg.expires_at().is_err());
        assert!(
            msg.is_expired_at(0),
            "an unreadable expiration counts as expired"
        );
        assert!(msg.death().is_err());
    }

    #[test]
    fn death_record_round_trips_through_its_header() {
        let mut msg = Message::new("x");
        let rec = DeathRecord::new("orders", DeathReason::NoRoute, Some("no binding".into()));
        msg.set_death(&rec);
        assert_eq!(msg.death().unwrap(), Some(rec));
    }
}
