//! The payload template of a timer: fixed text with placeholders filled for each message.
//!
//! A placeholder is a name in braces: `{seq}` (the message's sequence number, from 1),
//! `{timestamp}` (when it fired, in milliseconds since the Unix epoch), `{id}` (the message's
//! id, the eip placeholder) and `{name}` (the timer's name). It is an eip template read with
//! [text braces](eip_core::template::Syntax::text_braces): any other brace is text, so a JSON
//! payload is written as it is: `{"seq": {seq}, "at": {timestamp}}`. A name in braces that is
//! not a placeholder (`{sqe}`) is refused rather than sent as written, and so are the eip
//! placeholders that read a message (`{subject}`, `{header.NAME}`): the payload is made before
//! there is one.

use std::fmt::Write as _;

use eip_core::template::{Piece, Placeholder, Syntax, Template};

/// The names a timer fills itself.
const NAMES: [&str; 3] = ["seq", "timestamp", "name"];

/// A parsed payload template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadTemplate(Template);

/// A template that names a placeholder that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown placeholder `{{{name}}}` at byte {offset}: the placeholders are `{{seq}}`, `{{timestamp}}`, `{{id}}` and `{{name}}`"
)]
pub struct TemplateError {
    /// The name written between the braces.
    pub name: String,
    /// Where its opening brace is, in bytes from the start of the template.
    pub offset: usize,
}

/// What one message's placeholders are filled with.
#[derive(Debug, Clone, Copy)]
pub struct Fill<'a> {
    /// The sequence number, from 1.
    pub seq: u64,
    /// When the timer fired, in milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// The message's id.
    pub id: &'a str,
    /// The timer's name.
    pub name: &'a str,
}

impl PayloadTemplate {
    /// The placeholders a payload takes, with braces as text.
    pub const SYNTAX: Syntax<'static> = Syntax::new().names(&NAMES).text_braces();

    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let unknown = |offset: usize| {
            let inner = &text[offset..];
            let name = inner.split('}').next().unwrap_or(inner);
            TemplateError {
                name: name.to_owned(),
                offset: offset.saturating_sub(1),
            }
        };
        let template = Self::SYNTAX.parse(text).map_err(|e| unknown(e.offset))?;
        for placeholder in template.placeholders() {
            if !matches!(placeholder, Placeholder::Id | Placeholder::Name(_)) {
                let written = placeholder.to_string();
                let at = text.find(&written).unwrap_or(0);
                return Err(unknown(at + 1));
            }
        }
        Ok(PayloadTemplate(template))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The payload of one message.
    pub fn render(&self, fill: Fill<'_>) -> String {
        let mut out = String::with_capacity(self.as_str().len() + 16);
        for piece in self.0.pieces() {
            // Writing to a String can not fail.
            let _ = match piece {
                Piece::Text(text) => out.write_str(text),
                Piece::Placeholder(Placeholder::Name("seq")) => write!(out, "{}", fill.seq),
                Piece::Placeholder(Placeholder::Name("timestamp")) => {
                    write!(out, "{}", fill.timestamp)
                }
                Piece::Placeholder(Placeholder::Name("name")) => out.write_str(fill.name),
                Piece::Placeholder(Placeholder::Id) => out.write_str(fill.id),
                // `parse` took no other.
                Piece::Placeholder(_) => Ok(()),
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill() -> Fill<'static> {
        Fill {
            seq: 7,
            timestamp: 1_700_000_000_000,
            id: "0193",
            name: "tick",
        }
    }

    #[test]
    fn json_braces_stay_text_and_placeholders_are_filled() {
        let t =
            PayloadTemplate::parse(r#"{"seq": {seq}, "at": {timestamp}, "by": "{name}"}"#).unwrap();
        assert_eq!(
            t.render(fill()),
            r#"{"seq": 7, "at": 1700000000000, "by": "tick"}"#
        );
    }

    #[test]
    fn text_without_placeholders_is_sent_as_written() {
        let t = PayloadTemplate::parse("ping {} { x }").unwrap();
        assert_eq!(t.render(fill()), "ping {} { x }");
    }

    #[test]
    fn an_unknown_placeholder_is_refused_with_its_place() {
        let e = PayloadTemplate::parse("n={sqe}").unwrap_err();
        assert_eq!((e.name.as_str(), e.offset), ("sqe", 2));
    }

    #[test]
    fn placeholders_that_read_a_message_are_refused_as_there_is_none_yet() {
        for (bad, name, offset) in [("a {subject}", "subject", 2), ("{header.x}", "header.x", 0)] {
            let e = PayloadTemplate::parse(bad).unwrap_err();
            assert_eq!((e.name.as_str(), e.offset), (name, offset), "{bad}");
        }
    }

    #[test]
    fn the_id_placeholder_takes_the_message_id() {
        let t = PayloadTemplate::parse("{id}").unwrap();
        assert_eq!(t.render(fill()), "0193");
    }
}
