//! Which stream the outbound bridge appends to: a fixed key, or a key made from the message's
//! own `subject` header (`orders:{subject}`), so eip routing keys choose streams.

use std::fmt;

use eip_core::Message;

/// The placeholder replaced by the message's `subject` header.
const PLACEHOLDER: &str = "{subject}";

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

/// A stream key: fixed text, or text with one `{subject}` taking the message's `subject`
/// header. Parsed once; rendering never re-parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamKey {
    template: String,
    /// The text before and after the placeholder, when there is one.
    parts: Option<(String, String)>,
}

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
        let parts = match template.find(PLACEHOLDER) {
            Some(at) => {
                let (before, after) = (&template[..at], &template[at + PLACEHOLDER.len()..]);
                if after.contains(PLACEHOLDER) {
                    return Err(wrong("`{subject}` may appear only once"));
                }
                Some((before.to_owned(), after.to_owned()))
            }
            None => None,
        };
        let literal = match &parts {
            Some((before, after)) => format!("{before}{after}"),
            None => template.to_owned(),
        };
        if literal.contains(['{', '}']) {
            return Err(wrong("the only placeholder is `{subject}`"));
        }
        Ok(StreamKey {
            template: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.template
    }

    /// The key `msg` is appended to.
    pub fn render(&self, msg: &Message) -> Result<String, StreamKeyError> {
        let Some((before, after)) = &self.parts else {
            return Ok(self.template.clone());
        };
        match msg.subject() {
            Ok(Some(subject)) if !subject.is_empty() => Ok(format!("{before}{subject}{after}")),
            _ => Err(StreamKeyError::MissingSubject {
                template: self.template.clone(),
            }),
        }
    }
}

impl fmt::Display for StreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.template)
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
