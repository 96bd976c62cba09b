//! A payload read from its bytes in one pass, building a [`serde_json::Value`] of only the parts
//! a [`Demand`] names.
//!
//! Two readers do it. The [fast one](scan) is a hand-written pass over the bytes: it checks
//! what it skips as strictly as serde_json would (string escapes, control characters, UTF-8,
//! the number grammar, the nesting) without building anything, and hands the demanded parts to
//! serde_json. It gives up, answering nothing, on whatever it can not be sure serde_json would
//! accept exactly as it is: any error, a lone or paired surrogate escape, a number near the
//! edge of `f64`'s range, nesting deeper than 100. Then the *checked* reader below reads the
//! payload again and its answer (the same value, or serde_json's own error) is the result. So
//! the fast reader decides nothing on its own: it only ever answers what the checked reader
//! would, sooner, and the proptest in this module's tests holds it to that.
//!
//! The checked reader lets serde_json read what is not built through the same calls a full parse
//! makes (`deserialize_any` down to every scalar): every string is checked (escapes, UTF-8),
//! every number parsed (one out of range is an error, `float_roundtrip` applies), nesting counts
//! against the same limit of 128, and characters after the value are refused. So a payload that
//! is not JSON fails here with the same error, line and column as
//! `serde_json::from_slice::<Value>`. serde's `IgnoredAny` is not used for the skipped parts:
//! serde_json skips those with a scanner that checks less (no UTF-8, no number range, no depth).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::demand::{Demand, Node, Parts};
use super::tree::Tree;

mod scan;

/// `payload` read as JSON, with only what `demand` reads built (see [`Demand`] for what the
/// result holds): by the fast reader when it answers, else by the checked one.
pub(crate) fn project<'p>(
    payload: &'p [u8],
    demand: &'p Demand,
) -> Result<Projection<'p>, serde_json::Error> {
    match scan::project(payload, demand) {
        Some(tree) => Ok(Projection::Tree(tree)),
        None => project_checked(payload, demand).map(Projection::Value),
    }
}

/// A projected payload, as the reader that read it built it.
pub(crate) enum Projection<'p> {
    /// The fast reader's.
    Tree(Tree<'p>),
    /// The checked reader's.
    Value(Value),
}

/// [`project`] by serde_json alone: slower, and the one that says what is wrong.
fn project_checked(payload: &[u8], demand: &Demand) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    let value = Project(demand.node()).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Reads one value, building what the node demands.
#[derive(Clone, Copy)]
struct Project<'d>(&'d Node);

impl<'de> DeserializeSeed<'de> for Project<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Node::Whole => Value::deserialize(deserializer),
            Node::Parts(parts) => deserializer.deserialize_any(Within(parts)),
        }
    }
}

/// A value of which some children are read; a scalar becomes `null` (nothing selects in it).
#[derive(Clone, Copy)]
struct Within<'d>(&'d Parts);

impl<'de> Visitor<'de> for Within<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let kept = self.0.kept_items();
        let mut items = Vec::new();
        let mut index = 0;
        loop {
            match self.0.item(index) {
                Some(node) => match seq.next_element_seed(Project(node))? {
                    Some(value) => items.push(value),
                    None => break,
                },
                None => match seq.next_element_seed(Skip)? {
                    Some(()) if index < kept => items.push(Value::Null),
                    Some(()) => {}
                    None => break,
                },
            }
            index += 1;
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            match key {
                Some((name, node)) => {
                    let value = map.next_value_seed(Project(node))?;
                    // A key given twice keeps its last value, as in a full parse.
                    fields.insert(name, value);
                }
                None => map.next_value_seed(Skip)?,
            }
        }
        Ok(Value::Object(fields))
    }
}

/// An object's key: with what is read of its value, or `None` when nothing is (the key is
/// then not copied).
struct Key<'d>(&'d Parts);

impl<'de, 'd> DeserializeSeed<'de> for Key<'d> {
    type Value = Option<(String, &'d Node)>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, 'd> Visitor<'de> for Key<'d> {
    type Value = Option<(String, &'d Node)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.field(key).map(|node| (key.to_owned(), node)))
    }
}

/// Reads a value, checking it as a full parse does, and builds nothing.
#[derive(Clone, Copy)]
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
