//! The YAML document as a tree of nodes, each with where it was written.
//!
//! serde-saphyr gives a position to every value read as a [`Spanned`]; reading every child of
//! a sequence or mapping (keys too) as a `Spanned` keeps the position of every node. Nothing
//! here is `untagged` or `flatten`, which would lose them.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

/// A YAML node and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) at: RawLocation,
}

/// Where serde-saphyr says a node is: its line and column (1-based, in characters) and, when
/// known, its byte range. For a quoted scalar the range includes the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawLocation {
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) bytes: Option<(usize, usize)>,
}

impl RawLocation {
    pub(crate) fn from_location(loc: &Location) -> Self {
        let span = loc.span();
        let bytes = match (span.byte_offset(), span.byte_len()) {
            (Some(offset), Some(len)) => {
                usize::try_from(offset).ok().zip(usize::try_from(len).ok())
            }
            _ => None,
        };
        RawLocation {
            line: u32::try_from(loc.line()).unwrap_or(u32::MAX),
            column: u32::try_from(loc.column()).unwrap_or(u32::MAX),
            bytes,
        }
    }
}

/// The value of a node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// What kind of value this is, for "found ..." in messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Value::Null => "nothing (null)",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "a whole number",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            value: spanned.value,
            // Where the value is used: for an alias, the alias, not the anchored original.
            at: RawLocation::from_location(&spanned.referenced),
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        // Beyond i128 only the magnitude matters (every such value is out of range).
        Ok(i128::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Str(String::from_utf8_lossy(v).into_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // Repeated keys arrive here (duplicate keys pass through): the reader reports them.
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Node>()? {
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }
}
