//! The payload read for a program that reads only parts of it: the parts its [`Demand`] names
//! are built as jq values, the rest is read past without building anything.
//!
//! What is skipped is still read by serde_json the same way as what is built, through the same
//! calls (`deserialize_any` down to every scalar): every string is checked (escapes, UTF-8),
//! every number parsed (one out of range is an error), the nesting counted against the same
//! limit of 128, so a payload that is not JSON is [`RunError::NotJson`](super::RunError) with
//! the same reason, line and column as when the whole payload is built. serde's `IgnoredAny` is
//! not used for it: it checks less (no UTF-8, no number range, no nesting limit).
//!
//! What is built (see [`super::demand`] for why this is enough for the program):
//!
//! - an object keeps the fields read by name, in their order; all of them when the program
//!   iterates it; a key given twice keeps, as in the whole payload, its first place and its
//!   last value. An object indexed by number is kept whole (jq's error quotes it).
//! - an array keeps every item, each built as its items are read (`null` in place of one never
//!   looked at); none when its items are never read at all; all of it when it is read by key
//!   (jq's error quotes it).
//! - numbers, strings, booleans and `null` are kept whole.

use std::fmt;

use jaq_json::Val;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::demand::{Demand, Parts};
use super::value::Payload;

/// Reads one JSON value, building what `demand` reads of it.
#[derive(Clone, Copy)]
pub(super) struct Project<'a, 'p> {
    base: &'a Payload<'p>,
    demand: &'a Demand,
}

impl<'a, 'p> Project<'a, 'p> {
    pub(super) fn new(base: &'a Payload<'p>, demand: &'a Demand) -> Self {
        Project { base, demand }
    }
}

impl<'de> DeserializeSeed<'de> for Project<'_, '_> {
    type Value = Val;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Val, D::Error> {
        match self.demand {
            Demand::All => self.base.deserialize(deserializer),
            Demand::Nothing => deserializer.deserialize_any(Skip).map(|()| Val::Null),
            Demand::Parts(parts) => deserializer.deserialize_any(Within {
                base: self.base,
                parts,
            }),
        }
    }
}

/// A value of which `parts` are read.
#[derive(Clone, Copy)]
struct Within<'a, 'p> {
    base: &'a Payload<'p>,
    parts: &'a Parts,
}

impl<'de> Visitor<'de> for Within<'_, '_> {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Val, E> {
        Visitor::<'de>::visit_bool(self.base, v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Val, E> {
        Visitor::<'de>::visit_i64(self.base, v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Val, E> {
        Visitor::<'de>::visit_u64(self.base, v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Val, E> {
        Visitor::<'de>::visit_f64(self.base, v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Val, E> {
        self.base.visit_borrowed_str(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Val, E> {
        Visitor::<'de>::visit_str(self.base, v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Val, E> {
        Visitor::<'de>::visit_string(self.base, v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Val, E> {
        Visitor::<'de>::visit_unit(self.base)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        if !self.parts.fields.is_empty() {
            return self.base.visit_seq(seq);
        }
        let Some(items) = &self.parts.items else {
            while seq.next_element_seed(Skip)?.is_some() {}
            return Ok(Val::Arr(Vec::new().into()));
        };
        let start = self.base.scratch.borrow().items.len();
        while let Some(item) = seq.next_element_seed(Project::new(self.base, items))? {
            self.base.scratch.borrow_mut().items.push(item);
        }
        Ok(self.base.array(start))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        if self.parts.index.is_some() {
            return self.base.visit_map(map);
        }
        let fields = &self.parts.fields;
        let start = self.base.scratch.borrow().fields.len();
        if let Some(every) = &self.parts.iter {
            while let Some(key) = map.next_key_seed(self.base)? {
                let demand = match &key {
                    Val::TStr(text) => fields.get(text).unwrap_or(every),
                    _ => every,
                };
                let value = map.next_value_seed(Project::new(self.base, demand))?;
                self.base.scratch.borrow_mut().fields.push((key, value));
            }
        } else {
            while let Some(key) = map.next_key_seed(Key)? {
                match fields.get(key.text().as_bytes()) {
                    Some(demand) => {
                        let key = key.into_val(self.base);
                        let value = map.next_value_seed(Project::new(self.base, demand))?;
                        self.base.scratch.borrow_mut().fields.push((key, value));
                    }
                    None => map.next_value_seed(Skip)?,
                }
            }
        }
        Ok(self.base.object(start))
    }
}

/// An object key, borrowed from the payload unless it has escapes.
enum KeyText<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl KeyText<'_> {
    fn text(&self) -> &str {
        match self {
            KeyText::Borrowed(s) => s,
            KeyText::Owned(s) => s,
        }
    }

    fn into_val(self, base: &Payload<'_>) -> Val {
        match self {
            KeyText::Borrowed(s) => base.string(s),
            KeyText::Owned(s) => Val::utf8_str(s.into_bytes()),
        }
    }
}

/// Reads an object key (serde_json hands keys as strings only).
#[derive(Clone, Copy)]
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = KeyText<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<KeyText<'de>, D::Error> {
        d.deserialize_any(Key)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = KeyText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Owned(v))
    }
}

/// Reads past one value, checking it as the whole payload's parse would, building nothing.
#[derive(Clone, Copy)]
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
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
