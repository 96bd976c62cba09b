//! Where the outbound bridge publishes: a NATS subject, fixed or made from each message (an eip
//! template: `{subject}` maps eip routing keys such as `orders.eu.created` onto NATS subjects,
//! `events.{$.type}` takes a part of the payload).

use std::fmt;

use eip_core::Message;
use eip_core::template::{Syntax, Template};

use crate::bridge::{DestinationTemplate, destination_error};

/// Why a subject template, or the subject it made for a message, is not a NATS subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubjectError {
    /// The template does not parse: an unknown placeholder, or an unclosed brace.
    #[error("subject template `{template}`: {reason}")]
    Template {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The template needs the message's `subject` header and the message has none (or not a
    /// string).
    #[error("subject template `{template}` needs the message's `subject` header, it has none")]
    MissingSubject {
        /// The template as written.
        template: String,
    },
    /// Another placeholder the message could not fill (no such header, a path that selects
    /// nothing, a jq error).
    #[error("subject template `{template}`: {reason}")]
    Render {
        /// The template as written.
        template: String,
        /// Why.
        reason: String,
    },
    /// The subject made is not one a message can be published to.
    #[error("`{subject}` is not a NATS subject to publish to: {reason}")]
    Invalid {
        /// The subject made.
        subject: String,
        /// Why not.
        reason: &'static str,
    },
}

/// A NATS subject to publish to: a [`DestinationTemplate`], fixed text or text with eip
/// placeholders (`{subject}` alone maps routing keys one to one; `eip.{subject}` puts them
/// under a prefix), whose result must be a subject one can publish to. Parsed once; rendering
/// never re-parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectTemplate(DestinationTemplate);

impl SubjectTemplate {
    /// The placeholders a subject takes: those of every destination.
    pub const SYNTAX: Syntax<'static> = DestinationTemplate::SYNTAX;

    /// A fixed subject, or a template.
    pub fn parse(template: &str) -> Result<Self, SubjectError> {
        DestinationTemplate::parse_into(template, Self::new)
    }

    /// A subject of a parsed template (one parsed with more kinds, such as jq), checked: its
    /// own text with any value in its placeholders must be a subject one can publish to.
    pub fn new(template: Template) -> Result<Self, SubjectError> {
        check_subject(&template.sample("x"))?;
        Ok(SubjectTemplate(template.into()))
    }

    /// A fixed subject.
    pub fn fixed(subject: &str) -> Result<Self, SubjectError> {
        let template = Self::parse(subject)?;
        match template.uses_message_subject() {
            false => Ok(template),
            true => Err(SubjectError::Template {
                template: subject.to_owned(),
                reason: "a fixed subject has no placeholder".to_owned(),
            }),
        }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether the subject depends on the message.
    pub fn uses_message_subject(&self) -> bool {
        self.0.uses_message()
    }

    /// The subject `msg` is published to.
    pub fn render(&self, msg: &Message) -> Result<String, SubjectError> {
        let made = self.0.render(msg, |_, value| Ok(value.into()))?;
        check_subject(&made)?;
        Ok(made)
    }
}

destination_error!(SubjectError, MissingSubject);

impl fmt::Display for SubjectTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A subject a message can be published to: dot-separated non-empty tokens, no whitespace
/// and no wildcard (`*`, `>`).
pub(crate) fn check_subject(subject: &str) -> Result<(), SubjectError> {
    let invalid = |reason| SubjectError::Invalid {
        subject: subject.to_owned(),
        reason,
    };
    if subject.is_empty() {
        return Err(invalid("it is empty"));
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("it contains whitespace"));
    }
    for token in subject.split('.') {
        match token {
            "" => return Err(invalid("it has an empty token")),
            "*" | ">" => return Err(invalid("wildcards are for subscribing, not publishing")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_subject(subject: &str) -> Message {
        Message::builder(&b""[..]).subject(subject).build()
    }

    #[test]
    fn a_fixed_subject_ignores_the_message() {
        let t = SubjectTemplate::parse("orders.created").unwrap();
        assert!(!t.uses_message_subject());
        assert_eq!(t.render(&Message::new(&b""[..])).unwrap(), "orders.created");
        assert_eq!(t.render(&with_subject("x.y")).unwrap(), "orders.created");
    }

    #[test]
    fn the_placeholder_takes_the_message_subject_as_routing_key() {
        let t = SubjectTemplate::parse("{subject}").unwrap();
        assert_eq!(
            t.render(&with_subject("orders.eu.1")).unwrap(),
            "orders.eu.1"
        );
        let t = SubjectTemplate::parse("eip.{subject}.v1").unwrap();
        assert_eq!(t.render(&with_subject("orders")).unwrap(), "eip.orders.v1");
    }

    #[test]
    fn a_message_without_subject_is_an_error_naming_the_template() {
        let t = SubjectTemplate::parse("eip.{subject}").unwrap();
        let e = t.render(&Message::new(&b""[..])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "subject template `eip.{subject}` needs the message's `subject` header, it has none"
        );
    }

    #[test]
    fn a_made_subject_that_is_not_publishable_is_refused() {
        let t = SubjectTemplate::parse("{subject}").unwrap();
        for bad in ["a..b", "a b", "orders.*", "orders.>", ".a", "a."] {
            assert!(
                matches!(
                    t.render(&with_subject(bad)),
                    Err(SubjectError::Invalid { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_eip_placeholder_makes_subjects_and_a_missing_value_names_the_template() {
        let t = SubjectTemplate::parse("events.{$.type}.{header.region}").unwrap();
        let msg = Message::builder(r#"{"type": "paid"}"#)
            .header("region", "eu")
            .build();
        assert_eq!(t.render(&msg).unwrap(), "events.paid.eu");
        let e = t.render(&Message::new("{}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "subject template `events.{$.type}.{header.region}`: `$.type` selects nothing in the payload"
        );
        // A value is checked as part of the subject it makes.
        let wild = Message::builder(r#"{"type": "*"}"#)
            .header("region", "eu")
            .build();
        assert!(matches!(t.render(&wild), Err(SubjectError::Invalid { .. })));
    }

    #[test]
    fn unknown_placeholders_and_bad_fixed_subjects_fail_at_parse() {
        assert!(matches!(
            SubjectTemplate::parse("{nope}"),
            Err(SubjectError::Template { .. })
        ));
        for unclosed in ["a.{subject", "a.{header.x", "a.{header.x.{subject}"] {
            assert!(
                matches!(
                    SubjectTemplate::parse(unclosed),
                    Err(SubjectError::Template { .. })
                ),
                "{unclosed}"
            );
        }
        assert!(matches!(
            SubjectTemplate::parse(""),
            Err(SubjectError::Invalid { .. })
        ));
        // The template's own text is checked when it is parsed.
        assert!(matches!(
            SubjectTemplate::parse("a..{subject}"),
            Err(SubjectError::Invalid { .. })
        ));
        assert!(SubjectTemplate::fixed("orders.>").is_err());
        assert!(SubjectTemplate::fixed("orders.{subject}").is_err());
    }
}
