//! File name templates: `{id}`, `{header.NAME}` and UTC date parts, parsed once.
//!
//! A template is text with placeholders: `{id}` (the message id), `{header.NAME}` (a header's
//! value), `{yyyy}` `{MM}` `{dd}` `{HH}` `{mm}` `{ss}` (the time of writing, UTC); `{{` and `}}`
//! are literal braces, and a `{` without its `}` is refused. `/` in the template's own text makes subdirectories. A template can not
//! leave its directory: it may not be absolute nor have an empty, `.` or `..` component, and a
//! value put in a placeholder may not hold `/`, `\` or NUL nor be empty, `.` or `..`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use eip_core::Message;
use eip_core::message::HeaderValue;

use super::FileError;

/// A parsed file name template (see the [module](self) for the syntax and rules).
#[derive(Clone, PartialEq, Eq)]
pub struct NameTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Id,
    Header(String),
    Date(DatePart),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DatePart {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl NameTemplate {
    /// Parses a template, refusing one that could leave its directory whatever it is given.
    pub fn parse(template: &str) -> Result<Self, FileError> {
        let bad = |reason: &str| FileError::Template {
            template: template.to_owned(),
            reason: reason.to_owned(),
        };
        if template.starts_with('/') || template.starts_with('\\') {
            return Err(bad("an absolute path leaves the directory"));
        }
        if template.contains('\\') || template.contains('\0') {
            return Err(bad("`\\` and NUL are not allowed"));
        }
        for component in template.split('/') {
            match component {
                "" => return Err(bad("empty path component")),
                "." | ".." => return Err(bad("`.` and `..` components are not allowed")),
                _ => {}
            }
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err(bad("unmatched `}` (write `}}` for a brace)")),
                '{' => {
                    let mut name = String::new();
                    let closed = loop {
                        match chars.next() {
                            Some('}') => break true,
                            Some(c) => name.push(c),
                            None => break false,
                        }
                    };
                    if !closed {
                        return Err(bad(&format!(
                            "unclosed placeholder `{{{name}` (a `{{` needs its `}}`; write `{{{{` for a brace)"
                        )));
                    }
                    let part = placeholder(&name).ok_or_else(|| {
                        bad(&format!(
                            "unknown placeholder `{{{name}}}` (known: id, header.NAME, yyyy, MM, dd, HH, mm, ss)"
                        ))
                    })?;
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(part);
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(NameTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The relative path this template makes for `msg` at time `now`, or why it can not
    /// (a header missing, or a value that would leave `dir`).
    pub fn render(&self, msg: &Message, now: SystemTime, dir: &Path) -> Result<PathBuf, FileError> {
        let escape = |name: &str, reason: String| FileError::Escape {
            dir: dir.to_owned(),
            name: name.to_owned(),
            reason,
        };
        let date = Civil::from(now);
        let mut out = String::new();
        for part in &self.parts {
            let value = match part {
                Part::Literal(text) => {
                    out.push_str(text);
                    continue;
                }
                Part::Id => msg.id().to_string(),
                Part::Date(d) => date.format(*d),
                Part::Header(name) => self.header_value(msg, name)?,
            };
            if value.is_empty() || value == "." || value == ".." {
                return Err(escape(&out, format!("a placeholder's value is `{value}`")));
            }
            if let Some(c) = value.chars().find(|c| matches!(c, '/' | '\\' | '\0')) {
                return Err(escape(
                    &format!("{out}{value}"),
                    format!("a placeholder's value holds {c:?}"),
                ));
            }
            out.push_str(&value);
        }
        // Placeholders are single components, so only the template's own `/` split the path.
        if out
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(escape(&out, "empty, `.` or `..` component".into()));
        }
        Ok(PathBuf::from(out))
    }

    fn header_value(&self, msg: &Message, name: &str) -> Result<String, FileError> {
        let missing = |reason| FileError::Header {
            template: self.source.clone(),
            header: name.to_owned(),
            reason,
        };
        match msg.headers().get(name) {
            None => Err(missing("is missing")),
            Some(HeaderValue::Bytes(_)) => Err(missing("holds bytes, not text")),
            Some(value) => Ok(value.to_string()),
        }
    }
}

fn placeholder(name: &str) -> Option<Part> {
    Some(match name {
        "id" => Part::Id,
        "yyyy" => Part::Date(DatePart::Year),
        "MM" => Part::Date(DatePart::Month),
        "dd" => Part::Date(DatePart::Day),
        "HH" => Part::Date(DatePart::Hour),
        "mm" => Part::Date(DatePart::Minute),
        "ss" => Part::Date(DatePart::Second),
        _ => {
            let header = name.strip_prefix("header.")?;
            if header.is_empty() || header.contains(['/', '{']) {
                return None;
            }
            Part::Header(header.to_owned())
        }
    })
}

impl fmt::Debug for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NameTemplate").field(&self.source).finish()
    }
}

impl fmt::Display for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for NameTemplate {
    type Err = FileError;
    fn from_str(s: &str) -> Result<Self, FileError> {
        NameTemplate::parse(s)
    }
}

/// A UTC date and time of day.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    secs_of_day: u64,
}

impl From<SystemTime> for Civil {
    fn from(t: SystemTime) -> Self {
        let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        // Days to civil date, after H. Hinnant's `civil_from_days`.
        let days = i64::try_from(secs / 86_400).unwrap_or(0) + 719_468;
        let era = days.div_euclid(146_097);
        let doe = days.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Civil {
            year,
            month,
            day,
            secs_of_day: secs % 86_400,
        }
    }
}

impl Civil {
    fn format(&self, part: DatePart) -> String {
        match part {
            DatePart::Year => format!("{:04}", self.year),
            DatePart::Month => format!("{:02}", self.month),
            DatePart::Day => format!("{:02}", self.day),
            DatePart::Hour => format!("{:02}", self.secs_of_day / 3600),
            DatePart::Minute => format!("{:02}", self.secs_of_day / 60 % 60),
            DatePart::Second => format!("{:02}", self.secs_of_day % 60),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn date_parts_are_utc_calendar_fields() {
        let t = NameTemplate::parse("{yyyy}-{MM}-{dd}T{HH}:{mm}:{ss}").unwrap();
        let msg = Message::new("x");
        let dir = Path::new("/out");
        // 2024-02-29 23:59:58 UTC, a leap day.
        let path = t.render(&msg, at(1_709_251_198), dir).unwrap();
        assert_eq!(path, PathBuf::from("2024-02-29T23:59:58"));
        assert_eq!(
            t.render(&msg, at(0), dir).unwrap(),
            PathBuf::from("1970-01-01T00:00:00")
        );
    }

    #[test]
    fn braces_escape_and_unknown_placeholders_are_refused() {
        let t = NameTemplate::parse("{{x}}-{id}").unwrap();
        let msg = Message::new("x");
        let path = t.render(&msg, at(0), Path::new("/out")).unwrap();
        assert_eq!(path, PathBuf::from(format!("{{x}}-{}", msg.id())));
        assert!(NameTemplate::parse("{nope}").is_err());
        assert!(NameTemplate::parse("a}").is_err());
        assert!(NameTemplate::parse("{header.}").is_err());
    }

    #[test]
    fn an_unclosed_placeholder_is_refused_with_the_reason() {
        for bad in ["{header.x", "out/{id", "a-{", "{{id}}-{yyyy"] {
            let refused = NameTemplate::parse(bad).unwrap_err().to_string();
            assert!(
                refused.contains("unclosed placeholder"),
                "{bad:?}: {refused}"
            );
        }
        assert!(NameTemplate::parse("{header.x}").is_ok());
    }

    #[test]
    fn templates_that_leave_the_directory_are_refused_when_parsed() {
        for bad in ["../x", "/etc/x", "a/../b", "a//b", "a/", "./a", "a\\b", ""] {
            assert!(NameTemplate::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(NameTemplate::parse("{yyyy}/{MM}/{id}.json").is_ok());
    }
}
