//! AMQP field values (the entries of a headers table) as eip header values, and back.
//!
//! Out, each eip header value has its AMQP type: a string is a long string, an integer a
//! 64-bit integer, a float a double, a boolean a boolean, bytes a byte array.
//!
//! In, from any producer: booleans, integers of every width, floats, strings and byte arrays
//! are the eip values of the same kind; a **decimal** is a float (`12345` at scale 2 is
//! `123.45`); a **timestamp** is an integer (AMQP's seconds since the Unix epoch); an
//! **array** or a **table** is a string holding its JSON text (`[1,"two",[3]]`,
//! `{"a":true,"b":"x"}`, a table's keys in byte order), in which decimals are numbers,
//! timestamps integers, byte arrays hexadecimal strings and void `null`; a **void** header is
//! the empty string. A float that JSON can not write (NaN, infinity) is `null` in that text.

use eip_core::message::HeaderValue;
use lapin::types::{AMQPValue, DecimalValue, FieldTable, LongString};
use serde_json::Value;

use crate::hex::hex;

/// The AMQP value carrying `value`.
pub(super) fn amqp_value(value: &HeaderValue) -> AMQPValue {
    match value {
        HeaderValue::Str(s) => AMQPValue::LongString(s.as_str().into()),
        HeaderValue::Int(i) => AMQPValue::LongLongInt(*i),
        HeaderValue::Float(f) => AMQPValue::Double(*f),
        HeaderValue::Bool(b) => AMQPValue::Boolean(*b),
        HeaderValue::Bytes(b) => AMQPValue::ByteArray(b.to_vec().into()),
    }
}

/// The eip header value for `value`; see the [module](self).
pub(super) fn header_value(value: &AMQPValue) -> HeaderValue {
    match value {
        AMQPValue::Boolean(b) => HeaderValue::Bool(*b),
        AMQPValue::ShortShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongLongInt(i) => HeaderValue::Int(*i),
        AMQPValue::Float(f) => HeaderValue::Float(f64::from(*f)),
        AMQPValue::Double(f) => HeaderValue::Float(*f),
        AMQPValue::DecimalValue(d) => HeaderValue::Float(decimal(d)),
        AMQPValue::Timestamp(t) => HeaderValue::Int(i64::try_from(*t).unwrap_or(i64::MAX)),
        AMQPValue::ShortString(s) => HeaderValue::Str(s.as_str().to_owned()),
        AMQPValue::LongString(s) => HeaderValue::Str(long_string(s)),
        AMQPValue::ByteArray(b) => HeaderValue::Bytes(bytes::Bytes::copy_from_slice(b.as_slice())),
        AMQPValue::Void => HeaderValue::Str(String::new()),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) => {
            HeaderValue::Str(json(value).to_string())
        }
    }
}

/// `value` as JSON.
fn json(value: &AMQPValue) -> Value {
    match value {
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::ShortShortInt(i) => Value::from(*i),
        AMQPValue::ShortShortUInt(i) => Value::from(*i),
        AMQPValue::ShortInt(i) => Value::from(*i),
        AMQPValue::ShortUInt(i) => Value::from(*i),
        AMQPValue::LongInt(i) => Value::from(*i),
        AMQPValue::LongUInt(i) => Value::from(*i),
        AMQPValue::LongLongInt(i) => Value::from(*i),
        AMQPValue::Timestamp(t) => Value::from(*t),
        // `Value::from` of a NaN or an infinity is `null`.
        AMQPValue::Float(f) => Value::from(f64::from(*f)),
        AMQPValue::Double(f) => Value::from(*f),
        AMQPValue::DecimalValue(d) => Value::from(decimal(d)),
        AMQPValue::ShortString(s) => Value::from(s.as_str()),
        AMQPValue::LongString(s) => Value::from(long_string(s)),
        AMQPValue::ByteArray(b) => Value::from(hex(b.as_slice())),
        AMQPValue::Void => Value::Null,
        AMQPValue::FieldArray(items) => Value::Array(items.as_slice().iter().map(json).collect()),
        AMQPValue::FieldTable(table) => table_json(table),
    }
}

fn table_json(table: &FieldTable) -> Value {
    Value::Object(
        table
            .inner()
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), json(value)))
            .collect(),
    )
}

/// A decimal's value: `value` × 10^-`scale`.
fn decimal(d: &DecimalValue) -> f64 {
    f64::from(d.value) / 10f64.powi(i32::from(d.scale))
}

pub(super) fn long_string(s: &LongString) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_and_tables_are_json_text_with_their_own_kinds_inside() {
        let mut table = FieldTable::default();
        table.insert("bytes".into(), AMQPValue::ByteArray(vec![0, 255].into()));
        table.insert("nan".into(), AMQPValue::Double(f64::NAN));
        table.insert("short".into(), AMQPValue::ShortString("s".into()));
        table.insert(
            "bad-utf8".into(),
            AMQPValue::LongString(vec![0xff, b'a'].into()),
        );
        let value =
            AMQPValue::FieldArray(vec![AMQPValue::FieldTable(table), AMQPValue::Void].into());
        assert_eq!(
            header_value(&value),
            HeaderValue::Str(
                "[{\"bad-utf8\":\"\u{fffd}a\",\"bytes\":\"00ff\",\"nan\":null,\"short\":\"s\"},null]".into()
            )
        );
    }

    #[test]
    fn decimals_are_floats_timestamps_integers_and_void_the_empty_string() {
        let d = AMQPValue::DecimalValue(DecimalValue {
            scale: 2,
            value: 12_345,
        });
        assert_eq!(header_value(&d), HeaderValue::Float(123.45));
        let huge = AMQPValue::DecimalValue(DecimalValue {
            scale: 255,
            value: u32::MAX,
        });
        assert!(matches!(header_value(&huge), HeaderValue::Float(f) if f >= 0.0));
        assert_eq!(header_value(&AMQPValue::Timestamp(7)), HeaderValue::Int(7));
        assert_eq!(
            header_value(&AMQPValue::Timestamp(u64::MAX)),
            HeaderValue::Int(i64::MAX)
        );
        assert_eq!(
            header_value(&AMQPValue::Void),
            HeaderValue::Str(String::new())
        );
    }

    #[test]
    fn every_eip_value_comes_back_as_it_went() {
        for value in [
            HeaderValue::Str("x".into()),
            HeaderValue::Int(-3),
            HeaderValue::Float(0.5),
            HeaderValue::Bool(true),
            HeaderValue::Bytes(bytes::Bytes::from_static(&[1, 2])),
        ] {
            assert_eq!(header_value(&amqp_value(&value)), value);
        }
    }
}
