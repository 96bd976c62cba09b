//! How an eip message travels through a broker that carries only text headers (NATS headers,
//! MQTT v5 user properties, Redis stream fields), and back.
//!
//! An eip message is its id, its typed headers and its payload. On a text-only broker:
//! - the id goes in the header [`ID`] (`eip-id`), so the message keeps its identity across the
//!   broker: loop detection and hop budgets of joins hold across processes, and a duplicate
//!   (a broker redelivery) is recognisable by id;
//! - every header goes under its own name as text (`subject`, `correlation-id`,
//!   `expires-at`, `hop-budget`, your own); integers, floats and booleans are written as their
//!   decimal or `true`/`false` text, bytes in hexadecimal;
//! - the header [`TYPES`] (`eip-types`) lists the headers that are not strings, with a letter
//!   for their type (`priority=i,hop-budget=i,urgent=b`), so they come back with their type.
//!   A producer that is not eip sends no `eip-types`: its headers all arrive as strings, except
//!   the well-known numeric ones eip reads by name (`expires-at`, `priority`, `hop-budget`,
//!   `redelivery-count`), which are taken as integers when their text is one.
//!
//! Brokers with typed properties (AMQP) map the same headers onto their own fields and tables;
//! see their modules.

use eip_core::message::{HeaderValue, Message, MessageId, names};

use crate::hex::hex;

/// The header holding the eip message id on a text-only broker.
pub const ID: &str = "eip-id";
/// The header listing the headers that are not strings, and their types.
pub const TYPES: &str = "eip-types";
/// The header holding the id a producer that is not eip gave its message (an AMQP
/// `message_id` that is not an eip id, a `Nats-Msg-Id`), so that a consumer can correlate:
/// the eip message has an id of its own.
pub const EXTERNAL_ID: &str = "external-id";

/// Why a broker message could not become an eip message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A header listed in `eip-types` does not parse as its type.
    #[error(
        "header `{name}` is listed as {kind} in `eip-types`, but its value `{value}` is not one"
    )]
    Type {
        /// The header.
        name: String,
        /// The type `eip-types` gives it.
        kind: &'static str,
        /// Its text.
        value: String,
    },
    /// `eip-types` names a type letter eip does not know.
    #[error("`eip-types` gives header `{name}` the unknown type `{letter}` (i, f, b, x or s)")]
    UnknownType {
        /// The header.
        name: String,
        /// The letter.
        letter: String,
    },
}

/// The text headers carrying `msg` (its id, every header, and `eip-types` when a header is
/// not a string), in a stable order: the id first, then the headers in the message's order.
pub fn to_text(msg: &Message) -> Vec<(String, String)> {
    let mut pairs = Vec::with_capacity(msg.headers().len() + 2);
    pairs.push((ID.to_owned(), msg.id().to_string()));
    let mut types = Vec::new();
    for (name, value) in msg.headers().iter() {
        let (letter, text) = match value {
            HeaderValue::Str(s) => (None, s.clone()),
            HeaderValue::Int(i) => (Some('i'), i.to_string()),
            HeaderValue::Float(f) => (Some('f'), f.to_string()),
            HeaderValue::Bool(b) => (Some('b'), b.to_string()),
            HeaderValue::Bytes(b) => (Some('x'), hex(b)),
        };
        if let Some(letter) = letter {
            types.push(format!("{name}={letter}"));
        }
        pairs.push((name.to_owned(), text));
    }
    if !types.is_empty() {
        pairs.push((TYPES.to_owned(), types.join(",")));
    }
    pairs
}

/// The message that `pairs` (text headers, as [`to_text`] writes them or as any producer
/// sends them) and `payload` carry. Without an `eip-id` (or with one that is not an id) the
/// message gets a new id. Headers named `eip-…` other than the two above are dropped.
pub fn from_text<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    payload: impl Into<bytes::Bytes>,
) -> Result<Message, EnvelopeError> {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    let mut typed: Vec<(&str, &str)> = Vec::new();
    if let Some((_, list)) = pairs.iter().rev().find(|(n, _)| *n == TYPES) {
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if let Some((name, letter)) = entry.split_once('=') {
                typed.push((name.trim(), letter.trim()));
            }
        }
    }
    let id = pairs
        .iter()
        .rev()
        .find(|(n, _)| *n == ID)
        .and_then(|(_, v)| v.parse::<MessageId>().ok())
        .unwrap_or_default();
    let mut msg = Message::builder(payload).id(id).build();
    for (name, text) in pairs {
        if name.starts_with("eip-") {
            continue;
        }
        let letter = typed
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| *l);
        let value = match letter {
            Some(letter) => typed_value(name, letter, text)?,
            None if WELL_KNOWN_INTEGERS.contains(&name) => text
                .parse::<i64>()
                .map_or_else(|_| HeaderValue::Str(text.to_owned()), HeaderValue::Int),
            None => HeaderValue::Str(text.to_owned()),
        };
        msg.headers_mut().insert(name.to_owned(), value);
    }
    Ok(msg)
}

/// The headers eip reads as integers by name, whoever sent them.
const WELL_KNOWN_INTEGERS: &[&str] = &[
    names::EXPIRES_AT,
    names::PRIORITY,
    names::HOP_BUDGET,
    names::REDELIVERY_COUNT,
];

fn typed_value(name: &str, letter: &str, text: &str) -> Result<HeaderValue, EnvelopeError> {
    let wrong = |kind: &'static str| EnvelopeError::Type {
        name: name.to_owned(),
        kind,
        value: text.to_owned(),
    };
    Ok(match letter {
        "s" => HeaderValue::Str(text.to_owned()),
        "i" => HeaderValue::Int(text.parse().map_err(|_| wrong("an integer"))?),
        "f" => HeaderValue::Float(text.parse().map_err(|_| wrong("a float"))?),
        "b" => HeaderValue::Bool(text.parse().map_err(|_| wrong("a boolean"))?),
        "x" => HeaderValue::Bytes(
            unhex(text)
                .ok_or_else(|| wrong("hexadecimal bytes"))?
                .into(),
        ),
        other => {
            return Err(EnvelopeError::UnknownType {
                name: name.to_owned(),
                letter: other.to_owned(),
            });
        }
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_header_comes_back_with_its_type_and_the_id_with_it() {
        let msg = Message::builder(&b"{\"a\":1}"[..])
            .subject("stock.ibm")
            .correlation_id("c-1")
            .return_address("replies")
            .content_type("application/json")
            .time_to_live(Duration::from_secs(60))
            .priority(7)
            .hop_budget(4)
            .header("urgent", true)
            .header("ratio", 0.25)
            .header("raw", bytes::Bytes::from_static(&[0, 1, 254, 255]))
            .header("plain", "text")
            .build();
        let pairs = to_text(&msg);
        assert_eq!(pairs[0], (ID.to_owned(), msg.id().to_string()));
        let back = from_text(
            pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            msg.payload().clone(),
        )
        .unwrap();
        assert_eq!(back.id(), msg.id());
        assert_eq!(back.payload(), msg.payload());
        let mut want: Vec<_> = msg.headers().iter().collect();
        let mut got: Vec<_> = back.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        got.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(got, want);
    }

    #[test]
    fn a_foreign_producer_s_headers_are_strings_except_the_well_known_integers() {
        let msg = from_text(
            [
                ("hop-budget", "3"),
                ("priority", "high"),
                ("amount", "12"),
                ("eip-other", "x"),
            ],
            &b"x"[..],
        )
        .unwrap();
        assert_eq!(msg.hop_budget().unwrap(), Some(3));
        assert_eq!(
            msg.headers().get("priority"),
            Some(&HeaderValue::Str("high".into()))
        );
        assert_eq!(
            msg.headers().get("amount"),
            Some(&HeaderValue::Str("12".into()))
        );
        assert!(msg.headers().get("eip-other").is_none());
    }

    #[test]
    fn a_missing_or_malformed_id_gives_a_new_one() {
        let a = from_text([(ID, "not-an-id")], &b""[..]).unwrap();
        let b = from_text([], &b""[..]).unwrap();
        assert_ne!(a.id(), b.id());
    }

    #[test]
    fn a_value_that_does_not_fit_its_listed_type_is_an_error_naming_it() {
        let e = from_text([("n", "x"), (TYPES, "n=i")], &b""[..]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "header `n` is listed as an integer in `eip-types`, but its value `x` is not one"
        );
        let e = from_text([("n", "1"), (TYPES, "n=q")], &b""[..]).unwrap_err();
        assert!(matches!(e, EnvelopeError::UnknownType { .. }));
        assert!(from_text([("n", "0g"), (TYPES, "n=x")], &b""[..]).is_err());
    }
}
