//! Text from outside, made safe for a log line.
//!
//! Header values, payload excerpts, file names, broker error texts: anything that came from
//! outside the process may hold a line feed, a carriage return, NUL or a terminal escape. Written
//! to a log as it came, such text forges log lines (`"ok\n2026-12-01T10:00:00Z INFO forged"`)
//! or drives the terminal that shows the log. eip escapes it wherever it logs it: every control
//! character (C0, DEL and C1, plus the Unicode line and paragraph separators that some viewers
//! break lines at) is written as a visible escape — `\n`, `\r`, `\t`, `\0`, otherwise `\u{1b}`
//! —, so that no text from outside can end a log line or start another. Everything else,
//! non-ASCII letters and backslashes included, is written as it is: escaping is idempotent, so
//! text escaped where it is logged and again by the log formatter reads the same.
//!
//! [`Escaped`] wraps any `Display` for a log field: `tracing::warn!(error = %Escaped(&e), ..)`.
//! [`EscapingWriter`] escapes whatever is written through it, for a log formatter that escapes
//! every field (the `eip` command's does).
//!
//! ```
//! use eip_core::log::{escape, Escaped};
//!
//! let forged = "ok\n2026-12-01T10:00:00Z  INFO forged";
//! assert_eq!(escape(forged), r"ok\n2026-12-01T10:00:00Z  INFO forged");
//! assert_eq!(Escaped(forged).to_string(), escape(forged));
//! assert_eq!(escape("grüße, 東京"), "grüße, 東京");
//! ```

use std::borrow::Cow;
use std::fmt::{self, Write};

/// `text` with every control character escaped (see the [module](self) docs); borrowed when
/// there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    // Writing to a String can not fail.
    let _ = EscapingWriter::new(&mut out).write_str(text);
    Cow::Owned(out)
}

/// A `Display` that writes the wrapped value with its control characters escaped.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<T>(pub T);

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter::new(f), "{}", self.0)
    }
}

/// A [`fmt::Write`] that escapes the control characters of whatever passes through it.
#[derive(Debug)]
pub struct EscapingWriter<W> {
    inner: W,
}

impl<W: Write> EscapingWriter<W> {
    /// Escapes into `inner`.
    pub fn new(inner: W) -> Self {
        EscapingWriter { inner }
    }

    /// The writer escaped into.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for EscapingWriter<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut plain = 0;
        for (at, c) in s.char_indices() {
            if !needs_escape(c) {
                continue;
            }
            self.inner.write_str(&s[plain..at])?;
            plain = at + c.len_utf8();
            match c {
                '\n' => self.inner.write_str("\\n")?,
                '\r' => self.inner.write_str("\\r")?,
                '\t' => self.inner.write_str("\\t")?,
                '\0' => self.inner.write_str("\\0")?,
                c => write!(self.inner, "\\u{{{:x}}}", c as u32)?,
            }
        }
        self.inner.write_str(&s[plain..])
    }
}

fn needs_escape(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_feed_can_not_start_a_forged_line() {
        let text = "value\n2026-12-01T10:00:00.000Z  INFO eip: forged";
        let escaped = escape(text);
        assert!(!escaped.contains('\n'));
        assert_eq!(
            escaped,
            "value\\n2026-12-01T10:00:00.000Z  INFO eip: forged"
        );
    }

    #[test]
    fn every_control_character_is_written_visibly() {
        for c in (0u32..0x20).chain(0x7f..0xa0).chain([0x2028, 0x2029]) {
            let c = char::from_u32(c).unwrap();
            let text = format!("a{c}b");
            let escaped = escape(&text);
            assert!(!escaped.chars().any(needs_escape), "{c:?} -> {escaped}");
            assert!(
                escaped.starts_with("a\\") && escaped.ends_with('b'),
                "{c:?} -> {escaped}"
            );
        }
        assert_eq!(escape("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(escape("nul\0"), "nul\\0");
    }

    #[test]
    fn escaping_twice_reads_the_same_as_once() {
        let text = "a\nb\u{1b}c\\d";
        assert_eq!(escape(&escape(text)), escape(text));
    }

    #[test]
    fn plain_text_is_borrowed_and_unchanged() {
        assert!(matches!(
            escape("plain, grüße"),
            Cow::Borrowed("plain, grüße")
        ));
    }

    #[test]
    fn escaped_display_escapes_what_the_value_writes() {
        let err = std::io::Error::other("bad\r\nthing");
        assert_eq!(Escaped(&err).to_string(), "bad\\r\\nthing");
    }
}
