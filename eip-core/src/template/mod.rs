//! Templates: a name made from each message, for a destination computed per message (EIP's
//! Dynamic Router, Camel's `toD`), and the one template language of eip.
//!
//! Every text eip fills in per message is a [`Template`] parsed here: a route's `to` and
//! `recipient-list` targets, and an adapter's routing key, subject, topic, stream key, file name
//! or URL. A template is text with placeholders in braces:
//!
//! | placeholder | is replaced by |
//! |---|---|
//! | `{subject}` | the message's subject (its routing key) |
//! | `{id}` | the message's id |
//! | `{header.NAME}` | the header `NAME`: a string, a number or a boolean |
//! | `{$.path}` | the value a JSONPath (RFC 9535) selects in the JSON payload: a string, a number or a boolean |
//! | `{KIND: SOURCE}` | a placeholder of a kind the caller added ([`PlaceholderKind`]): eip-steps adds `{jq: EXPR}` |
//! | `{NAME}` | a value the caller fills in, when it declared `NAME` ([`Syntax::names`]): the file sink's `{yyyy}`, the timer's `{seq}` |
//!
//! `{{` and `}}` are a brace. A template is parsed once; a placeholder it does not know, or
//! one never closed, is an error with its byte offset. Rendering a message fails, with the
//! reason, when what a placeholder names is not there (no subject, no such header, a path that
//! selects nothing, a payload that is not JSON) or is not a scalar.
//!
//! A template reads the payload at most once per rendering, and only the parts its `{$.path}`
//! placeholders reach (see [`predicate`](crate::predicate) for how); a recipient list reads each
//! message once for all its templates.
//!
//! What a rendered value may hold is the user's business here: each destination checks its
//! own rules on what [`Template::render_each`] hands it, a value at a time (a file name refuses
//! a value holding `/`, a URL percent-encodes it, a NATS subject refuses a wildcard).
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

mod kind;
mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::message::{Demand, Doc, HeaderValue, JsonNode, Message, Reading};
use crate::predicate::json_path::JsonPathQuery;

pub use kind::{Computed, PlaceholderKind};
pub use parse::Syntax;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
    /// What its `{$.path}` placeholders read of a payload, together.
    demand: Demand,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Subject,
    Id,
    Header(String),
    Path {
        path: String,
        query: JsonPathQuery,
    },
    /// A name the caller declared, by its place in [`Syntax::names`].
    Name {
        index: usize,
        name: String,
    },
    Computed {
        written: String,
        value: Arc<dyn Computed>,
    },
}

/// One placeholder of a template, as a destination checking values sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placeholder<'a> {
    /// `{subject}`.
    Subject,
    /// `{id}`.
    Id,
    /// `{header.NAME}`, with the name.
    Header(&'a str),
    /// `{$.path}`, with the path.
    Path(&'a str),
    /// `{NAME}` of a name the caller declared, with the name.
    Name(&'a str),
    /// `{KIND: SOURCE}` of a kind the caller added, as written between the braces.
    Computed(&'a str),
}

impl fmt::Display for Placeholder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placeholder::Subject => f.write_str("{subject}"),
            Placeholder::Id => f.write_str("{id}"),
            Placeholder::Header(name) => write!(f, "{{header.{name}}}"),
            Placeholder::Path(path) | Placeholder::Name(path) | Placeholder::Computed(path) => {
                write!(f, "{{{path}}}")
            }
        }
    }
}

/// A piece of a template: text as it is, or a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text (with `{{` and `}}` as braces).
    Text(&'a str),
    /// A placeholder.
    Placeholder(Placeholder<'a>),
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

impl TemplateError {
    /// The reason with where it is, for an error that shows the template but not a position
    /// in a file: ``at byte 9: a `{` that is never closed: write `{{` for a brace``.
    pub fn at_byte(&self) -> String {
        format!("at byte {}: {}", self.offset, self.reason)
    }
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
    /// A placeholder of a caller's kind failed on this message (a jq error, a type error).
    #[error("`{{{placeholder}}}`: {reason}")]
    Computed {
        /// The placeholder as written between its braces.
        placeholder: String,
        /// What went wrong.
        reason: String,
    },
    /// `{NAME}` of a declared name, rendered without a value for it ([`Template::render`]
    /// instead of [`Template::render_each`]).
    #[error("nothing fills in `{{{0}}}` here")]
    Unfilled(String),
}

impl RenderError {
    /// Whether the message itself is at fault in a way no destination fixes: a computed
    /// placeholder (jq) failed on its content. A route sends such a message to the invalid
    /// message channel (reason `invalid`); a name that selects nothing is `no-route`.
    pub fn is_invalid_message(&self) -> bool {
        matches!(self, RenderError::Computed { .. })
    }
}

impl Template {
    fn new(text: String, parts: Vec<Part>) -> Template {
        let demand = parts
            .iter()
            .fold(Demand::nothing(), |demand, part| match part {
                Part::Path { query, .. } => demand.union(&query.demand()),
                _ => demand,
            });
        Template {
            text,
            parts,
            demand,
        }
    }

    /// Parses `text` with the placeholders every template takes (and no names nor kinds of a
    /// caller's; for those, [`Syntax::parse`]).
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        Syntax::new().parse(text)
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has no placeholder: every message makes the same text.
    pub fn is_fixed(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The text between its placeholders (with `{{` and `}}` as braces), for a destination to
    /// check what it allows in its own text once, when the template is parsed.
    pub fn literal_text(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Text(text) => Some(text.as_str()),
            _ => None,
        })
    }

    /// Its text and placeholders, in order: for a caller that fills a template from something
    /// other than a message (the timer makes its payload before there is one).
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> {
        self.parts.iter().map(|p| match (p, p.placeholder()) {
            (_, Some(placeholder)) => Piece::Placeholder(placeholder),
            (Part::Text(text), None) => Piece::Text(text),
            (_, None) => Piece::Text(""),
        })
    }

    /// Its placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = Placeholder<'_>> {
        self.parts.iter().filter_map(Part::placeholder)
    }

    /// Whether it is `{subject}` alone: the message's subject is the whole name.
    pub fn is_subject_alone(&self) -> bool {
        matches!(self.parts.as_slice(), [Part::Subject])
    }

    /// The text with every placeholder replaced by `value`: what the template makes when
    /// every value is that one (a destination checks its shape with a harmless `x`).
    pub fn sample(&self, value: &str) -> String {
        let mut out = String::with_capacity(self.text.len());
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                _ => out.push_str(value),
            }
        }
        out
    }

    /// The text `msg` makes of it, every value as it is.
    pub fn render(&self, msg: &Message) -> Result<String, RenderError> {
        self.render_in(&Reading::new(msg, &self.demand))
    }

    /// [`render`](Self::render) of the message `reading` reads, which must demand at least
    /// [`demand`](Self::demand): several templates share one reading of a message.
    pub(crate) fn render_in(&self, reading: &Reading<'_>) -> Result<String, RenderError> {
        self.render_each_in(
            reading,
            |_| None,
            |out: &mut String, _, value: &str| {
                out.push_str(value);
                Ok::<_, RenderError>(())
            },
        )
    }

    /// The text `msg` makes of it, each value handed to `put` with the placeholder it fills:
    /// `put` appends it to the text so far (as it is, encoded, or not at all with an error).
    /// `names` gives the value of the caller's declared names, by their place in
    /// [`Syntax::names`] (`None`: [`RenderError::Unfilled`]).
    pub fn render_each<E: From<RenderError>>(
        &self,
        msg: &Message,
        names: impl Fn(usize) -> Option<String>,
        put: impl FnMut(&mut String, Placeholder<'_>, &str) -> Result<(), E>,
    ) -> Result<String, E> {
        self.render_each_in(&Reading::new(msg, &self.demand), names, put)
    }

    /// What its `{$.path}` placeholders read of a payload.
    pub(crate) fn demand(&self) -> &Demand {
        &self.demand
    }

    fn render_each_in<E: From<RenderError>>(
        &self,
        reading: &Reading<'_>,
        names: impl Fn(usize) -> Option<String>,
        mut put: impl FnMut(&mut String, Placeholder<'_>, &str) -> Result<(), E>,
    ) -> Result<String, E> {
        let mut out = String::with_capacity(self.text.len() + 16);
        for part in &self.parts {
            let Some(placeholder) = part.placeholder() else {
                if let Part::Text(text) = part {
                    out.push_str(text);
                }
                continue;
            };
            match part.value(reading, &names)? {
                Filled::Borrowed(value) => put(&mut out, placeholder, value)?,
                Filled::Owned(value) => put(&mut out, placeholder, &value)?,
            }
        }
        Ok(out)
    }
}

/// A placeholder's value: the message's own text where it can be.
enum Filled<'a> {
    Borrowed(&'a str),
    Owned(String),
}

impl Part {
    fn placeholder(&self) -> Option<Placeholder<'_>> {
        Some(match self {
            Part::Text(_) => return None,
            Part::Subject => Placeholder::Subject,
            Part::Id => Placeholder::Id,
            Part::Header(name) => Placeholder::Header(name),
            Part::Path { path, .. } => Placeholder::Path(path),
            Part::Name { name, .. } => Placeholder::Name(name),
            Part::Computed { written, .. } => Placeholder::Computed(written),
        })
    }

    fn value<'m>(
        &self,
        reading: &Reading<'m>,
        names: &impl Fn(usize) -> Option<String>,
    ) -> Result<Filled<'m>, RenderError> {
        let msg = reading.message();
        Ok(match self {
            Part::Text(_) => Filled::Borrowed(""),
            Part::Subject => match msg.subject() {
                Ok(Some(subject)) => Filled::Borrowed(subject),
                _ => return Err(RenderError::NoSubject),
            },
            Part::Id => Filled::Owned(msg.id().to_string()),
            Part::Header(name) => match msg.headers().get(name) {
                None => return Err(RenderError::NoHeader(name.clone())),
                Some(HeaderValue::Bytes(_)) => return Err(RenderError::BytesHeader(name.clone())),
                Some(HeaderValue::Str(s)) => Filled::Borrowed(s),
                Some(value) => Filled::Owned(value.to_string()),
            },
            Part::Path { path, query } => {
                let root = reading
                    .json()
                    .map_err(|e| RenderError::NotJson(e.to_string(), path.clone()))?;
                let first = match root {
                    Doc::Value(root) => query.first(root).map(Cow::Borrowed),
                    Doc::Tree(root) => query.first(root).map(|node| Cow::Owned(node.to_value())),
                };
                match first {
                    None => return Err(RenderError::NothingSelected(path.clone())),
                    Some(value) => match scalar(&value) {
                        Ok(text) => Filled::Owned(text),
                        Err(what) => return Err(RenderError::NotScalar(path.clone(), what)),
                    },
                }
            }
            Part::Name { index, name } => match names(*index) {
                Some(value) => Filled::Owned(value),
                None => return Err(RenderError::Unfilled(name.clone())),
            },
            Part::Computed { written, value } => {
                Filled::Owned(value.value(msg).map_err(|reason| RenderError::Computed {
                    placeholder: written.clone(),
                    reason,
                })?)
            }
        })
    }
}

/// Two templates are equal when they are written the same.
impl PartialEq for Template {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Template {}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `text` is a template with placeholders, not a plain name: it holds a brace.
pub fn has_placeholders(text: &str) -> bool {
    text.contains('{') || text.contains('}')
}

/// A JSON scalar as template text (a string as it is, without quotes), or what the value is
/// instead: what `{$.path}` and a computed placeholder's value may be.
pub fn scalar(value: &Value) -> Result<String, &'static str> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(if *b { "true" } else { "false" }.to_owned()),
        Value::Null => Err("null"),
        Value::Array(_) => Err("an array"),
        Value::Object(_) => Err("an object"),
    }
}
