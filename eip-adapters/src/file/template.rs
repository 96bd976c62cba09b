//! File name templates: an eip template, with the UTC date parts of the time of writing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use eip_core::Message;
use eip_core::template::{Placeholder, RenderError, Syntax, Template};

use super::FileError;

/// The names a file name template fills itself, in the order of [`DatePart`].
const DATE_NAMES: [&str; 6] = ["yyyy", "MM", "dd", "HH", "mm", "ss"];

/// A parsed file name template.
///
/// A name is an eip template (`{id}`, `{subject}`, `{header.NAME}`, `{$.path}`, and
/// `{jq: EXPR}` where the flow was built with jq; `{{` and `}}` are braces, and a `{` without
/// its `}` is refused), plus the file's own `{yyyy}` `{MM}` `{dd}` `{HH}` `{mm}` `{ss}`: the
/// time of writing, UTC. `/` in the template's own text makes subdirectories. A template can
/// not leave its directory: it may not be absolute nor have an empty, `.` or `..` component,
/// and a value put in a placeholder may not hold `/`, `\` or NUL nor be empty, `.` or `..`.
#[derive(Clone, PartialEq, Eq)]
pub struct NameTemplate(Template);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DatePart {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

const DATE_PARTS: [DatePart; 6] = [
    DatePart::Year,
    DatePart::Month,
    DatePart::Day,
    DatePart::Hour,
    DatePart::Minute,
    DatePart::Second,
];

impl NameTemplate {
    /// The placeholders a file name takes: every eip placeholder and the date parts.
    pub const SYNTAX: Syntax<'static> = Syntax::new().names(&DATE_NAMES);

    /// Parses a template, refusing one that could leave its directory whatever it is given.
    pub fn parse(template: &str) -> Result<Self, FileError> {
        let parsed = Self::SYNTAX
            .parse(template)
            .map_err(|e| FileError::Template {
                template: template.to_owned(),
                reason: e.at_byte(),
            })?;
        Self::new(parsed)
    }

    /// The name of a parsed template (one parsed with [`SYNTAX`](Self::SYNTAX) and more kinds,
    /// such as jq), refused if it could leave its directory whatever it is given.
    pub fn new(template: Template) -> Result<Self, FileError> {
        let bad = |reason: &str| FileError::Template {
            template: template.as_str().to_owned(),
            reason: reason.to_owned(),
        };
        // Its own text, with every placeholder one harmless component.
        let shape = template.sample("x");
        if shape.starts_with('/') || shape.starts_with('\\') {
            return Err(bad("an absolute path leaves the directory"));
        }
        if shape.contains('\\') || shape.contains('\0') {
            return Err(bad("`\\` and NUL are not allowed"));
        }
        for component in shape.split('/') {
            match component {
                "" => return Err(bad("empty path component")),
                "." | ".." => return Err(bad("`.` and `..` components are not allowed")),
                _ => {}
            }
        }
        for placeholder in template.placeholders() {
            if let Placeholder::Header(name) = placeholder
                && name.contains('/')
            {
                return Err(bad(&format!(
                    "unknown placeholder `{placeholder}`: a header name has no `/`"
                )));
            }
        }
        Ok(NameTemplate(template))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
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
        let out = self.0.render_each(
            msg,
            |i| DATE_PARTS.get(i).map(|part| date.format(*part)),
            |out, _, value| {
                if value.is_empty() || value == "." || value == ".." {
                    return Err(Failed::File(escape(
                        out,
                        format!("a placeholder's value is `{value}`"),
                    )));
                }
                if let Some(c) = value.chars().find(|c| matches!(c, '/' | '\\' | '\0')) {
                    return Err(Failed::File(escape(
                        &format!("{out}{value}"),
                        format!("a placeholder's value holds {c:?}"),
                    )));
                }
                out.push_str(value);
                Ok(())
            },
        );
        let out = out.map_err(|e| match e {
            Failed::File(e) => e,
            Failed::Render(e) => self.unfilled(e),
        })?;
        // Placeholders are single components, so only the template's own `/` split the path.
        if out
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(escape(&out, "empty, `.` or `..` component".into()));
        }
        Ok(PathBuf::from(out))
    }

    /// What the message could not fill in: a header named as such, anything else with the
    /// template's reason.
    fn unfilled(&self, e: RenderError) -> FileError {
        let header = |header: String, reason| FileError::Header {
            template: self.as_str().to_owned(),
            header,
            reason,
        };
        match e {
            RenderError::NoHeader(name) => header(name, "is missing"),
            RenderError::BytesHeader(name) => header(name, "holds bytes, not text"),
            other => FileError::Render {
                template: self.as_str().to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

/// What stopped a name: the message could not fill it in, or a value would leave the
/// directory.
enum Failed {
    Render(RenderError),
    File(FileError),
}

impl From<RenderError> for Failed {
    fn from(e: RenderError) -> Self {
        Failed::Render(e)
    }
}

impl fmt::Debug for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NameTemplate").field(&self.as_str()).finish()
    }
}

impl fmt::Display for NameTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
            assert!(refused.contains("never closed"), "{bad:?}: {refused}");
        }
        assert!(NameTemplate::parse("{header.x}").is_ok());
    }

    #[test]
    fn every_eip_placeholder_names_files_and_a_value_can_not_leave_the_directory() {
        let t = NameTemplate::parse("{subject}/{$.kind}-{header.n}.json").unwrap();
        let dir = Path::new("/out");
        let msg = |kind: &str| {
            Message::builder(format!(r#"{{"kind": "{kind}"}}"#))
                .subject("orders")
                .header("n", 3)
                .build()
        };
        assert_eq!(
            t.render(&msg("paid"), at(0), dir).unwrap(),
            PathBuf::from("orders/paid-3.json")
        );
        for bad in ["../x", "a/b", ".."] {
            assert!(
                matches!(
                    t.render(&msg(bad), at(0), dir),
                    Err(FileError::Escape { .. })
                ),
                "{bad}"
            );
        }
        let e = t.render(&Message::new("{}"), at(0), dir).unwrap_err();
        assert!(matches!(e, FileError::Render { .. }), "{e}");
        let e = NameTemplate::parse("{id}")
            .unwrap()
            .render(&msg("x"), at(0), dir);
        assert!(e.is_ok());
        let missing = NameTemplate::parse("{header.gone}").unwrap();
        assert!(matches!(
            missing.render(&msg("x"), at(0), dir),
            Err(FileError::Header { .. })
        ));
    }

    #[test]
    fn templates_that_leave_the_directory_are_refused_when_parsed() {
        for bad in ["../x", "/etc/x", "a/../b", "a//b", "a/", "./a", "a\\b", ""] {
            assert!(NameTemplate::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(NameTemplate::parse("{yyyy}/{MM}/{id}.json").is_ok());
    }
}
