//! Topics from subjects and back: dots are slashes.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use eip_core::Message;
use eip_core::template::{Placeholder, Syntax, Template};

use super::error::TopicError;
use crate::bridge::{DestinationError, DestinationTemplate};

/// Where the outbound bridge publishes: a fixed topic, or one built from each message.
///
/// A template ([`DestinationTemplate`]) is a topic name with eip placeholders. `{subject}`
/// stands for the message's subject with its dots turned into slashes: with
/// `sensors/{subject}`, a message with subject `room1.temp` goes to `sensors/room1/temp`. Any
/// other value (`{header.NAME}`, `{$.path}`, `{jq: ...}`) is one topic level as it is: it may
/// not be empty nor hold `/`, `+`, `#` or NUL, so a message can not publish to a level, or a
/// wildcard, the template did not write. Parsed once, when the bridge is configured.
///
/// ```
/// use eip_adapters::mqtt::TopicTemplate;
/// use eip_adapters::core::Message;
///
/// let template: TopicTemplate = "sensors/{subject}".parse().unwrap();
/// let msg = Message::builder("21.5").subject("room1.temp").build();
/// assert_eq!(template.topic_for(&msg).unwrap(), "sensors/room1/temp");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTemplate(DestinationTemplate);

impl TopicTemplate {
    /// The placeholders a topic takes: those of every destination.
    pub const SYNTAX: Syntax<'static> = DestinationTemplate::SYNTAX;

    /// A template: text, with eip placeholders (`{subject}` where the message's subject goes).
    pub fn parse(template: &str) -> Result<Self, TopicError> {
        DestinationTemplate::parse_into(template, Self::new)
    }

    /// The topic of a parsed template (one parsed with more kinds, such as jq), checked: not
    /// empty, and no wildcard nor NUL in its own text.
    pub fn new(template: Template) -> Result<Self, TopicError> {
        let bad = |reason: &str| TopicError::Template {
            template: template.as_str().to_owned(),
            reason: reason.to_owned(),
        };
        if template.as_str().is_empty() {
            return Err(bad("a topic name can not be empty"));
        }
        for text in template.literal_text() {
            if text.contains(['+', '#']) {
                return Err(bad(
                    "`+` and `#` are wildcards, not allowed in a topic name",
                ));
            }
            if text.contains('\0') {
                return Err(bad("a topic name can not hold NUL"));
            }
        }
        Ok(TopicTemplate(template.into()))
    }

    /// A fixed topic, whatever the message.
    pub fn fixed(topic: &str) -> Result<Self, TopicError> {
        let template = Self::parse(topic)?;
        if !template.is_fixed() {
            return Err(TopicError::Template {
                template: topic.to_owned(),
                reason: "a fixed topic has no placeholder".to_owned(),
            });
        }
        Ok(template)
    }

    /// The topic the message's subject names: `{subject}`.
    pub fn from_subject() -> Self {
        TopicTemplate(DestinationTemplate::subject())
    }

    /// Whether every message goes to the same topic.
    pub fn is_fixed(&self) -> bool {
        !self.0.uses_message()
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The topic `msg` goes to.
    pub fn topic_for(&self, msg: &Message) -> Result<String, TopicError> {
        self.0.render(msg, |placeholder, value| match placeholder {
            Placeholder::Subject => subject_to_topic(value).map(Cow::Owned),
            _ => level(value).map(Cow::Borrowed).map_err(|reason| {
                let reason = format!("`{placeholder}` is `{value}`: {reason}");
                TopicError::unfilled(self.as_str(), reason)
            }),
        })
    }
}

/// A value that is one topic level, or why it is not.
fn level(value: &str) -> Result<&str, &'static str> {
    match value {
        "" => Err("a level can not be empty"),
        _ if value.contains('/') => Err("`/` would add a level"),
        _ if value.contains(['+', '#']) => Err("`+` and `#` are MQTT wildcards"),
        _ if value.contains('\0') => Err("it holds NUL"),
        _ => Ok(value),
    }
}

impl FromStr for TopicTemplate {
    type Err = TopicError;

    fn from_str(s: &str) -> Result<Self, TopicError> {
        TopicTemplate::parse(s)
    }
}

impl fmt::Display for TopicTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The topic for an eip subject: its dots become slashes (`a.b.c` → `a/b/c`). A subject with
/// `/` (it would not come back the same), `+`, `#` (wildcards) or NUL has none.
pub fn subject_to_topic(subject: &str) -> Result<String, TopicError> {
    let refuse = |reason| TopicError::Subject {
        subject: subject.to_owned(),
        reason,
    };
    if subject.is_empty() {
        return Err(refuse("it is empty"));
    }
    if subject.contains('/') {
        return Err(refuse("`/` would come back as `.`"));
    }
    if subject.contains(['+', '#']) {
        return Err(refuse("`+` and `#` are MQTT wildcards"));
    }
    if subject.contains('\0') {
        return Err(refuse("it holds NUL"));
    }
    Ok(subject.replace('.', "/"))
}

/// The eip subject for a topic: its slashes become dots (`a/b/c` → `a.b.c`).
pub fn topic_to_subject(topic: &str) -> String {
    topic.replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_s_dots_become_the_topic_s_slashes_and_back() {
        let template = TopicTemplate::parse("plant/{subject}/v1").unwrap();
        let msg = Message::builder("x").subject("line2.press.temp").build();
        let topic = template.topic_for(&msg).unwrap();
        assert_eq!(topic, "plant/line2/press/temp/v1");
        assert_eq!(topic_to_subject("line2/press/temp"), "line2.press.temp");
        assert!(!template.is_fixed());
        assert!(TopicTemplate::fixed("plant/all").unwrap().is_fixed());
    }

    #[test]
    fn a_subject_that_is_no_topic_and_a_missing_subject_are_refused() {
        let template = TopicTemplate::from_subject();
        let wild = Message::builder("x").subject("a.+.b").build();
        assert!(matches!(
            template.topic_for(&wild),
            Err(TopicError::Subject { .. })
        ));
        let slash = Message::builder("x").subject("a/b").build();
        assert!(template.topic_for(&slash).is_err());
        assert!(matches!(
            template.topic_for(&Message::new("x")),
            Err(TopicError::NoSubject { .. })
        ));
    }

    #[test]
    fn another_value_is_one_level_and_may_not_add_levels_or_wildcards() {
        let template = TopicTemplate::parse("plant/{header.line}/{$.sensor}").unwrap();
        let msg = |line: &str| {
            Message::builder(r#"{"sensor": "temp"}"#)
                .header("line", line)
                .build()
        };
        assert_eq!(template.topic_for(&msg("l2")).unwrap(), "plant/l2/temp");
        for bad in ["a/b", "+", "#", ""] {
            assert!(
                matches!(
                    template.topic_for(&msg(bad)),
                    Err(TopicError::Render { .. })
                ),
                "{bad:?}"
            );
        }
        let e = template.topic_for(&Message::new("{}")).unwrap_err();
        assert!(e.to_string().contains("no header `line`"), "{e}");
    }

    #[test]
    fn a_template_with_a_wildcard_or_an_unknown_placeholder_does_not_parse() {
        assert!(TopicTemplate::parse("a/#").is_err());
        assert!(TopicTemplate::parse("a/{nope}").is_err());
        assert!(TopicTemplate::parse("a/{subject").is_err());
        assert!(TopicTemplate::parse("").is_err());
        assert!(TopicTemplate::fixed("a/{subject}").is_err());
    }
}
