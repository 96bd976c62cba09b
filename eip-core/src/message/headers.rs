//! Message headers: typed values in a copy-on-write map.
//!
//! Headers sit behind an `Arc`, so cloning a message (for fan-out, a wire tap, a redelivery)
//! shares them; the first write to a shared map copies it (`Arc::make_mut`). An empty header set
//! allocates nothing. Names of the well-known headers are constants in [`names`], and
//! [`Message`](crate::Message) has typed accessors for them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// The names of the headers eip itself reads and writes.
///
/// User headers may use any other name. A well-known header holding a value of the wrong type
/// (say, a string `priority`) is reported by the typed accessor as [`HeaderError::WrongType`].
pub mod names {
    /// The routing key: dot-separated words matched by topic exchanges and wildcard subscriptions.
    pub const SUBJECT: &str = "subject";
    /// Correlation Identifier: on a reply, the id of the request it answers; on a part of a
    /// split, the id of the message it was split from.
    pub const CORRELATION_ID: &str = "correlation-id";
    /// Message Sequence: a part's place in its split, counted from 1.
    pub const SEQUENCE_NUMBER: &str = "sequence-number";
    /// Message Sequence: how many parts the split made. A split of a payload held in memory
    /// sets it on every part; a streamed split (a file of unknown length) sets it on the last
    /// part only, where it equals that part's sequence number. An aggregator has every part of
    /// a split when it holds a part that gives the size and every number from 1 up to it.
    pub const SEQUENCE_SIZE: &str = "sequence-size";
    /// Return Address: the channel a reply should be sent to.
    pub const RETURN_ADDRESS: &str = "return-address";
    /// Message History: the channels and steps the message went through, a JSON array (see
    /// [`history`](crate::message::history)).
    pub const HISTORY: &str = "history";
    /// Format Indicator: the media type of the payload, such as `application/json`.
    pub const CONTENT_TYPE: &str = "content-type";
    /// Message Expiration: the absolute time (milliseconds since the Unix epoch) after which the
    /// message must not be delivered.
    pub const EXPIRES_AT: &str = "expires-at";
    /// Priority, 0 (lowest) to 9 (highest).
    pub const PRIORITY: &str = "priority";
    /// How many more intermediate stores the message may pass through joins.
    pub const HOP_BUDGET: &str = "hop-budget";
    /// How many times the message has been delivered before and not acknowledged.
    pub const REDELIVERY_COUNT: &str = "redelivery-count";
    /// The death record (JSON) written when the message is dead-lettered or found invalid.
    pub const DEATH: &str = "death";
}

/// A header's name. The well-known names are static strings and cost no allocation.
pub type HeaderName = Cow<'static, str>;

/// A typed header value.
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderValue {
    /// UTF-8 text.
    Str(String),
    /// A signed 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// Raw bytes.
    Bytes(Bytes),
}

impl HeaderValue {
    /// The value's type, as used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            HeaderValue::Str(_) => "string",
            HeaderValue::Int(_) => "integer",
            HeaderValue::Float(_) => "float",
            HeaderValue::Bool(_) => "bool",
            HeaderValue::Bytes(_) => "bytes",
        }
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeaderValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            HeaderValue::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl fmt::Display for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderValue::Str(s) => f.write_str(s),
            HeaderValue::Int(i) => write!(f, "{i}"),
            HeaderValue::Float(x) => write!(f, "{x}"),
            HeaderValue::Bool(b) => write!(f, "{b}"),
            HeaderValue::Bytes(b) => write!(f, "<{} bytes>", b.len()),
        }
    }
}

impl From<&str> for HeaderValue {
    fn from(v: &str) -> Self {
        HeaderValue::Str(v.to_owned())
    }
}
impl From<String> for HeaderValue {
    fn from(v: String) -> Self {
        HeaderValue::Str(v)
    }
}
impl From<i64> for HeaderValue {
    fn from(v: i64) -> Self {
        HeaderValue::Int(v)
    }
}
impl From<i32> for HeaderValue {
    fn from(v: i32) -> Self {
        HeaderValue::Int(i64::from(v))
    }
}
impl From<u32> for HeaderValue {
    fn from(v: u32) -> Self {
        HeaderValue::Int(i64::from(v))
    }
}
impl From<f64> for HeaderValue {
    fn from(v: f64) -> Self {
        HeaderValue::Float(v)
    }
}
impl From<bool> for HeaderValue {
    fn from(v: bool) -> Self {
        HeaderValue::Bool(v)
    }
}
impl From<Bytes> for HeaderValue {
    fn from(v: Bytes) -> Self {
        HeaderValue::Bytes(v)
    }
}

/// A well-known header that is present but cannot be read as its type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HeaderError {
    /// The header holds a value of another type.
    #[error("header `{name}` should be {expected}, found {found}")]
    WrongType {
        /// The header's name.
        name: &'static str,
        /// The type eip expects there.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// The header has the right type but a value out of range or malformed.
    #[error("header `{name}` is malformed: {reason}")]
    Malformed {
        /// The header's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// A message's headers: a sorted, copy-on-write map from name to typed value.
#[derive(Clone, Default, PartialEq)]
pub struct Headers {
    map: Option<Arc<BTreeMap<HeaderName, HeaderValue>>>,
}

impl Headers {
    /// No headers; allocates nothing.
    pub fn new() -> Self {
        Headers::default()
    }

    /// The value of a header.
    pub fn get(&self, name: &str) -> Option<&HeaderValue> {
        self.map.as_ref()?.get(name)
    }

    /// Whether a header is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Sets a header, copying the map first if another message shares it.
    pub fn insert(&mut self, name: impl Into<HeaderName>, value: impl Into<HeaderValue>) {
        let map = self.map.get_or_insert_with(Default::default);
        Arc::make_mut(map).insert(name.into(), value.into());
    }

    /// Removes a header, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<HeaderValue> {
        let map = self.map.as_mut()?;
        if !map.contains_key(name) {
            return None;
        }
        Arc::make_mut(map).remove(name)
    }

    /// The number of headers.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The headers in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &HeaderValue)> {
        self.map
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| (k.as_ref(), v))
    }

    /// Whether `self` and `other` share one map (no copy was made between them).
    pub fn shares_storage_with(&self, other: &Headers) -> bool {
        match (&self.map, &other.map) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    pub(crate) fn str(&self, name: &'static str) -> Result<Option<&str>, HeaderError> {
        match self.get(name) {
            None => Ok(None),
            Some(HeaderValue::Str(s)) => Ok(Some(s)),
            Some(other) => Err(HeaderError::WrongType {
                name,
                expected: "string",
                found: other.type_name(),
            }),
        }
    }

    pub(crate) fn int(&self, name: &'static str) -> Result<Option<i64>, HeaderError> {
        match self.get(name) {
            None => Ok(None),
            Some(HeaderValue::Int(i)) => Ok(Some(*i)),
            Some(other) => Err(HeaderError::WrongType {
                name,
                expected: "integer",
                found: other.type_name(),
            }),
        }
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<N: Into<HeaderName>, V: Into<HeaderValue>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut headers = Headers::new();
        for (n, v) in iter {
            headers.insert(n, v);
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_headers_allocate_no_map() {
        let h = Headers::new();
        assert!(h.map.is_none());
        assert_eq!(h.len(), 0);
        assert_eq!(h.get("x"), None);
    }

    #[test]
    fn write_to_shared_headers_copies_only_the_writer() {
        let mut a = Headers::new();
        a.insert("k", "v");
        let mut b = a.clone();
        assert!(a.shares_storage_with(&b));
        b.insert("k", 2_i64);
        assert!(!a.shares_storage_with(&b));
        assert_eq!(a.get("k"), Some(&HeaderValue::Str("v".into())));
        assert_eq!(b.get("k"), Some(&HeaderValue::Int(2)));
    }

    #[test]
    fn removing_an_absent_header_does_not_copy() {
        let mut a: Headers = [("k", "v")].into_iter().collect();
        let mut b = a.clone();
        assert_eq!(b.remove("missing"), None);
        assert!(a.shares_storage_with(&b));
        assert_eq!(a.remove("k"), Some(HeaderValue::Str("v".into())));
        assert!(b.contains("k"));
    }

    #[test]
    fn typed_access_reports_wrong_type() {
        let h: Headers = [(names::PRIORITY, "high")].into_iter().collect();
        assert_eq!(
            h.int(names::PRIORITY),
            Err(HeaderError::WrongType {
                name: names::PRIORITY,
                expected: "integer",
                found: "string"
            })
        );
    }
}
