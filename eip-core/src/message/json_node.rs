//! What the predicate language asks of a JSON document, answered alike by a full parse
//! (`&serde_json::Value`) and by a projection ([`TreeNode`](super::tree::TreeNode)).
//!
//! JSONPath's walk, its filters and the predicates' comparisons are written once against
//! [`JsonNode`], so a router reads a payload's projection exactly as it would read the full
//! parse: same nodes, same order (an object's members in key order, as in serde_json's map).

use serde_json::{Number, Value};

/// A node's kind, with its scalar value or its number of members.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind<'a> {
    Null,
    Bool(bool),
    Number(&'a Number),
    Str(&'a str),
    Array(usize),
    Object(usize),
}

/// A node of a JSON document; see the [module](self).
pub(crate) trait JsonNode<'a>: Copy {
    /// What the node is.
    fn kind(self) -> Kind<'a>;
    /// An object's member called `name` (the last, if the document gives it twice).
    fn field(self, name: &str) -> Option<Self>;
    /// An array's item at `index`.
    fn item(self, index: usize) -> Option<Self>;
    /// An array's items or an object's member values, in order; nothing for a scalar.
    fn children(self) -> impl Iterator<Item = Self>;
    /// An object's members with their keys, in key order; nothing for anything else.
    fn members(self) -> impl Iterator<Item = (&'a str, Self)>;
    /// The node as a `Value` of its own.
    fn to_value(self) -> Value;
}

impl<'a> JsonNode<'a> for &'a Value {
    fn kind(self) -> Kind<'a> {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(b) => Kind::Bool(*b),
            Value::Number(n) => Kind::Number(n),
            Value::String(s) => Kind::Str(s),
            Value::Array(a) => Kind::Array(a.len()),
            Value::Object(o) => Kind::Object(o.len()),
        }
    }

    fn field(self, name: &str) -> Option<Self> {
        self.as_object()?.get(name)
    }

    fn item(self, index: usize) -> Option<Self> {
        self.as_array()?.get(index)
    }

    fn children(self) -> impl Iterator<Item = Self> {
        let (items, fields) = match self {
            Value::Array(a) => (Some(a.iter()), None),
            Value::Object(o) => (None, Some(o.values())),
            _ => (None, None),
        };
        items
            .into_iter()
            .flatten()
            .chain(fields.into_iter().flatten())
    }

    fn members(self) -> impl Iterator<Item = (&'a str, Self)> {
        self.as_object()
            .into_iter()
            .flatten()
            .map(|(key, value)| (key.as_str(), value))
    }

    fn to_value(self) -> Value {
        self.clone()
    }
}

/// Whether two names are the same bytes: compared here, byte by byte, because the names a
/// projection compares are a few bytes long, shorter than a call to `memcmp` costs.
pub(super) fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}
