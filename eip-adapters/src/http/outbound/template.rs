//! URL templates: `http://host/orders/{id}?customer={header.customer}`, parsed once.

use std::fmt;

use eip_core::Message;
use eip_core::template::{RenderError, Syntax, Template};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters is encoded, so a value can never add a path
/// segment, a query parameter or a fragment.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A URL with eip placeholders filled from each message (`{id}`, `{subject}`,
/// `{header.NAME}`, `{$.path}`, `{jq: EXPR}` where the flow was built with jq), every value
/// percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate(Template);

/// A URL template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("URL template `{template}`: {reason}")]
pub struct TemplateError {
    /// The template as written.
    pub template: String,
    /// What is wrong with it.
    pub reason: String,
}

impl UrlTemplate {
    /// The placeholders a URL takes: every eip placeholder.
    pub const SYNTAX: Syntax<'static> = Syntax::new();

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Parses a template; the URL it makes must be `http` or `https` with a host.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let parsed = Self::SYNTAX.parse(template).map_err(|e| TemplateError {
            template: template.to_owned(),
            reason: e.at_byte(),
        })?;
        Self::new(parsed)
    }

    /// The URL of a parsed template (one parsed with more kinds, such as jq): its own text
    /// must make an `http` or `https` URL with a host, whatever the values are.
    pub fn new(template: Template) -> Result<Self, TemplateError> {
        let error = |reason: String| TemplateError {
            template: template.as_str().to_owned(),
            reason,
        };
        match reqwest::Url::parse(&template.sample("x")) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
                Ok(UrlTemplate(template))
            }
            Ok(url) => Err(error(format!(
                "scheme `{}` is not http or https, or there is no host",
                url.scheme()
            ))),
            Err(e) => Err(error(e.to_string())),
        }
    }

    /// The URL for `message`; a missing header (or one of raw bytes) is named in the error.
    pub fn render(&self, message: &Message) -> Result<String, String> {
        let url = self.0.render_each(
            message,
            |_| None,
            |url, _, value| {
                url.extend(utf8_percent_encode(value, COMPONENT));
                Ok::<_, RenderError>(())
            },
        );
        url.map_err(|e| match e {
            RenderError::NoHeader(name) | RenderError::BytesHeader(name) => {
                format!("no text header `{name}` for the URL `{}`", self.as_str())
            }
            other => format!("the URL `{}`: {other}", self.as_str()),
        })
    }
}

impl fmt::Display for UrlTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for UrlTemplate {
    type Err = TemplateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UrlTemplate::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_percent_encoded() {
        let t = UrlTemplate::parse("http://h/orders/{header.customer}/{id}?x=1").unwrap();
        let msg = Message::builder("x")
            .header("customer", "a/b?c=d&e#f ..")
            .build();
        assert_eq!(
            t.render(&msg).unwrap(),
            format!(
                "http://h/orders/a%2Fb%3Fc%3Dd%26e%23f%20../{}?x=1",
                msg.id()
            )
        );
    }

    #[test]
    fn a_value_from_the_payload_is_encoded_like_any_other() {
        let t = UrlTemplate::parse("http://h/orders/{$.customer}?s={subject}").unwrap();
        let msg = Message::builder(r#"{"customer": "a b/c"}"#)
            .subject("x&y")
            .build();
        assert_eq!(t.render(&msg).unwrap(), "http://h/orders/a%20b%2Fc?s=x%26y");
        let err = t.render(&Message::new("{}")).unwrap_err();
        assert!(err.contains("`$.customer` selects nothing"), "{err}");
    }

    #[test]
    fn a_missing_header_is_named() {
        let t = UrlTemplate::parse("http://h/{header.customer}").unwrap();
        let err = t.render(&Message::new("x")).unwrap_err();
        assert!(err.contains("`customer`"), "{err}");
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        for (bad, why) in [
            ("http://h/{nope}", "unknown placeholder"),
            ("http://h/{id", "never closed"),
            (
                "http://h/{header.x",
                "at byte 9: a `{` that is never closed",
            ),
            (
                "http://h/{header.x/{id}",
                "at byte 9: a `{` that is never closed",
            ),
            ("ftp://h/{id}", "scheme"),
            ("not a url", "relative URL"),
        ] {
            let err = UrlTemplate::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
