//! Positions inside a string value: where byte `n` of a predicate or pattern was written.
//!
//! A value's position points at its first character (after the quote, for a quoted scalar).
//! When the value's text is exactly what the file holds, byte `n` of the value is byte `n` of
//! the file from there. When it is not (escapes such as `\"` or `\u00e9` in double quotes,
//! `''` in single quotes, a scalar folded over several lines), the file's text is walked
//! alongside the value to find the matching place. Block scalars (`|`, `>`) and anything the
//! walk can not follow point at the start of the value instead.

use crate::spec::{Located, Position};

/// The position of byte `byte` of `value`, given the file's text when there is one.
pub(crate) fn inside(
    value: &Located<String>,
    byte: usize,
    source: Option<&str>,
) -> Option<Position> {
    let at = value.at?;
    let text = value.value.as_str();
    let byte = floor_boundary(text, byte.min(text.len()));
    let Some(source) = source else {
        // Without the file, only a value of the length written can be mapped.
        if at.len != text.len() || text.contains('\n') {
            return Some(at);
        }
        return Some(shifted(at, text, byte));
    };
    let Some(raw) = source.get(at.offset..at.offset.saturating_add(at.len)) else {
        return Some(at);
    };
    let raw_offset = if raw == text {
        Some(byte)
    } else {
        let style = match at
            .offset
            .checked_sub(1)
            .and_then(|i| source.as_bytes().get(i))
        {
            Some(b'"') => Style::Double,
            Some(b'\'') => Style::Single,
            _ => Style::Plain,
        };
        walk(raw, byte, style)
    };
    let Some(raw_offset) = raw_offset else {
        return Some(at);
    };
    let offset = at.offset + raw_offset;
    let before = source.get(at.offset..offset).unwrap_or("");
    let (line, column) = match before.rfind('\n') {
        None => (at.line, at.column.saturating_add(count(before))),
        Some(nl) => (
            at.line.saturating_add(count_newlines(before)),
            count(&before[nl + 1..]).saturating_add(1),
        ),
    };
    let len = source
        .get(offset..)
        .and_then(|s| s.chars().next())
        .filter(|c| *c != '\n' && offset < at.offset + at.len)
        .map_or(0, char::len_utf8);
    Some(Position {
        line,
        column,
        offset,
        len,
    })
}

fn count(s: &str) -> u32 {
    u32::try_from(s.chars().count()).unwrap_or(u32::MAX)
}

fn count_newlines(s: &str) -> u32 {
    u32::try_from(s.matches('\n').count()).unwrap_or(u32::MAX)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `at` moved `byte` bytes into a one-line value.
fn shifted(at: Position, text: &str, byte: usize) -> Position {
    let before = text.get(..byte).unwrap_or("");
    let len = text
        .get(byte..)
        .and_then(|s| s.chars().next())
        .map_or(0, char::len_utf8);
    Position {
        line: at.line,
        column: at.column.saturating_add(count(before)),
        offset: at.offset.saturating_add(byte),
        len,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// The offset in `raw` (the scalar as written) of byte `target` of `value` (as read).
fn walk(raw: &str, target: usize, style: Style) -> Option<usize> {
    let raw_bytes = raw.as_bytes();
    let mut r = 0; // in raw
    let mut v = 0; // in value
    while v < target {
        let rest = raw.get(r..)?;
        let c = rest.chars().next()?;
        if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
            // A run of white space holding a line break folds into one space, or into
            // n - 1 line breaks for n breaks; without a break it is kept as written.
            let run = rest
                .find(|c: char| !matches!(c, ' ' | '\t' | '\n' | '\r'))
                .unwrap_or(rest.len());
            let breaks = rest[..run].matches('\n').count();
            if breaks == 0 {
                r += c.len_utf8();
                v += c.len_utf8();
            } else {
                r += run;
                v += if breaks == 1 { 1 } else { breaks - 1 };
            }
            continue;
        }
        match (style, c) {
            (Style::Single, '\'') if raw_bytes.get(r + 1) == Some(&b'\'') => {
                r += 2;
                v += 1;
            }
            (Style::Double, '\\') => {
                let escaped = rest[1..].chars().next()?;
                let (written, decoded) = match escaped {
                    'x' => hex(rest, 2)?,
                    'u' => hex(rest, 4)?,
                    'U' => hex(rest, 8)?,
                    'N' | '_' => (2, 2),
                    'L' | 'P' => (2, 3),
                    '\n' | '\r' => {
                        // An escaped line break joins the lines without a space.
                        let run = rest[1..]
                            .find(|c: char| !matches!(c, ' ' | '\t' | '\n' | '\r'))
                            .map_or(rest.len(), |i| i + 1);
                        (run, 0)
                    }
                    other => (1 + other.len_utf8(), 1),
                };
                r += written;
                v += decoded;
            }
            _ => {
                r += c.len_utf8();
                v += c.len_utf8();
            }
        }
    }
    Some(r)
}

/// An escape `\x..`, `\u....` or `\U........`: bytes written, bytes decoded.
fn hex(rest: &str, digits: usize) -> Option<(usize, usize)> {
    let code = rest.get(2..2 + digits)?;
    let c = u32::from_str_radix(code, 16)
        .ok()
        .and_then(char::from_u32)?;
    Some((2 + digits, c.len_utf8()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locate(source: &str, value: &str, raw: &str, byte: usize) -> Option<(u32, u32)> {
        let offset = source.find(raw)?;
        let line = 1 + count_newlines(&source[..offset]);
        let column = 1 + count(&source[source[..offset].rfind('\n').map_or(0, |i| i + 1)..offset]);
        let at = Position {
            line,
            column,
            offset,
            len: raw.len(),
        };
        inside(&Located::at(value.to_owned(), at), byte, Some(source)).map(|p| (p.line, p.column))
    }

    #[test]
    fn a_verbatim_value_maps_byte_for_byte() {
        let src = "filter: '$.a >> 1'\n";
        assert_eq!(locate(src, "$.a >> 1", "$.a >> 1", 5), Some((1, 15)));
    }

    #[test]
    fn escapes_in_double_quotes_are_followed() {
        let src = "filter: \"$.a == \\\"x\\\" >> 1\"\n";
        let value = "$.a == \"x\" >> 1";
        let raw = "$.a == \\\"x\\\" >> 1";
        // byte 11 of the value is the first `>`; in the file two backslashes come before it.
        assert_eq!(locate(src, value, raw, 11), Some((1, 23)));
    }

    #[test]
    fn doubled_single_quotes_are_followed() {
        let src = "filter: '$.a == ''x'' >> 1'\n";
        assert_eq!(
            locate(src, "$.a == 'x' >> 1", "$.a == ''x'' >> 1", 11),
            Some((1, 23))
        );
    }

    #[test]
    fn folded_lines_are_followed() {
        let src = "filter: '$.a == 1 and\n    $.b >> 2'\n";
        let value = "$.a == 1 and $.b >> 2";
        let raw = "$.a == 1 and\n    $.b >> 2";
        assert_eq!(locate(src, value, raw, 17), Some((2, 9)));
    }

    #[test]
    fn without_the_file_a_one_line_value_is_still_mapped() {
        let at = Position {
            line: 3,
            column: 10,
            offset: 40,
            len: 8,
        };
        let p = inside(&Located::at("$.a >> 1".to_owned(), at), 5, None);
        assert_eq!(p.map(|p| (p.line, p.column, p.offset)), Some((3, 15, 45)));
    }

    #[test]
    fn odd_offsets_do_not_panic() {
        let src = "f: 'é'\n";
        let _ = locate(src, "é", "é", 1);
        let _ = locate(src, "é", "é", 99);
        let _ = inside(&Located::new("x".to_owned()), 3, Some(src));
    }
}
