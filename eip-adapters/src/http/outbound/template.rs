//! URL templates: `http://host/orders/{id}?customer={header.customer}`, parsed once.

use std::fmt;

use eip_core::Message;
use eip_core::message::HeaderValue;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters is encoded, so a value can never add a path
/// segment, a query parameter or a fragment.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A URL with placeholders filled from each message: `{id}` (the message id) and
/// `{header.NAME}` (a header's value), both percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Id,
    Header(String),
}

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
    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Parses a template; the URL it makes must be `http` or `https` with a host.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let error = |reason: String| TemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let unclosed = || {
                error(format!(
                    "`{{` at {} is not closed",
                    template.len() - rest.len() + open
                ))
            };
            let close = rest[open..].find('}').ok_or_else(unclosed)?;
            let name = &rest[open + 1..open + close];
            // `{header.x/{id}`: the first brace was left open, the `}` closes the second.
            if name.contains('{') {
                return Err(unclosed());
            }
            parts.push(match name {
                "id" => Part::Id,
                _ => match name.strip_prefix("header.") {
                    Some(header) if !header.is_empty() => Part::Header(header.to_owned()),
                    _ => {
                        return Err(error(format!(
                            "unknown placeholder `{{{name}}}` (`{{id}}` or `{{header.NAME}}`)"
                        )));
                    }
                },
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        let parsed = UrlTemplate {
            source: template.to_owned(),
            parts,
        };
        // The literal parts must make a URL whatever the values are.
        let sample = parsed.fill(|_| Some("x".into()));
        match reqwest::Url::parse(&sample) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(parsed),
            Ok(url) => Err(error(format!(
                "scheme `{}` is not http or https, or there is no host",
                url.scheme()
            ))),
            Err(e) => Err(error(e.to_string())),
        }
    }

    /// The URL for `message`; a missing header (or one of raw bytes) is named in the error.
    pub fn render(&self, message: &Message) -> Result<String, String> {
        let mut missing = None;
        let url = self.fill(|part| match part {
            Part::Id => Some(message.id().to_string()),
            Part::Header(name) => match message.headers().get(name) {
                None | Some(HeaderValue::Bytes(_)) => {
                    missing.get_or_insert_with(|| name.clone());
                    None
                }
                Some(value) => Some(value.to_string()),
            },
            Part::Literal(_) => None,
        });
        match missing {
            Some(name) => Err(format!(
                "no text header `{name}` for the URL `{}`",
                self.source
            )),
            None => Ok(url),
        }
    }

    fn fill(&self, mut value: impl FnMut(&Part) -> Option<String>) -> String {
        let mut url = String::with_capacity(self.source.len() + 32);
        for part in &self.parts {
            match part {
                Part::Literal(text) => url.push_str(text),
                _ => {
                    if let Some(v) = value(part) {
                        url.extend(utf8_percent_encode(&v, COMPONENT));
                    }
                }
            }
        }
        url
    }
}

impl fmt::Display for UrlTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
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
    fn a_missing_header_is_named() {
        let t = UrlTemplate::parse("http://h/{header.customer}").unwrap();
        let err = t.render(&Message::new("x")).unwrap_err();
        assert!(err.contains("`customer`"), "{err}");
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        for (bad, why) in [
            ("http://h/{nope}", "unknown placeholder"),
            ("http://h/{id", "not closed"),
            ("http://h/{header.x", "`{` at 9 is not closed"),
            ("http://h/{header.x/{id}", "`{` at 9 is not closed"),
            ("ftp://h/{id}", "scheme"),
            ("not a url", "relative URL"),
        ] {
            let err = UrlTemplate::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
