//! Templates: a name made from each message, for a destination computed per message (EIP's
//! Dynamic Router, Camel's `toD`).
//!
//! A template is text with placeholders in braces:
//!
//! | placeholder | is replaced by |
//! |---|---|
//! | `{subject}` | the message's subject (its routing key) |
//! | `{id}` | the message's id |
//! | `{header.NAME}` | the header `NAME`: a string, a number or a boolean |
//! | `{$.path}` | the value a JSONPath (RFC 9535) selects in the JSON payload: a string, a number or a boolean |
//!
//! `{{` and `}}` are a brace. A template is parsed once; a placeholder it does not know, or
//! one never closed, is an error with its byte offset. Rendering a message fails, with the
//! reason, when what a placeholder names is not there (no subject, no such header, a path that
//! selects nothing, a payload that is not JSON) or is not a scalar.
//!
//! ```
//! use eip_core::Message;
//! use eip_core::template::Template;
//!
//! let template = Template::parse("orders.{$.region}.{header.priority}").unwrap();
//! let msg = Message::builder(r#"{"region": "eu"}"#).header("priority", 3).build();
//! assert_eq!(template.render(&msg).unwrap(), "orders.eu.3");
//! let err = template.render(&Message::new("{}")).unwrap_err();
//! assert_eq!(err.to_string(), "`$.region` selects nothing in the payload");
//! ```

use std::fmt;

use serde_json::Value;

use crate::message::{HeaderValue, Message};
use crate::predicate::json_path::JsonPathQuery;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Subject,
    Id,
    Header(String),
    Path { path: String, query: JsonPathQuery },
}

/// A template that could not be parsed: what was wrong, at which byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct TemplateError {
    /// Where the problem is: a byte offset into the template.
    pub offset: usize,
    /// What it is.
    pub reason: String,
}

/// Why a message could not fill in a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// `{subject}` and the message has none.
    #[error("the message has no subject")]
    NoSubject,
    /// `{header.NAME}` and the message has no such header.
    #[error("the message has no header `{0}`")]
    NoHeader(String),
    /// `{header.NAME}` holds bytes.
    #[error("header `{0}` holds bytes, not text")]
    BytesHeader(String),
    /// `{$.path}` and the payload is not JSON.
    #[error("the payload is not JSON ({0}), so `{1}` selects nothing")]
    NotJson(String, String),
    /// `{$.path}` selects nothing.
    #[error("`{0}` selects nothing in the payload")]
    NothingSelected(String),
    /// `{$.path}` selects an object, an array or null.
    #[error("`{0}` selects {1}, not a string, a number or a boolean")]
    NotScalar(String, &'static str),
}

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        while let Some((at, c)) = rest.next() {
            match c {
                '{' if rest.peek().map(|&(_, c)| c) == Some('{') => {
                    rest.next();
                    literal.push('{');
                }
                '}' if rest.peek().map(|&(_, c)| c) == Some('}') => {
                    rest.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(TemplateError {
                        offset: at,
                        reason: "a `}` that closes nothing: write `}}` for a brace".to_owned(),
                    });
                }
                '{' => {
                    let end = closing(text, at)?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(placeholder(&text[at + 1..end], at + 1)?);
                    while rest.peek().is_some_and(|&(i, _)| i <= end) {
                        rest.next();
                    }
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has no placeholder: every message makes the same text.
    pub fn is_fixed(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The text `msg` makes of it.
    pub fn render(&self, msg: &Message) -> Result<String, RenderError> {
        let mut out = String::with_capacity(self.text.len() + 16);
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Subject => match msg.subject() {
                    Ok(Some(subject)) => out.push_str(subject),
                    _ => return Err(RenderError::NoSubject),
                },
                Part::Id => out.push_str(&msg.id().to_string()),
                Part::Header(name) => match msg.headers().get(name) {
                    None => return Err(RenderError::NoHeader(name.clone())),
                    Some(HeaderValue::Bytes(_)) => {
                        return Err(RenderError::BytesHeader(name.clone()));
                    }
                    Some(value) => out.push_str(&value.to_string()),
                },
                Part::Path { path, query } => {
                    let root = msg
                        .json_value()
                        .map_err(|e| RenderError::NotJson(e.to_string(), path.clone()))?;
                    match query.first(root) {
                        None => return Err(RenderError::NothingSelected(path.clone())),
                        Some(Value::String(s)) => out.push_str(s),
                        Some(Value::Number(n)) => out.push_str(&n.to_string()),
                        Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
                        Some(other) => {
                            return Err(RenderError::NotScalar(path.clone(), describe(other)));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `text` is a template with placeholders, not a plain name: it holds a brace.
pub fn has_placeholders(text: &str) -> bool {
    text.contains('{') || text.contains('}')
}

/// The byte of the `}` closing the placeholder opened at `open`: the first one outside quotes
/// and brackets (a JSONPath may hold `}` in a quoted name or a filter).
fn closing(text: &str, open: usize) -> Result<usize, TemplateError> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text[open + 1..].char_indices() {
        let at = open + 1 + i;
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            '}' if depth == 0 => return Ok(at),
            _ => {}
        }
    }
    Err(TemplateError {
        offset: open,
        reason: "a `{` that is never closed: write `{{` for a brace".to_owned(),
    })
}

/// The placeholder written `inner` (between the braces), which starts at byte `offset`.
fn placeholder(inner: &str, offset: usize) -> Result<Part, TemplateError> {
    let name = inner.trim();
    match name {
        "subject" => return Ok(Part::Subject),
        "id" => return Ok(Part::Id),
        _ => {}
    }
    if let Some(header) = name.strip_prefix("header.") {
        if header.is_empty() {
            return Err(TemplateError {
                offset,
                reason: "`{header.}` names no header: write `{header.NAME}`".to_owned(),
            });
        }
        return Ok(Part::Header(header.to_owned()));
    }
    if name.starts_with('$') {
        let lead = inner.len() - inner.trim_start().len();
        let query = JsonPathQuery::parse(name, offset + lead).map_err(|e| TemplateError {
            offset: e.offset,
            reason: e.kind.to_string(),
        })?;
        return Ok(Part::Path {
            path: name.to_owned(),
            query,
        });
    }
    Err(TemplateError {
        offset,
        reason: format!(
            "unknown placeholder `{{{inner}}}`: a template takes `{{subject}}`, `{{id}}`, \
             `{{header.NAME}}` and `{{$.json.path}}`"
        ),
    })
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(payload: &str) -> Message {
        Message::builder(payload.to_owned())
            .subject("stock.ibm")
            .header("region", "eu")
            .header("raw", bytes::Bytes::from_static(b"\x01"))
            .build()
    }

    #[test]
    fn every_placeholder_is_filled_in() {
        let m = msg(r#"{"a": {"b": "x"}, "n": 7, "ok": true}"#);
        let t = Template::parse("{subject}/{header.region}/{$.a.b}/{$.n}/{ $.ok }/{{x}}").unwrap();
        assert_eq!(t.render(&m).unwrap(), "stock.ibm/eu/x/7/true/{x}");
        let id = Template::parse("{id}").unwrap();
        assert_eq!(id.render(&m).unwrap(), m.id().to_string());
        assert!(Template::parse("plain.name").unwrap().is_fixed());
        assert!(!t.is_fixed());
    }

    #[test]
    fn a_bad_template_says_where() {
        let e = Template::parse("a.{nope}").unwrap_err();
        assert_eq!(e.offset, 3);
        assert!(e.reason.contains("unknown placeholder `{nope}`"), "{e}");
        assert_eq!(Template::parse("a.{subject").unwrap_err().offset, 2);
        assert_eq!(Template::parse("a}").unwrap_err().offset, 1);
        assert_eq!(Template::parse("x{header.}").unwrap_err().offset, 2);
        // An unclosed bracket keeps the placeholder open.
        assert_eq!(Template::parse("x.{$.a[}").unwrap_err().offset, 2);
        let e = Template::parse("x.{$.a..}").unwrap_err();
        assert!(e.offset >= 3 && e.reason.contains("JSONPath"), "{e:?}");
        // A `}` inside a quoted JSONPath name does not close the placeholder.
        let t = Template::parse("{$['a}b']}").unwrap();
        assert_eq!(t.render(&Message::new(r#"{"a}b": "y"}"#)).unwrap(), "y");
    }

    #[test]
    fn a_message_that_can_not_fill_it_in_says_why() {
        let render = |t: &str, m: &Message| Template::parse(t).unwrap().render(m).unwrap_err();
        let m = msg(r#"{"list": [1], "none": null}"#);
        assert_eq!(
            render("{header.gone}", &m),
            RenderError::NoHeader("gone".into())
        );
        assert_eq!(
            render("{header.raw}", &m),
            RenderError::BytesHeader("raw".into())
        );
        assert_eq!(
            render("{$.x}", &m),
            RenderError::NothingSelected("$.x".into())
        );
        assert_eq!(
            render("{$.list}", &m),
            RenderError::NotScalar("$.list".into(), "an array")
        );
        assert_eq!(
            render("{$.none}", &m),
            RenderError::NotScalar("$.none".into(), "null")
        );
        assert!(matches!(
            render("{$.x}", &Message::new("not json")),
            RenderError::NotJson(..)
        ));
        assert_eq!(
            render("{subject}", &Message::new("")),
            RenderError::NoSubject
        );
    }
}
