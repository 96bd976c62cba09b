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
///
/// Headers made by [`overlaid`](Headers::overlaid) share another set's map and hold only
/// their own few headers beside it (the parts of a split: the original's headers, and each
/// part's sequence number): the map is neither copied nor its strings cloned. The first
/// change to such headers folds the two into one map of its own.
#[derive(Clone, Default)]
pub struct Headers {
    map: Option<SharedMap>,
    /// Headers set over `map`, sorted by name, each name once: they hide `map`'s. Boxed
    /// behind the count (a thin pointer) so that headers stay three words: they are moved
    /// with every message.
    over: Option<Arc<Box<Overlay>>>,
}

/// Headers set over a shared map ([`Headers::overlaid`]), sorted by name.
type Overlay = [(HeaderName, HeaderValue)];

/// The map of a set of headers, shared by its copies: counted, or made once and kept for the
/// life of the process ([`Headers::forever`]), which copies share without touching a reference
/// count. Each join crossing sets one of a few such maps (the hop budget), so along a chain of
/// joins no copy of a message counts references for its headers.
#[derive(Clone)]
enum SharedMap {
    Counted(Arc<Map>),
    Forever(&'static Map),
}

impl std::ops::Deref for SharedMap {
    type Target = Map;
    fn deref(&self) -> &Map {
        match self {
            SharedMap::Counted(map) => map,
            SharedMap::Forever(map) => map,
        }
    }
}

impl Default for SharedMap {
    fn default() -> Self {
        SharedMap::Counted(Arc::default())
    }
}

impl SharedMap {
    /// The map to change, copied first if shared (a map kept forever always is).
    fn make_mut(&mut self) -> &mut Map {
        match self {
            SharedMap::Counted(map) => Arc::make_mut(map),
            SharedMap::Forever(map) => {
                let copy = Map::clone(map);
                *self = SharedMap::Counted(Arc::new(copy));
                self.make_mut()
            }
        }
    }

    fn as_ptr(&self) -> *const Map {
        &**self
    }
}

impl Headers {
    /// No headers; allocates nothing.
    pub fn new() -> Self {
        Headers::default()
    }

    /// These headers with `over` set on them, sharing this set's map instead of copying it:
    /// one allocation, whatever the number of headers shared. For many messages that differ
    /// from one set of headers in a few (the parts of a split). A name given twice keeps its
    /// later value, as [`insert`](Self::insert) would.
    pub fn overlaid<const N: usize>(&self, over: [(HeaderName, HeaderValue); N]) -> Headers {
        let mut headers = self.clone();
        headers.flatten();
        let mut over = over;
        // Stable: of a name given twice, the later stays later.
        over.sort_by(|a, b| a.0.cmp(&b.0));
        if over.windows(2).any(|w| w[0].0 == w[1].0) {
            for (name, value) in over {
                headers.insert(name, value);
            }
            return headers;
        }
        headers.over = (N > 0).then(|| Arc::new(Box::from(over)));
        headers
    }

    /// The value of a header.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&HeaderValue> {
        if self.map.is_none() && self.over.is_none() {
            // No headers at all, as on most messages: asked on every delivery (expiration).
            return None;
        }
        if let Some(value) = self.over_get(name) {
            return Some(value);
        }
        self.map.as_ref()?.get(name)
    }

    fn over_slice(&self) -> &Overlay {
        self.over.as_deref().map_or(&[], |over| over)
    }

    fn over_get(&self, name: &str) -> Option<&HeaderValue> {
        let over = self.over.as_deref()?;
        over.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Whether a header is present.
    #[inline]
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Folds the headers set over the map into a map of its own (copied if shared).
    fn flatten(&mut self) {
        let Some(over) = self.over.take() else {
            return;
        };
        let map = self.map.get_or_insert_with(Default::default).make_mut();
        for (name, value) in over.iter() {
            map.insert(name.clone(), value.clone());
        }
    }

    /// Sets a header, copying the map first if another message shares it.
    pub fn insert(&mut self, name: impl Into<HeaderName>, value: impl Into<HeaderValue>) {
        self.flatten();
        let map = self.map.get_or_insert_with(Default::default);
        map.make_mut().insert(name.into(), value.into());
    }

    /// Removes a header, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<HeaderValue> {
        if !self.contains(name) {
            return None;
        }
        self.flatten();
        self.map.as_mut()?.make_mut().remove(name)
    }

    /// The number of headers.
    pub fn len(&self) -> usize {
        let map = self.map.as_ref().map_or(0, |m| m.entries.len());
        let over = self.over_slice();
        let hidden = over.iter().filter(|(k, _)| self.map_has(k)).count();
        map + over.len() - hidden
    }

    fn map_has(&self, name: &str) -> bool {
        self.map.as_ref().is_some_and(|m| m.get(name).is_some())
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The headers in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &HeaderValue)> {
        let map = self.map.iter().flat_map(|m| m.entries.iter());
        let over = self.over_slice().iter();
        Merged {
            map: map.map(|(k, v)| (k.as_ref(), v)).peekable(),
            over: over.map(|(k, v)| (k.as_ref(), v)).peekable(),
        }
    }

    /// Whether `self` and `other` share one map (no copy was made between them).
    pub fn shares_storage_with(&self, other: &Headers) -> bool {
        let map = match (&self.map, &other.map) {
            (Some(a), Some(b)) => std::ptr::eq(a.as_ptr(), b.as_ptr()),
            (None, None) => true,
            _ => false,
        };
        let over = match (&self.over, &other.over) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        map && over
    }

    /// These headers, kept for the life of the process: their copies share the map without
    /// counting references, and dropping one frees nothing. For the few header sets made once
    /// and set on many messages; each call keeps one more map, so make them once.
    pub(crate) fn forever(mut self) -> Headers {
        self.flatten();
        match self.map.take() {
            Some(map) => Headers {
                map: Some(SharedMap::Forever(Box::leak(Box::new(Map::clone(&map))))),
                over: None,
            },
            None => self,
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

/// The map behind [`Headers`], with a summary of the names in it: a bit per name, by its
/// length and outer letters. A look-up for a name whose bit is clear is answered without a
/// search. Deliveries ask every message for its expiration: on a message with headers but no
/// `expires-at` (the hop budget of a join, a subject), that costs a few instructions instead of
/// string comparisons down the tree.
#[derive(Clone, Default)]
struct Map {
    names: u64,
    entries: BTreeMap<HeaderName, HeaderValue>,
}

impl Map {
    /// The summary's bit for `name`.
    fn bit(name: &str) -> u64 {
        let bytes = name.as_bytes();
        let first = usize::from(bytes.first().copied().unwrap_or(0));
        let last = usize::from(bytes.last().copied().unwrap_or(0));
        1 << ((first * 3 + last * 5 + bytes.len()) % 64)
    }

    fn get(&self, name: &str) -> Option<&HeaderValue> {
        if self.names & Map::bit(name) == 0 {
            return None;
        }
        self.entries.get(name)
    }

    fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        self.names |= Map::bit(&name);
        self.entries.insert(name, value);
    }

    fn remove(&mut self, name: &str) -> Option<HeaderValue> {
        let removed = self.entries.remove(name)?;
        self.names = self.entries.keys().fold(0, |names, k| names | Map::bit(k));
        Some(removed)
    }
}

impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// Two iterators in name order as one: of a name in both, the one set over the map.
struct Merged<
    'a,
    M: Iterator<Item = (&'a str, &'a HeaderValue)>,
    O: Iterator<Item = (&'a str, &'a HeaderValue)>,
> {
    map: std::iter::Peekable<M>,
    over: std::iter::Peekable<O>,
}

impl<'a, M, O> Iterator for Merged<'a, M, O>
where
    M: Iterator<Item = (&'a str, &'a HeaderValue)>,
    O: Iterator<Item = (&'a str, &'a HeaderValue)>,
{
    type Item = (&'a str, &'a HeaderValue);

    fn next(&mut self) -> Option<Self::Item> {
        let order = match (self.map.peek(), self.over.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(m), Some(o)) => m.0.cmp(o.0),
        };
        match order {
            std::cmp::Ordering::Less => self.map.next(),
            std::cmp::Ordering::Greater => self.over.next(),
            std::cmp::Ordering::Equal => {
                self.map.next();
                self.over.next()
            }
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
mod tests;
