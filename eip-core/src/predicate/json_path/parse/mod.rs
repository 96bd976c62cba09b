//! The parser: RFC 9535's grammar, read once into a [`Step`] tree.
//!
//! It follows the RFC's ABNF closely, so what the RFC refuses is refused here: leading zeros
//! (`$[01]`), `-0` as an index, integers beyond I-JSON's ±(2^53−1), a trailing `.`, control
//! characters in a string, white space where the grammar has none (`$. a`, `length (@)`). Every
//! error carries the byte where it was found, counted from the start of the whole expression.
//! Filters and the type checks of their functions are in [`filter`].

mod filter;

use std::sync::Arc;

use crate::predicate::error::{PredicateError, PredicateErrorKind};

use super::syntax::Step;

/// How deeply filters and parentheses may nest: the parser and the evaluator recurse.
const MAX_DEPTH: usize = 64;

/// The largest index and slice bound I-JSON can represent exactly: 2^53 − 1.
const MAX_INT: i64 = (1 << 53) - 1;

/// Parses `path`, found at byte `offset` of the whole expression, into its steps.
pub(super) fn path(path: &str, offset: usize) -> Result<Box<[Step]>, PredicateError> {
    let mut p = Parser {
        src: path,
        pos: 0,
        offset,
        depth: 0,
    };
    if !p.eat(b'$') {
        return Err(p.unexpected("`$`"));
    }
    let steps = p.segments()?;
    if p.pos < path.len() {
        return Err(p.unexpected("a segment (`.name`, `..name`, `[...]`) or the end"));
    }
    Ok(steps)
}

/// A cursor over the path's bytes.
struct Parser<'s> {
    src: &'s str,
    pos: usize,
    /// Where `src` starts in the whole expression.
    offset: usize,
    /// Filters and parentheses open around `pos`.
    depth: usize,
}

type Parsed<T> = Result<T, PredicateError>;

impl Parser<'_> {
    fn error(&self, at: usize, reason: impl Into<String>) -> PredicateError {
        PredicateError::new(
            self.offset + at,
            PredicateErrorKind::JsonPath {
                path: self.src.to_owned(),
                reason: reason.into(),
            },
        )
    }

    fn unexpected(&self, expected: &str) -> PredicateError {
        let found = match self.src[self.pos..].chars().next() {
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("`{c}`"),
            None => "the end of the path".to_owned(),
        };
        self.error(self.pos, format!("expected {expected}, found {found}"))
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_str(&mut self, s: &str) -> bool {
        let found = self.src[self.pos..].starts_with(s);
        if found {
            self.pos += s.len();
        }
        found
    }

    fn expect(&mut self, c: u8, what: &str) -> Parsed<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    /// RFC 9535's `S`: blanks, tabs, line feeds and carriage returns.
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// One nesting level more, refused past [`MAX_DEPTH`]; the caller calls `leave`.
    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(PredicateError::new(
                self.offset + self.pos,
                PredicateErrorKind::TooDeep(MAX_DEPTH),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// `*(S segment)`: the segments after `$` or `@`.
    fn segments(&mut self) -> Parsed<Box<[Step]>> {
        let mut steps = Vec::new();
        loop {
            let before = self.pos;
            self.skip_blanks();
            match self.peek() {
                Some(b'.' | b'[') => steps.push(self.segment()?),
                _ => {
                    self.pos = before;
                    return Ok(steps.into());
                }
            }
        }
    }

    fn segment(&mut self) -> Parsed<Step> {
        if self.eat(b'[') {
            return self.bracketed();
        }
        self.pos += 1; // the `.`
        if self.eat(b'.') {
            let selected = if self.eat(b'[') {
                self.bracketed()?
            } else if self.eat(b'*') {
                Step::Wildcard
            } else {
                self.member_name()?
            };
            return Ok(Step::Descendant(Box::new(selected)));
        }
        if self.eat(b'*') {
            return Ok(Step::Wildcard);
        }
        self.member_name()
    }

    /// `member-name-shorthand`: a name after `.` or `..`, without quotes.
    fn member_name(&mut self) -> Parsed<Step> {
        let rest = &self.src[self.pos..];
        if !rest.chars().next().is_some_and(name_first) {
            return Err(self.unexpected("a member name or `*`"));
        }
        let len = rest
            .char_indices()
            .find(|&(_, c)| !name_first(c) && !c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        self.pos += len;
        Ok(Step::Name(rest[..len].into()))
    }

    /// After `[`: selectors separated by commas, up to `]`.
    fn bracketed(&mut self) -> Parsed<Step> {
        let mut selectors = Vec::new();
        loop {
            self.skip_blanks();
            selectors.push(self.selector()?);
            self.skip_blanks();
            if self.eat(b']') {
                break;
            }
            if !self.eat(b',') {
                return Err(self.unexpected("`,` or `]`"));
            }
        }
        Ok(match selectors.pop() {
            Some(only) if selectors.is_empty() => only,
            Some(last) => {
                selectors.push(last);
                Step::Union(selectors.into())
            }
            None => return Err(self.unexpected("a selector")),
        })
    }

    fn selector(&mut self) -> Parsed<Step> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Step::Name(self.string()?.into())),
            Some(b'*') => {
                self.pos += 1;
                Ok(Step::Wildcard)
            }
            Some(b'?') => {
                self.pos += 1;
                self.skip_blanks();
                Ok(Step::Filter(Arc::new(self.logical()?)))
            }
            Some(b':' | b'-' | b'0'..=b'9') => self.index_or_slice(),
            _ => Err(self.unexpected("a selector (a quoted name, `*`, an index, a slice or `?`)")),
        }
    }

    fn index_or_slice(&mut self) -> Parsed<Step> {
        let start = self.optional_int()?;
        let before = self.pos;
        self.skip_blanks();
        if !self.eat(b':') {
            self.pos = before;
            return match start {
                Some(i) => Ok(Step::Index(i)),
                None => Err(self.unexpected("an index")),
            };
        }
        self.skip_blanks();
        let end = self.optional_int()?;
        self.skip_blanks();
        let step = if self.eat(b':') {
            self.skip_blanks();
            self.optional_int()?
        } else {
            None
        };
        Ok(Step::Slice { start, end, step })
    }

    fn optional_int(&mut self) -> Parsed<Option<i64>> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.int().map(Some),
            _ => Ok(None),
        }
    }

    /// `int`: `0`, or an optional `-` and digits without a leading zero, within ±(2^53−1).
    fn int(&mut self) -> Parsed<i64> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let digits = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text = &self.src[digits..self.pos];
        if text.is_empty() {
            return Err(self.unexpected("a digit"));
        }
        if text.starts_with('0') && (text.len() > 1 || negative) {
            return Err(self.error(start, "an integer has no leading zero and no `-0`"));
        }
        match self.src[start..self.pos].parse::<i64>() {
            Ok(i) if (-MAX_INT..=MAX_INT).contains(&i) => Ok(i),
            _ => Err(self.error(
                start,
                "an index or slice bound must lie within ±(2^53−1) (I-JSON)",
            )),
        }
    }

    /// A quoted string (`'...'` or `"..."`) with its escapes decoded.
    fn string(&mut self) -> Parsed<String> {
        let start = self.pos;
        let quote = self.src.as_bytes()[start];
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.src[self.pos..].chars().next() else {
                return Err(self.error(start, "string is never closed"));
            };
            self.pos += c.len_utf8();
            match c {
                _ if c as u32 == u32::from(quote) => return Ok(out),
                '\\' => out.push(self.escape(quote)?),
                _ if c < '\u{20}' => {
                    return Err(self.error(
                        self.pos - 1,
                        format!("the control character {c:?} must be escaped in a string"),
                    ));
                }
                _ => out.push(c),
            }
        }
    }

    /// After `\` in a string quoted with `quote`.
    fn escape(&mut self, quote: u8) -> Parsed<char> {
        let at = self.pos - 1;
        let c = match self.peek() {
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'/') => '/',
            Some(b'\\') => '\\',
            Some(q) if q == quote => char::from(q),
            Some(b'u') => {
                self.pos += 1;
                return self.unicode_escape(at);
            }
            _ => {
                let found = self.src[self.pos..].chars().next().unwrap_or(' ');
                return Err(self.error(at, format!("invalid escape `\\{found}` in a string")));
            }
        };
        self.pos += 1;
        Ok(c)
    }

    /// After `\u`: four hex digits, a surrogate pair written as two escapes.
    fn unicode_escape(&mut self, at: usize) -> Parsed<char> {
        let high = self.hex4(at)?;
        let code = if (0xD800..0xDC00).contains(&high) {
            if !self.eat_str("\\u") {
                return Err(self.error(
                    at,
                    "a high surrogate must be followed by `\\u` and a low one",
                ));
            }
            let low = self.hex4(at)?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.error(at, "a high surrogate must be followed by a low one"));
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else {
            high
        };
        char::from_u32(code)
            .ok_or_else(|| self.error(at, "a lone low surrogate is not a character"))
    }

    fn hex4(&mut self, at: usize) -> Parsed<u32> {
        let hex = self.src.get(self.pos..self.pos + 4).unwrap_or("");
        if hex.len() != 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.error(at, "`\\u` needs four hexadecimal digits"));
        }
        self.pos += 4;
        u32::from_str_radix(hex, 16)
            .map_err(|_| self.error(at, "`\\u` needs four hexadecimal digits"))
    }
}

/// `name-first`: a letter, `_` or any character beyond ASCII.
fn name_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}
