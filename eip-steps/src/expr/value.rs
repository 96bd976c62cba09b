//! Between a message and jaq's values: the payload read into a `jaq_json::Val`, the headers and
//! id as jq variables, and an output written back as JSON.
//!
//! The payload is parsed by serde_json (strict JSON, errors with line and column) straight into
//! jaq's value type, never through `serde_json::Value`: a string without escapes is a slice of
//! the payload's [`Bytes`], not a copy, and each array and object is allocated once, at its
//! size, from items gathered on a scratch stack kept by the thread. An output is written by serde_json from the jaq value
//! (keys in the order jq made them).

use std::cell::RefCell;
use std::fmt;

use bytes::Bytes;
use eip_core::message::{HeaderValue, Headers};
use jaq_json::{Map, Num, Val};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};

use super::demand::Demand;
use super::error::RunError;
use super::project::Project;
use super::read;

/// The payload as a jaq value: only the parts `demand` reads (see [`super::project`]), read by
/// [`super::read`] straight from the bytes, or by serde_json when that gives up (a payload that
/// is not JSON: serde_json's error).
pub(crate) fn parse_payload(payload: &Bytes, demand: &Demand) -> Result<Val, RunError> {
    with_scratch(|scratch| match read::read(payload, demand, scratch) {
        Ok(value) => Ok(value),
        Err(read::GiveUp) => parse_with_serde(payload, demand, scratch),
    })
}

/// The payload parsed by serde_json alone: the reference [`parse_payload`] is held to.
pub(crate) fn parse_payload_with_serde(payload: &Bytes, demand: &Demand) -> Result<Val, RunError> {
    with_scratch(|scratch| parse_with_serde(payload, demand, scratch))
}

/// `f` with the thread's scratch stacks, empty.
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    with_local(&SCRATCH, |scratch| {
        scratch.clear();
        f(scratch)
    })
}

/// `f` with the thread's `local`; one made for the call when it is in use already (a parse
/// inside another's: never, but a thread-local must not be borrowed twice).
fn with_local<L: Default, T>(
    local: &'static std::thread::LocalKey<RefCell<L>>,
    f: impl FnOnce(&mut L) -> T,
) -> T {
    local.with(|cell| match cell.try_borrow_mut() {
        Ok(mut held) => f(&mut held),
        Err(_) => f(&mut L::default()),
    })
}

fn parse_with_serde(
    payload: &Bytes,
    demand: &Demand,
    scratch: &mut Scratch,
) -> Result<Val, RunError> {
    let mut de = serde_json::Deserializer::from_slice(payload);
    let seed = Payload {
        payload,
        scratch: RefCell::new(std::mem::take(scratch)),
    };
    let value = match demand {
        Demand::All => (&seed).deserialize(&mut de),
        demand => Project::new(&seed, demand).deserialize(&mut de),
    };
    let value = value
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| RunError::not_json(&e));
    *scratch = seed.scratch.into_inner();
    scratch.clear();
    value
}

/// The items and fields of the arrays and objects being read, innermost last: each is made
/// once complete, at its exact size, instead of growing (an array of ten items would be
/// allocated four times, an object of four fields would reserve room for eight).
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) items: Vec<Val>,
    pub(super) fields: Vec<(Val, Val)>,
}

impl Scratch {
    pub(super) fn clear(&mut self) {
        self.items.clear();
        self.fields.clear();
    }
}

thread_local! {
    /// Kept between parses: after the first, reading a payload allocates only its values.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
    /// Where an output is written before it is copied out at its size: one allocation for
    /// the payload instead of a growing buffer and the shared handle around it.
    static OUTPUT: RefCell<Vec<u8>> = RefCell::default();
}

/// The largest buffer [`OUTPUT`] keeps between outputs.
const KEPT_OUTPUT: usize = 64 * 1024;

/// `v` written as compact JSON.
pub(crate) fn write_payload(v: &Val) -> Result<Bytes, RunError> {
    with_local(&OUTPUT, |out| {
        out.clear();
        let written = serde_json::to_writer(&mut *out, &Json(v))
            .map(|()| Bytes::copy_from_slice(out))
            .map_err(|e| RunError::OutputNotJson(e.to_string()));
        if out.capacity() > KEPT_OUTPUT {
            *out = Vec::new();
        }
        written
    })
}

/// The headers as a jq object (see the module documentation of [`crate::expr`] for the rules).
pub(crate) fn headers(headers: &Headers) -> Val {
    let map: Map = headers
        .iter()
        .map(|(name, value)| (text(name), header(value)))
        .collect();
    Val::obj(map)
}

fn header(value: &HeaderValue) -> Val {
    match value {
        HeaderValue::Str(s) => text(s),
        HeaderValue::Int(i) => Val::Num(Num::from_integral(*i)),
        HeaderValue::Float(f) => Val::from(*f),
        HeaderValue::Bool(b) => Val::Bool(*b),
        // As predicates read them: the bytes as UTF-8, invalid sequences replaced.
        HeaderValue::Bytes(b) => text(&String::from_utf8_lossy(b)),
    }
}

/// A jq string holding a copy of `s`.
pub(crate) fn text(s: &str) -> Val {
    Val::utf8_str(Bytes::copy_from_slice(s.as_bytes()))
}

/// Reads one JSON value into a `Val`, borrowing unescaped strings from the payload.
pub(super) struct Payload<'p> {
    payload: &'p Bytes,
    pub(super) scratch: RefCell<Scratch>,
}

impl Payload<'_> {
    pub(super) fn string(&self, s: &str) -> Val {
        Val::utf8_str(self.payload.slice_ref(s.as_bytes()))
    }

    /// The array of the items on the scratch stack from `start` on (taken off).
    pub(super) fn array(&self, start: usize) -> Val {
        array_of(self.scratch.borrow_mut().items.drain(start..))
    }

    /// The object of the fields on the scratch stack from `start` on (taken off).
    pub(super) fn object(&self, start: usize) -> Val {
        object_of(self.scratch.borrow_mut().fields.drain(start..))
    }
}

/// An array of `items`, allocated once at its size.
pub(super) fn array_of(items: impl ExactSizeIterator<Item = Val>) -> Val {
    Val::Arr(items.collect::<Vec<Val>>().into())
}

/// An object of `fields`, in order; a key given twice keeps its first place and its last value,
/// as JSON parsers do.
pub(super) fn object_of(fields: impl ExactSizeIterator<Item = (Val, Val)>) -> Val {
    let mut object = Map::with_capacity_and_hasher(fields.len(), Default::default());
    object.extend(fields);
    Val::obj(object)
}

impl<'de> DeserializeSeed<'de> for &Payload<'_> {
    type Value = Val;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Val, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &Payload<'_> {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Val, E> {
        Ok(Val::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Val, E> {
        Ok(Val::Num(Num::from_integral(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Val, E> {
        Ok(Val::Num(Num::from_integral(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Val, E> {
        Ok(Val::from(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Val, E> {
        // serde_json hands out borrowed strings only from the slice it was given: the payload.
        Ok(self.string(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Val, E> {
        Ok(text(v))
    }

    fn visit_string<E>(self, v: String) -> Result<Val, E> {
        Ok(Val::utf8_str(v.into_bytes()))
    }

    fn visit_unit<E>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        // This array's items go on the scratch stack above those of the arrays around it
        // (an item's own items are taken off before it is pushed).
        let start = self.scratch.borrow().items.len();
        while let Some(item) = seq.next_element_seed(self)? {
            self.scratch.borrow_mut().items.push(item);
        }
        Ok(self.array(start))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        let start = self.scratch.borrow().fields.len();
        while let Some(key) = map.next_key_seed(self)? {
            let value = map.next_value_seed(self)?;
            self.scratch.borrow_mut().fields.push((key, value));
        }
        Ok(self.object(start))
    }
}

/// A jaq value written as JSON: non-finite numbers become `null` (as in jq), a byte string is
/// written as text, an object key that is not a string is an error.
pub(crate) struct Json<'v>(pub(crate) &'v Val);

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Val::Null => s.serialize_unit(),
            Val::Bool(b) => s.serialize_bool(*b),
            Val::Num(n) => number(n, s),
            Val::TStr(b) | Val::BStr(b) => s.serialize_str(&utf8(b)),
            Val::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(&Json(item))?;
                }
                seq.end()
            }
            Val::Obj(object) => {
                let mut map = s.serialize_map(Some(object.len()))?;
                for (key, value) in object.iter() {
                    match key {
                        Val::TStr(b) | Val::BStr(b) => map.serialize_key(&*utf8(b))?,
                        other => {
                            return Err(ser::Error::custom(format_args!(
                                "object key {} is not a string",
                                super::error::shorten(other.to_string())
                            )));
                        }
                    }
                    map.serialize_value(&Json(value))?;
                }
                map.end()
            }
        }
    }
}

fn number<S: Serializer>(n: &Num, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Num::Int(i) => s.serialize_i64(*i as i64),
        Num::Float(f) => s.serialize_f64(*f),
        // Beyond 64 bits, or a decimal literal of the expression: as serde_json reads them.
        Num::BigInt(_) | Num::Dec(_) => {
            let digits = n.to_string();
            if let Ok(i) = digits.parse::<i64>() {
                s.serialize_i64(i)
            } else if let Ok(u) = digits.parse::<u64>() {
                s.serialize_u64(u)
            } else {
                s.serialize_f64(digits.parse::<f64>().unwrap_or(f64::NAN))
            }
        }
    }
}

fn utf8(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(b),
    }
}
