//! The value a step computes from a message: a correlation key, a sequence number, a dedupe key.
//!
//! A [`Key`] reads a header, takes the message id, or calls a function the caller gives (the
//! DSL plugs jq expressions in there). A key that can not be computed is a [`KeyError`]: the
//! step hands the message back as invalid with that reason, never panics and never drops it.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use eip_core::message::{HeaderValue, Message, names};

/// A caller's function computing a key; `Err` carries the reason the message is invalid.
pub type KeyFn = dyn Fn(&Message) -> Result<String, String> + Send + Sync;

/// Where a step takes a key from.
///
/// ```
/// use eip_core::Message;
/// use eip_steps::aggregate::Key;
///
/// let msg = Message::builder("{}").header("sensor", "s-7").build();
/// assert_eq!(Key::header("sensor").eval(&msg).unwrap(), "s-7");
/// assert!(Key::header("missing").eval(&msg).is_err());
/// let by_len = Key::computed(|m| Ok(m.payload().len().to_string()));
/// assert_eq!(by_len.eval(&msg).unwrap(), "2");
/// ```
#[derive(Clone)]
pub enum Key {
    /// A header's value: a string as it is, an integer or a bool written out. Absent, or
    /// holding bytes or a float, is an error.
    Header(Arc<str>),
    /// The message id, as its hyphenated UUID text.
    MessageId,
    /// A function of the message.
    Computed(Arc<KeyFn>),
}

/// A key that could not be computed from a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The header is not on the message.
    #[error("header `{0}` is missing")]
    Missing(String),
    /// The header holds a value that is no key.
    #[error("header `{name}` holds a {found}, not a string or an integer")]
    WrongType {
        /// The header's name.
        name: String,
        /// The type found there.
        found: &'static str,
    },
    /// The caller's function refused the message.
    #[error("{0}")]
    Computed(String),
    /// The key is not a whole number from 1 up (for a sequence number or size).
    #[error("`{value}` is not a sequence number (a whole number from 1)")]
    NotANumber {
        /// The key's text.
        value: String,
    },
}

impl Key {
    /// The value of header `name`.
    pub fn header(name: impl AsRef<str>) -> Self {
        Key::Header(Arc::from(name.as_ref()))
    }

    /// The `correlation-id` header: the aggregator's default.
    pub fn correlation_id() -> Self {
        Key::header(names::CORRELATION_ID)
    }

    /// The message id: the idempotent receiver's default.
    pub fn message_id() -> Self {
        Key::MessageId
    }

    /// A function of the message; `Err(reason)` makes the message invalid.
    pub fn computed(
        f: impl Fn(&Message) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        Key::Computed(Arc::new(f))
    }

    /// The key of `msg`, borrowed from its headers where it can be.
    pub fn eval<'m>(&self, msg: &'m Message) -> Result<Cow<'m, str>, KeyError> {
        match self {
            Key::Header(name) => match msg.headers().get(name) {
                None => Err(KeyError::Missing(name.to_string())),
                Some(HeaderValue::Str(s)) => Ok(Cow::Borrowed(s.as_str())),
                Some(HeaderValue::Int(i)) => Ok(Cow::Owned(i.to_string())),
                Some(HeaderValue::Bool(b)) => Ok(Cow::Owned(b.to_string())),
                Some(other) => Err(KeyError::WrongType {
                    name: name.to_string(),
                    found: other.type_name(),
                }),
            },
            Key::MessageId => Ok(Cow::Owned(msg.id().to_string())),
            Key::Computed(f) => f(msg).map(Cow::Owned).map_err(KeyError::Computed),
        }
    }

    /// The key of `msg`, kept apart from the message (which can then move on): a short key
    /// is copied onto the stack, a longer one into a string.
    pub(crate) fn eval_detached(&self, msg: &Message) -> Result<KeyValue, KeyError> {
        if let Key::MessageId = self {
            let mut text = StackText::default();
            if write!(text, "{}", msg.id()).is_ok() {
                return Ok(KeyValue::Inline {
                    bytes: text.bytes,
                    len: text.len,
                });
            }
        }
        match self.eval(msg)? {
            Cow::Borrowed(text) if text.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..text.len()].copy_from_slice(text.as_bytes());
                Ok(KeyValue::Inline {
                    bytes,
                    len: text.len(),
                })
            }
            text => Ok(KeyValue::Text(text.into_owned())),
        }
    }

    /// The key of `msg` read as a sequence number: a whole number from 1.
    pub fn eval_number(&self, msg: &Message) -> Result<u64, KeyError> {
        if let Key::Header(name) = self
            && let Some(HeaderValue::Int(i)) = msg.headers().get(name)
        {
            return u64::try_from(*i).ok().filter(|n| *n >= 1).ok_or_else(|| {
                KeyError::NotANumber {
                    value: i.to_string(),
                }
            });
        }
        let text = self.eval(msg)?;
        parse_number(&text)
    }

    /// The key of `msg` as a sequence number, or `None` when this is a header key and the
    /// header is absent.
    pub(crate) fn eval_optional_number(&self, msg: &Message) -> Result<Option<u64>, KeyError> {
        if let Key::Header(name) = self
            && !msg.headers().contains(name)
        {
            return Ok(None);
        }
        self.eval_number(msg).map(Some)
    }
}

/// The longest key a [`KeyValue`] holds without allocating.
const INLINE: usize = 48;

/// Text written onto the stack, up to [`INLINE`] bytes (more is an error).
struct StackText {
    bytes: [u8; INLINE],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; INLINE],
            len: 0,
        }
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A key computed from a message, holding no borrow of it.
pub(crate) enum KeyValue {
    /// A short key, copied (the first `len` bytes of `bytes`, copied from a `str`).
    Inline { bytes: [u8; INLINE], len: usize },
    /// Any other key.
    Text(String),
}

impl KeyValue {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            // The bytes were copied whole from a `str`, so they are UTF-8.
            KeyValue::Inline { bytes, len } => {
                std::str::from_utf8(&bytes[..*len]).unwrap_or_default()
            }
            KeyValue::Text(text) => text,
        }
    }
}

fn parse_number(text: &str) -> Result<u64, KeyError> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| KeyError::NotANumber {
            value: text.to_owned(),
        })
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Header(name) => write!(f, "Key::Header({name:?})"),
            Key::MessageId => f.write_str("Key::MessageId"),
            Key::Computed(_) => f.write_str("Key::Computed(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_keys_read_strings_and_integers_and_refuse_other_types() {
        let msg = Message::builder("x")
            .header("n", 7_i64)
            .header("f", 1.5_f64)
            .header("s", "a")
            .build();
        assert_eq!(Key::header("s").eval(&msg).unwrap(), "a");
        assert_eq!(Key::header("n").eval(&msg).unwrap(), "7");
        assert!(matches!(
            Key::header("f").eval(&msg),
            Err(KeyError::WrongType { .. })
        ));
        assert_eq!(
            Key::header("z").eval(&msg),
            Err(KeyError::Missing("z".into()))
        );
    }

    #[test]
    fn sequence_numbers_are_whole_numbers_from_one() {
        let ok = Message::builder("x").header("n", "12").build();
        assert_eq!(Key::header("n").eval_number(&ok), Ok(12));
        for bad in [
            Message::builder("x").header("n", 0_i64).build(),
            Message::builder("x").header("n", -3_i64).build(),
            Message::builder("x").header("n", "one").build(),
        ] {
            assert!(matches!(
                Key::header("n").eval_number(&bad),
                Err(KeyError::NotANumber { .. })
            ));
        }
        assert_eq!(
            Key::header("n").eval_optional_number(&Message::new("")),
            Ok(None)
        );
    }

    #[test]
    fn a_computed_key_that_fails_gives_its_reason() {
        let key = Key::computed(|_| Err("no sensor in payload".into()));
        assert_eq!(
            key.eval(&Message::new("")),
            Err(KeyError::Computed("no sensor in payload".into()))
        );
    }
}
