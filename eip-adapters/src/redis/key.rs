//! Which stream the outbound bridge appends to: a fixed key, or a key made from the message's
//! own `subject` header (`orders:{subject}`), so eip routing keys choose streams.

use std::fmt;

use eip_core::Message;

use crate::bridge::DestinationTemplate;

/// Why a stream key template, or the key it made for a message, can not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamKeyError {
    /// The template has a placeholder other than `{subject}`, a second one, or is empty.
    #[error("stream key template `{template}`: {reason}")]
    Template {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The template needs the message's `subject` header and the message has none (or not a
    /// string).
    #[error("stream key template `{template}` needs the message's `subject` header, it has none")]
    MissingSubject {
        /// The template as written.
        template: String,
    },
}

/// A stream key: a [`DestinationTemplate`], fixed text or text with one `{subject}` taking
/// the message's `subject` header. Parsed once; rendering never re-parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamKey(DestinationTemplate);

impl StreamKey {
    /// A fixed key, or a template with one `{subject}` placeholder.
    pub fn parse(template: &str) -> Result<Self, StreamKeyError> {
        let wrong = |reason| StreamKeyError::Template {
            template: template.to_owned(),
            reason,
        };
        if template.is_empty() {
            return Err(wrong("it is empty"));
        }
        DestinationTemplate::parse(template)
            .map(StreamKey)
            .map_err(|e| wrong(e.reason()))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The key `msg` is appended to.
    pub fn render(&self, msg: &Message) -> Result<String, StreamKeyError> {
        if !self.0.uses_subject() {
            return Ok(self.0.fill(""));
        }
        match msg.subject() {
            Ok(Some(subject)) if !subject.is_empty() => Ok(self.0.fill(subject)),
            _ => Err(StreamKeyError::MissingSubject {
                template: self.as_str().to_owned(),
            }),
        }
    }
}

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
    fn unknown_or_repeated_placeholders_and_empty_keys_fail_at_parse() {
        for bad in ["", "{id}", "{subject}{subject}", "a{subject"] {
            assert!(StreamKey::parse(bad).is_err(), "{bad}");
        }
    }
}
