//! The payload template of a timer: fixed text with placeholders filled for each message.
//!
//! A placeholder is a name in braces: `{seq}` (the message's sequence number, from 1),
//! `{timestamp}` (when it fired, in milliseconds since the Unix epoch), `{id}` (the message's
//! id) and `{name}` (the timer's name). Any other brace is text, so a JSON payload is written as
//! it is: `{"seq": {seq}, "at": {timestamp}}`. A name in braces that is not a placeholder
//! (`{sqe}`) is refused rather than sent as written.

use std::fmt::Write as _;

/// A parsed payload template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadTemplate {
    parts: Vec<Part>,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Seq,
    Timestamp,
    Id,
    Name,
}

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
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let name_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(after.len());
            let is_placeholder = name_len > 0 && after[name_len..].starts_with('}');
            if !is_placeholder {
                literal.push('{');
                rest = after;
                offset += open + 1;
                continue;
            }
            let part = match &after[..name_len] {
                "seq" => Part::Seq,
                "timestamp" => Part::Timestamp,
                "id" => Part::Id,
                "name" => Part::Name,
                other => {
                    return Err(TemplateError {
                        name: other.to_owned(),
                        offset: offset + open,
                    });
                }
            };
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(part);
            let consumed = open + 1 + name_len + 1;
            rest = &rest[consumed..];
            offset += consumed;
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(PayloadTemplate {
            parts,
            text: text.to_owned(),
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The payload of one message.
    pub fn render(&self, fill: Fill<'_>) -> String {
        let mut out = String::with_capacity(self.text.len() + 16);
        for part in &self.parts {
            // Writing to a String can not fail.
            let _ = match part {
                Part::Text(text) => out.write_str(text),
                Part::Seq => write!(out, "{}", fill.seq),
                Part::Timestamp => write!(out, "{}", fill.timestamp),
                Part::Id => out.write_str(fill.id),
                Part::Name => out.write_str(fill.name),
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
    fn the_id_placeholder_takes_the_message_id() {
        let t = PayloadTemplate::parse("{id}").unwrap();
        assert_eq!(t.render(fill()), "0193");
    }
}
