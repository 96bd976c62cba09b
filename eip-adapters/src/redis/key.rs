//! Which stream the outbound bridge appends to: a fixed key, or a key made from each message
//! (an eip template: `orders:{subject}` lets eip routing keys choose streams).

use std::borrow::Cow;
use std::fmt;

use eip_core::Message;
use eip_core::template::{Placeholder, Syntax, Template};

use crate::bridge::{DestinationError, DestinationTemplate, destination_error};

/// Why a stream key template, or the key it made for a message, can not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamKeyError {
    /// The template does not parse, or is empty.
    #[error("stream key template `{template}`: {reason}")]
    Template {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The template needs the message's `subject` header and the message has none (or not a
    /// string, or an empty one).
    #[error("stream key template `{template}` needs the message's `subject` header, it has none")]
    MissingSubject {
        /// The template as written.
        template: String,
    },
    /// Another placeholder the message could not fill, or filled with nothing.
    #[error("stream key template `{template}`: {reason}")]
    Render {
        /// The template as written.
        template: String,
        /// Why.
        reason: String,
    },
}

/// A stream key: a [`DestinationTemplate`], fixed text or text with eip placeholders. A key
/// is any bytes, so a value may hold anything but nothing: an empty value would name a
/// stream no one meant. Parsed once; rendering never re-parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamKey(DestinationTemplate);

impl StreamKey {
    /// The placeholders a stream key takes: those of every destination.
    pub const SYNTAX: Syntax<'static> = DestinationTemplate::SYNTAX;

    /// A fixed key, or a template.
    pub fn parse(template: &str) -> Result<Self, StreamKeyError> {
        DestinationTemplate::parse_into(template, Self::new)
    }

    /// The key of a parsed template (one parsed with more kinds, such as jq): not empty.
    pub fn new(template: Template) -> Result<Self, StreamKeyError> {
        if template.as_str().is_empty() {
            return Err(StreamKeyError::template("", "it is empty".to_owned()));
        }
        Ok(StreamKey(template.into()))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The key `msg` is appended to.
    pub fn render(&self, msg: &Message) -> Result<String, StreamKeyError> {
        let template = self.as_str();
        self.0
            .render(msg, |placeholder, value| match value.is_empty() {
                false => Ok(Cow::Borrowed(value)),
                true if placeholder == Placeholder::Subject => {
                    Err(StreamKeyError::missing_subject(template))
                }
                true => Err(StreamKeyError::unfilled(
                    template,
                    format!("`{placeholder}` is empty"),
                )),
            })
    }
}

destination_error!(StreamKeyError, MissingSubject);

impl fmt::Display for StreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_key_ignores_the_message_and_a_template_takes_its_subject() {
        let msg = Message::builder(&b""[..]).subject("eu").build();
        assert_eq!(
            StreamKey::parse("orders").unwrap().render(&msg).unwrap(),
            "orders"
        );
        let t = StreamKey::parse("orders:{subject}").unwrap();
        assert_eq!(t.render(&msg).unwrap(), "orders:eu");
        let e = t.render(&Message::new(&b""[..])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "stream key template `orders:{subject}` needs the message's `subject` header, it has none"
        );
    }

    #[test]
    fn any_eip_placeholder_makes_a_key_but_not_an_empty_value() {
        let t = StreamKey::parse("orders:{header.tenant}:{$.kind}").unwrap();
        let msg = Message::builder(r#"{"kind": "paid"}"#)
            .header("tenant", "acme")
            .build();
        assert_eq!(t.render(&msg).unwrap(), "orders:acme:paid");
        let empty = Message::builder(r#"{"kind": ""}"#)
            .header("tenant", "acme")
            .build();
        let e = t.render(&empty).unwrap_err();
        assert_eq!(
            e.to_string(),
            "stream key template `orders:{header.tenant}:{$.kind}`: `{$.kind}` is empty"
        );
        let blank = Message::builder(&b""[..]).subject("").build();
        assert!(matches!(
            StreamKey::parse("s:{subject}").unwrap().render(&blank),
            Err(StreamKeyError::MissingSubject { .. })
        ));
    }

    #[test]
    fn unknown_placeholders_unclosed_braces_and_empty_keys_fail_at_parse() {
        for bad in ["", "{nope}", "a{subject", "a}"] {
            assert!(StreamKey::parse(bad).is_err(), "{bad}");
        }
    }
}
