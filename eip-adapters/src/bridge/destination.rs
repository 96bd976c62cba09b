//! Where an outbound bridge sends a message, made from the message: an eip
//! [`Template`](eip_core::template::Template).

use std::borrow::Cow;
use std::fmt;

use eip_core::Message;
use eip_core::template::{Placeholder, RenderError, Syntax, Template, TemplateError};

/// A destination made per message.
///
/// Every broker names its destinations its own way (a NATS subject, a Redis stream key, an
/// MQTT topic, an AMQP routing key), and every outbound bridge lets the message choose it the
/// same way: a template, with the placeholders every eip template takes (`{subject}`, `{id}`,
/// `{header.NAME}`, `{$.path}`, and `{jq: EXPR}` where the flow was built with jq), parsed once
/// when the bridge is configured. [`DestinationTemplate`] is that template; what a broker allows
/// in a name, and how it turns a value into its own kind of name (MQTT's dots become slashes),
/// stays in the broker's module, which wraps this one and checks each value through
/// [`DestinationTemplate::render`].
///
/// ```
/// use eip_adapters::bridge::DestinationTemplate;
/// use eip_adapters::core::Message;
///
/// let template = DestinationTemplate::parse("eip.{subject}.{header.v}").unwrap();
/// let msg = Message::builder("x").subject("orders.eu").header("v", 2).build();
/// let value = template.template().render(&msg).unwrap();
/// assert_eq!(value, "eip.orders.eu.2");
/// assert!(DestinationTemplate::parse("eip.{nope}").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationTemplate(Template);

impl DestinationTemplate {
    /// The syntax of a destination: every eip placeholder, no names of a broker's own.
    pub const SYNTAX: Syntax<'static> = Syntax::new();

    /// Parses `template` with [`SYNTAX`](Self::SYNTAX).
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        Self::SYNTAX.parse(template).map(DestinationTemplate)
    }

    /// `{subject}` alone: the message's subject is the destination.
    pub fn subject() -> Self {
        DestinationTemplate(Template::parse("{subject}").expect("`{subject}` is a template"))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The template.
    pub fn template(&self) -> &Template {
        &self.0
    }

    /// Whether the destination depends on the message (it has a placeholder).
    pub fn uses_message(&self) -> bool {
        !self.0.is_fixed()
    }

    /// The text between the placeholders (the whole template when it has none), for a broker
    /// to check what it allows in a name once, when it is configured.
    pub fn literal_text(&self) -> impl Iterator<Item = &str> {
        self.0.literal_text()
    }

    /// `text` parsed with [`SYNTAX`](Self::SYNTAX) and made into a broker's name by `new`
    /// (which checks what the broker refuses); an error in the template is the broker's
    /// error, naming it.
    pub fn parse_into<T, E: DestinationError>(
        text: &str,
        new: impl FnOnce(Template) -> Result<T, E>,
    ) -> Result<T, E> {
        let parsed = Self::SYNTAX
            .parse(text)
            .map_err(|e| E::template(text, e.at_byte()))?;
        new(parsed)
    }

    /// The destination `msg` makes, each value first passed through `value` (the broker's
    /// check: the value as it goes in, or why it can not); what the message could not fill in
    /// is the broker's error, naming the template.
    pub fn render<E: DestinationError>(
        &self,
        msg: &Message,
        value: impl for<'v> Fn(Placeholder<'_>, &'v str) -> Result<Cow<'v, str>, E>,
    ) -> Result<String, E> {
        let made = self.0.render_each(
            msg,
            |_| None,
            |out, placeholder, text| {
                let checked = value(placeholder, text).map_err(Failed::Value)?;
                out.push_str(&checked);
                Ok(())
            },
        );
        made.map_err(|e| match e {
            Failed::Render(RenderError::NoSubject) => E::missing_subject(self.as_str()),
            Failed::Render(other) => E::unfilled(self.as_str(), other.to_string()),
            Failed::Value(e) => e,
        })
    }
}

/// A broker's error about its destination template: how it says each thing that can go
/// wrong, for [`DestinationTemplate::parse_into`] and [`DestinationTemplate::render`].
pub trait DestinationError {
    /// `template` does not parse: `reason`.
    fn template(template: &str, reason: String) -> Self;
    /// `template` has `{subject}` and the message has no subject.
    fn missing_subject(template: &str) -> Self;
    /// The message could not fill in another placeholder of `template`: `reason`.
    fn unfilled(template: &str, reason: String) -> Self;
}

/// Implements [`DestinationError`] for a broker's error enum whose variants `Template` and
/// `Render` carry `template` and `reason`, and whose variant `$missing` carries `template`.
#[cfg(any(feature = "nats", feature = "mqtt", feature = "redis"))]
macro_rules! destination_error {
    ($error:ident, $missing:ident) => {
        impl $crate::bridge::DestinationError for $error {
            fn template(template: &str, reason: String) -> Self {
                let template = template.to_owned();
                $error::Template { template, reason }
            }

            fn missing_subject(template: &str) -> Self {
                let template = template.to_owned();
                $error::$missing { template }
            }

            fn unfilled(template: &str, reason: String) -> Self {
                let template = template.to_owned();
                $error::Render { template, reason }
            }
        }
    };
}

#[cfg(any(feature = "nats", feature = "mqtt", feature = "redis"))]
pub(crate) use destination_error;

/// What stopped a rendering: the message, or the broker's check of a value.
enum Failed<E> {
    Render(RenderError),
    Value(E),
}

impl<E> From<RenderError> for Failed<E> {
    fn from(e: RenderError) -> Self {
        Failed::Render(e)
    }
}

impl From<Template> for DestinationTemplate {
    fn from(template: Template) -> Self {
        DestinationTemplate(template)
    }
}

impl fmt::Display for DestinationTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What went wrong, in words.
    #[derive(Debug, PartialEq)]
    struct Said(String);

    impl DestinationError for Said {
        fn template(template: &str, reason: String) -> Self {
            Said(format!("{template}: {reason}"))
        }
        fn missing_subject(template: &str) -> Self {
            Said(format!("{template}: no subject"))
        }
        fn unfilled(_: &str, reason: String) -> Self {
            Said(reason)
        }
    }

    fn as_is<'v>(_: Placeholder<'_>, v: &'v str) -> Result<Cow<'v, str>, Said> {
        Ok(v.into())
    }

    fn render(t: &DestinationTemplate, msg: &Message) -> Result<String, Said> {
        t.render(msg, as_is)
    }

    #[test]
    fn a_template_is_fixed_text_or_text_with_any_eip_placeholder() {
        let fixed = DestinationTemplate::parse("orders.created").unwrap();
        assert!(!fixed.uses_message());
        let msg = Message::builder(r#"{"t": "paid"}"#)
            .subject("orders")
            .header("v", 1)
            .build();
        assert_eq!(render(&fixed, &msg).unwrap(), "orders.created");
        let t = DestinationTemplate::parse("eip.{subject}.{$.t}.v{header.v}").unwrap();
        assert!(t.uses_message());
        assert_eq!(render(&t, &msg).unwrap(), "eip.orders.paid.v1");
        assert_eq!(t.literal_text().collect::<Vec<_>>(), ["eip.", ".", ".v"]);
        assert_eq!(
            DestinationTemplate::subject(),
            DestinationTemplate::parse("{subject}").unwrap()
        );
    }

    #[test]
    fn unknown_placeholders_and_unclosed_braces_are_refused_and_unfilled_ones_say_why() {
        for bad in [
            "{nope}",
            "a.{subject",
            "a.{header.x",
            "a.{header.x.{subject}",
            "a}",
        ] {
            assert!(DestinationTemplate::parse(bad).is_err(), "{bad}");
        }
        let t = DestinationTemplate::parse("a.{subject}.{header.x}").unwrap();
        assert_eq!(
            render(&t, &Message::new("x")),
            Err(Said("a.{subject}.{header.x}: no subject".to_owned()))
        );
        let msg = Message::builder("x").subject("s").build();
        assert_eq!(
            render(&t, &msg),
            Err(Said("the message has no header `x`".to_owned()))
        );
        let refused = t.render(&msg, |_, _| Err(Said("no".to_owned())));
        assert_eq!(refused, Err(Said("no".to_owned())));
        assert_eq!(
            DestinationTemplate::parse_into("a.{nope}", Ok::<_, Said>),
            Err(Said(
                "a.{nope}: at byte 3: unknown placeholder `{nope}`: a template takes `{subject}`, \
                 `{id}`, `{header.NAME}` and `{$.json.path}`"
                    .to_owned()
            ))
        );
    }
}
