//! A payload read from its bytes in one pass, building a [`serde_json::Value`] of only the parts
//! a [`Demand`] names.
//!
//! What is not built is still read by serde_json through the same calls a full parse makes
//! (`deserialize_any` down to every scalar): every string is checked (escapes, UTF-8), every
//! number parsed (one out of range is an error, `float_roundtrip` applies), nesting counts
//! against the same limit of 128, and characters after the value are refused. So a payload that
//! is not JSON fails here with the same error, line and column as
//! `serde_json::from_slice::<Value>`. serde's `IgnoredAny` is not used for the skipped parts:
//! serde_json skips those with a scanner that checks less (no UTF-8, no number range, no depth).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::demand::{Demand, Node, Parts};

/// `payload` parsed as JSON, with only what `demand` reads built (see [`Demand`] for what the
/// result holds).
pub(crate) fn project(payload: &[u8], demand: &Demand) -> Result<Value, serde_json::Error> {
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
mod tests {
    use serde_json::json;

    use super::*;

    fn path(names: &[&str]) -> Demand {
        names
            .iter()
            .rev()
            .fold(Demand::whole(), |below, name| Demand::field(name, below))
    }

    #[test]
    fn only_the_demanded_parts_are_built() {
        let payload = br#"{"a": {"b": [1, {"c": 2}], "x": "skipped"}, "d": 3, "e": {"f": 4}}"#;
        let demand = path(&["a", "b"]).union(&Demand::field("e", Demand::nothing()));
        let value = project(payload, &demand).unwrap();
        assert_eq!(value, json!({"a": {"b": [1, {"c": 2}]}, "e": {}}));
    }

    #[test]
    fn items_keep_their_place_and_scalars_on_the_way_read_as_null() {
        let payload = br#"{"a": [10, 11, 12, 13], "b": "text", "c": [1]}"#;
        let demand = Demand::field("a", Demand::item(2, Demand::whole()))
            .union(&path(&["b", "x"]))
            .union(&path(&["c", "x"]));
        let value = project(payload, &demand).unwrap();
        assert_eq!(value, json!({"a": [null, null, 12], "b": null, "c": []}));
        let each = Demand::field("a", Demand::each(Demand::whole()));
        assert_eq!(
            project(payload, &each).unwrap(),
            json!({"a": [10, 11, 12, 13]})
        );
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value() {
        let payload = br#"{"a": {"b": 1}, "z": 0, "a": {"b": 2, "c": 3}}"#;
        let value = project(payload, &path(&["a", "b"])).unwrap();
        assert_eq!(value, json!({"a": {"b": 2}}));
        let full: Value = serde_json::from_slice(payload).unwrap();
        assert_eq!(full["a"]["b"], value["a"]["b"]);
    }

    /// Each payload is refused by a full parse; the projection refuses it with the same error
    /// even when the bad part is one it skips.
    #[test]
    fn what_a_full_parse_refuses_the_projection_refuses_alike() {
        let deep = |n: usize| format!(r#"{{"a": 1, "z": {}{}}}"#, "[".repeat(n), "]".repeat(n));
        let bad = [
            r#"{"a": 1, "z": 2} x"#.to_owned(),
            r#"{"a": 1, "z": "\q"}"#.to_owned(),
            r#"{"a": 1, "z": "\ud800"}"#.to_owned(),
            r#"{"a": 1, "z": 1e400}"#.to_owned(),
            r#"{"a": 1, "z": 01}"#.to_owned(),
            r#"{"a": 1, "z": [1,]}"#.to_owned(),
            r#"{"a": 1, "z": {1: 2}}"#.to_owned(),
            r#"{"a": 1, "z": "#.to_owned(),
            "not json at all".to_owned(),
            String::new(),
        ];
        let demand = path(&["a"]);
        for payload in &bad {
            let full = serde_json::from_slice::<Value>(payload.as_bytes()).unwrap_err();
            let projected = project(payload.as_bytes(), &demand).unwrap_err();
            assert_eq!(full.to_string(), projected.to_string(), "{payload}");
        }
        let mut not_utf8 = br#"{"a": 1, "z": "xx"}"#.to_vec();
        not_utf8[15] = 0xff;
        assert_eq!(
            serde_json::from_slice::<Value>(&not_utf8)
                .unwrap_err()
                .to_string(),
            project(&not_utf8, &demand).unwrap_err().to_string()
        );
        // Nesting: the same limit for both, also in a part that is skipped.
        let mut refused = 0;
        for n in 120..=130 {
            let payload = deep(n);
            match (
                serde_json::from_slice::<Value>(payload.as_bytes()),
                project(payload.as_bytes(), &demand),
            ) {
                (Ok(_), Ok(value)) => assert_eq!(value, json!({"a": 1})),
                (Err(full), Err(projected)) => {
                    assert_eq!(full.to_string(), projected.to_string());
                    refused += 1;
                }
                (full, projected) => panic!("depth {n}: {full:?} against {projected:?}"),
            }
        }
        assert!((1..11).contains(&refused), "the limit lies in 120..=130");
    }

    #[test]
    fn numbers_read_as_a_full_parse_reads_them() {
        let payload = br#"{"a": [0.1, 1e-7, 18446744073709551615, -9223372036854775808, 2.5e300]}"#;
        let full: Value = serde_json::from_slice(payload).unwrap();
        let value = project(payload, &path(&["a"])).unwrap();
        assert_eq!(value, full);
    }
}
