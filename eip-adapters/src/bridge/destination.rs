//! The `{subject}` template: where an outbound bridge sends a message, made from the message.
//!
//! Every broker names its destinations its own way (a NATS subject, a Redis stream key, an
//! MQTT topic, an AMQP routing key), and every outbound bridge lets the message choose it the
//! same way: fixed text, or text with one placeholder `{subject}` standing for the message's
//! `subject` header (`{subject}` alone maps eip routing keys one to one; `eip.{subject}` puts
//! them under a prefix). [`DestinationTemplate`] is that template, parsed once when the bridge
//! is configured; filling it never parses again. What a broker allows in the text, and how it
//! turns a subject into its own kind of name (MQTT's dots become slashes), stays in the broker's
//! module, which wraps this one.

use std::fmt;

/// The placeholder replaced by the message's `subject` header.
const SUBJECT: &str = "{subject}";

/// Why a text is not a `{subject}` template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{subject}` appears twice or more.
    #[error("`{{subject}}` may appear only once")]
    Repeated,
    /// A brace that is not part of `{subject}`: another placeholder, or one left unclosed.
    #[error("the only placeholder is `{{subject}}`")]
    UnknownPlaceholder,
}

impl TemplateError {
    /// The reason as fixed text, for the brokers' errors that carry one.
    pub fn reason(self) -> &'static str {
        match self {
            TemplateError::Repeated => "`{subject}` may appear only once",
            TemplateError::UnknownPlaceholder => "the only placeholder is `{subject}`",
        }
    }
}

/// Fixed text, or text around one `{subject}`; see the [module](self).
///
/// ```
/// use eip_adapters::bridge::DestinationTemplate;
/// use eip_adapters::core::Message;
///
/// let template = DestinationTemplate::parse("eip.{subject}.v1").unwrap();
/// let msg = Message::builder("x").subject("orders.eu").build();
/// let subject = msg.subject().ok().flatten().unwrap_or_default();
/// assert_eq!(template.fill(subject), "eip.orders.eu.v1");
/// assert!(DestinationTemplate::parse("eip.{id}").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationTemplate {
    template: String,
    /// The text before and after the placeholder, when there is one.
    parts: Option<(String, String)>,
}

impl DestinationTemplate {
    /// Fixed text, or text with one `{subject}`; any other brace is refused.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let parts = match template.split_once(SUBJECT) {
            Some((_, after)) if after.contains(SUBJECT) => {
                return Err(TemplateError::Repeated);
            }
            Some((before, after)) => Some((before.to_owned(), after.to_owned())),
            None => None,
        };
        let template = DestinationTemplate {
            template: template.to_owned(),
            parts,
        };
        if template
            .literal_text()
            .any(|text| text.contains(['{', '}']))
        {
            return Err(TemplateError::UnknownPlaceholder);
        }
        Ok(template)
    }

    /// `{subject}` alone: the message's subject is the destination.
    pub fn subject() -> Self {
        DestinationTemplate {
            template: SUBJECT.to_owned(),
            parts: Some((String::new(), String::new())),
        }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.template
    }

    /// Whether the destination depends on the message (it has a `{subject}`).
    pub fn uses_subject(&self) -> bool {
        self.parts.is_some()
    }

    /// The text around the placeholder (the whole template when it has none), for a broker to
    /// check what it allows in a name.
    pub fn literal_text(&self) -> impl Iterator<Item = &str> {
        let (first, second) = match &self.parts {
            Some((before, after)) => (before.as_str(), after.as_str()),
            None => (self.template.as_str(), ""),
        };
        [first, second].into_iter()
    }

    /// The destination with `subject` (as the broker names it) in place of the placeholder;
    /// a fixed template is itself.
    pub fn fill(&self, subject: &str) -> String {
        match &self.parts {
            Some((before, after)) => format!("{before}{subject}{after}"),
            None => self.template.clone(),
        }
    }
}

impl fmt::Display for DestinationTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_fixed_text_or_text_around_one_subject() {
        let fixed = DestinationTemplate::parse("orders.created").unwrap();
        assert!(!fixed.uses_subject());
        assert_eq!(fixed.fill("ignored"), "orders.created");
        let t = DestinationTemplate::parse("eip.{subject}.v1").unwrap();
        assert!(t.uses_subject());
        assert_eq!(t.fill("orders"), "eip.orders.v1");
        assert_eq!(t.literal_text().collect::<Vec<_>>(), ["eip.", ".v1"]);
        assert_eq!(
            DestinationTemplate::parse("{subject}").unwrap().fill("a.b"),
            "a.b"
        );
        assert_eq!(
            DestinationTemplate::subject(),
            DestinationTemplate::parse("{subject}").unwrap()
        );
    }

    #[test]
    fn other_placeholders_unclosed_braces_and_a_second_subject_are_refused() {
        assert_eq!(
            DestinationTemplate::parse("{subject}.{subject}"),
            Err(TemplateError::Repeated)
        );
        for bad in [
            "{id}",
            "a.{subject",
            "a.{header.x",
            "a.{header.x.{subject}",
            "a}",
        ] {
            assert_eq!(
                DestinationTemplate::parse(bad),
                Err(TemplateError::UnknownPlaceholder),
                "{bad}"
            );
        }
    }
}
