//! One input message as `eip route` and `eip run` read it: a line of JSON.
//!
//! ```json
//! {"to": "trades.requests", "subject": "stock.ibm.nyse", "headers": {"priority": 5}, "payload": {"side": "buy"}}
//! ```
//!
//! `to` (a channel or exchange of the flow) is required; `subject`, `headers` and `payload`
//! are optional, and any other key is an error. Header values are strings, whole numbers,
//! numbers or booleans. A `payload` that is a JSON string becomes that text as it is (so plain
//! text and CSV can be sent); any other JSON value becomes its JSON text. No payload is an
//! empty one.

use eip_core::message::{HeaderValue, Message};
use serde::Serialize;
use serde_json::Value;

/// A parsed input line: where to send, and the message.
#[derive(Debug, Clone)]
pub struct InputMessage {
    /// The channel or exchange it is sent to.
    pub to: String,
    /// The message.
    pub message: Message,
}

/// Why an input line is not a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The line is not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// The line is JSON but not an object.
    #[error("expected a JSON object with at least `to`, found {0}")]
    NotAnObject(&'static str),
    /// A key the format does not have.
    #[error("unknown key `{0}`; the keys are `to`, `subject`, `headers` and `payload`")]
    UnknownKey(String),
    /// `to` is missing.
    #[error("`to` is missing: name the channel or exchange the message is sent to")]
    MissingTo,
    /// A field has the wrong type.
    #[error("`{field}` must be {expected}, found {found}")]
    WrongType {
        /// The field (`headers.NAME` for a header).
        field: String,
        /// What it must be.
        expected: &'static str,
        /// What it is.
        found: &'static str,
    },
}

impl InputMessage {
    /// Parses one line.
    pub fn parse(line: &str) -> Result<InputMessage, InputError> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| InputError::Json(e.to_string()))?;
        let Value::Object(fields) = value else {
            return Err(InputError::NotAnObject(kind(&value)));
        };
        if let Some(key) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "to" | "subject" | "headers" | "payload"))
        {
            return Err(InputError::UnknownKey(key.clone()));
        }
        let to = match fields.get("to") {
            None => return Err(InputError::MissingTo),
            Some(Value::String(to)) => to.clone(),
            Some(other) => return Err(wrong("to", "a string", other)),
        };
        let payload = match fields.get("payload") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(text)) => text.clone().into_bytes(),
            Some(other) => other.to_string().into_bytes(),
        };
        let mut builder = Message::builder(payload);
        match fields.get("subject") {
            None | Some(Value::Null) => {}
            Some(Value::String(subject)) => builder = builder.subject(subject.as_str()),
            Some(other) => return Err(wrong("subject", "a string", other)),
        }
        match fields.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(headers)) => {
                for (name, value) in headers {
                    builder = builder.header(name.clone(), header_value(name, value)?);
                }
            }
            Some(other) => return Err(wrong("headers", "an object", other)),
        }
        Ok(InputMessage {
            to,
            message: builder.build(),
        })
    }
}

fn header_value(name: &str, value: &Value) -> Result<HeaderValue, InputError> {
    let expected = "a string, a number or a boolean";
    match value {
        Value::String(s) => Ok(HeaderValue::from(s.as_str())),
        Value::Bool(b) => Ok(HeaderValue::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(HeaderValue::from(i)),
            (None, Some(f)) => Ok(HeaderValue::from(f)),
            (None, None) => Err(wrong(&format!("headers.{name}"), expected, value)),
        },
        other => Err(wrong(&format!("headers.{name}"), expected, other)),
    }
}

fn wrong(field: &str, expected: &'static str, found: &Value) -> InputError {
    InputError::WrongType {
        field: field.to_owned(),
        expected,
        found: kind(found),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_line_becomes_a_message() {
        let line = r#"{"to": "t", "subject": "a.b", "headers": {"n": 5, "f": 1.5, "b": true, "s": "x"}, "payload": {"side": "buy"}}"#;
        let input = InputMessage::parse(line).unwrap();
        assert_eq!(input.to, "t");
        let msg = input.message;
        assert_eq!(msg.subject().unwrap(), Some("a.b"));
        assert_eq!(msg.payload_str(), Some(r#"{"side":"buy"}"#));
        assert_eq!(msg.headers().get("n"), Some(&HeaderValue::from(5i64)));
        assert_eq!(msg.headers().get("f"), Some(&HeaderValue::from(1.5)));
        assert_eq!(msg.headers().get("b"), Some(&HeaderValue::from(true)));
        assert_eq!(msg.headers().get("s"), Some(&HeaderValue::from("x")));
    }

    #[test]
    fn a_string_payload_is_sent_as_its_text() {
        let msg = InputMessage::parse(r#"{"to": "t", "payload": "a,b,c"}"#)
            .unwrap()
            .message;
        assert_eq!(msg.payload_str(), Some("a,b,c"));
        let empty = InputMessage::parse(r#"{"to": "t"}"#).unwrap().message;
        assert!(empty.payload().is_empty());
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = |line: &str| InputMessage::parse(line).unwrap_err().to_string();
        assert!(err("nope").starts_with("not JSON"));
        assert_eq!(
            err("[1]"),
            "expected a JSON object with at least `to`, found an array"
        );
        assert_eq!(
            err(r#"{"payload": 1}"#),
            "`to` is missing: name the channel or exchange the message is sent to"
        );
        assert_eq!(
            err(r#"{"to": "t", "subjet": "x"}"#),
            "unknown key `subjet`; the keys are `to`, `subject`, `headers` and `payload`"
        );
        assert_eq!(err(r#"{"to": 3}"#), "`to` must be a string, found a number");
        assert_eq!(
            err(r#"{"to": "t", "headers": {"x": [1]}}"#),
            "`headers.x` must be a string, a number or a boolean, found an array"
        );
    }
}

/// A message as eip shows it in JSON (`eip run`'s output lines, `eip route --steps`): its
/// headers as a JSON object, and its payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageView {
    /// Its headers: strings, numbers and booleans as themselves, bytes as `<N bytes>`.
    pub headers: serde_json::Map<String, serde_json::Value>,
    /// Its payload: the JSON value, else the text (bytes that are not UTF-8 replaced).
    pub payload: serde_json::Value,
}

impl MessageView {
    /// How `msg` is shown.
    pub fn of(msg: &Message) -> Self {
        let headers = msg
            .headers()
            .iter()
            .map(|(name, value)| (name.to_owned(), header_json(value)))
            .collect();
        let payload = match serde_json::from_slice(msg.payload()) {
            Ok(json) => json,
            Err(_) => {
                serde_json::Value::String(String::from_utf8_lossy(msg.payload()).into_owned())
            }
        };
        MessageView { headers, payload }
    }
}

fn header_json(value: &HeaderValue) -> serde_json::Value {
    match value {
        HeaderValue::Str(s) => serde_json::Value::String(s.clone()),
        HeaderValue::Int(i) => serde_json::Value::from(*i),
        HeaderValue::Float(f) => serde_json::Value::from(*f),
        HeaderValue::Bool(b) => serde_json::Value::Bool(*b),
        HeaderValue::Bytes(b) => serde_json::Value::String(format!("<{} bytes>", b.len())),
    }
}
