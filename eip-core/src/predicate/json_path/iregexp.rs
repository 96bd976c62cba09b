//! I-Regexp (RFC 9485), the regular expressions of `match()` and `search()`, checked and
//! translated into the `regex` crate's syntax.
//!
//! I-Regexp is a small, interoperable subset: literal characters, `.`, character classes
//! (`[a-z]`, `[^...]`), the Unicode general categories `\p{..}` and `\P{..}`, the escapes
//! `\n \r \t` and of its own special characters, groups `(...)`, `|`, and the quantifiers
//! `* + ? {n} {n,} {n,m}`. Everything else (`\d`, `\b`, backreferences, lookaround, anchors) is
//! not I-Regexp and refused with the position of the offending character. The translation
//! writes every character that is not alphanumeric as `\x{..}` so the `regex` crate can never
//! read it as an operator of its own (`&&` or `~~` in a class), and `.` as `[^\n\r]` (the
//! `regex` crate's `.` would match `\r`). `match()` anchors the whole expression at both ends
//! of the string; `search()` looks for it anywhere. An unescaped `^` or `$` outside a class
//! anchors at the start or end of the string: I-Regexp's grammar lets them through as
//! characters, but the RFC's own mapping to ECMAScript and PCRE (§5.3, §5.4) leaves them as
//! anchors, and the JSONPath Compliance Test Suite expects that (`match(@, '^ab.*')` matches
//! `"abc"`). `\^` and `[$]` stand for the characters themselves.

use std::fmt::{self, Write as _};
use std::iter::Peekable;
use std::str::CharIndices;

use regex::Regex;

/// How deeply groups may nest: the translation recurses.
const MAX_GROUPS: usize = 64;

/// A checked and compiled I-Regexp.
#[derive(Debug)]
pub(crate) struct Pattern {
    regex: Regex,
}

/// Why a pattern is not a valid I-Regexp, and the byte where that was found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IRegexpError {
    pub(crate) at: usize,
    pub(crate) reason: String,
}

impl fmt::Display for IRegexpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {} of the pattern)", self.reason, self.at)
    }
}

impl Pattern {
    /// Checks `source` and compiles it, for a whole-string match (`whole`) or a search.
    pub(crate) fn new(source: &str, whole: bool) -> Result<Pattern, IRegexpError> {
        let body = translate(source)?;
        let full = if whole {
            format!(r"\A(?:{body})\z")
        } else {
            body
        };
        let regex = Regex::new(&full).map_err(|e| IRegexpError {
            at: 0,
            reason: match e {
                regex::Error::CompiledTooBig(limit) => {
                    format!("the expression compiles to more than {limit} bytes")
                }
                other => other.to_string(),
            },
        })?;
        Ok(Pattern { regex })
    }

    pub(crate) fn is_match(&self, s: &str) -> bool {
        self.regex.is_match(s)
    }
}

/// The `regex` crate's form of the I-Regexp `source`.
fn translate(source: &str) -> Result<String, IRegexpError> {
    let mut t = Translator {
        chars: source.char_indices().peekable(),
        end: source.len(),
        out: String::with_capacity(source.len() * 2),
        groups: 0,
    };
    t.alternation()?;
    match t.chars.next() {
        None => Ok(t.out),
        Some((at, c)) => Err(error(at, format!("unexpected `{c}`"))),
    }
}

fn error(at: usize, reason: impl Into<String>) -> IRegexpError {
    IRegexpError {
        at,
        reason: reason.into(),
    }
}

struct Translator<'s> {
    chars: Peekable<CharIndices<'s>>,
    /// The length of the source, the position of its end.
    end: usize,
    out: String,
    /// Groups open around the current position.
    groups: usize,
}

impl Translator<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    fn at(&mut self) -> usize {
        self.chars.peek().map_or(self.end, |&(at, _)| at)
    }

    /// `branch *( "|" branch )`.
    fn alternation(&mut self) -> Result<(), IRegexpError> {
        self.branch()?;
        while self.peek() == Some('|') {
            self.chars.next();
            self.out.push('|');
            self.branch()?;
        }
        Ok(())
    }

    /// `*piece`, up to `|`, `)` or the end.
    fn branch(&mut self) -> Result<(), IRegexpError> {
        while !matches!(self.peek(), None | Some('|' | ')')) {
            self.atom()?;
            self.quantifier()?;
        }
        Ok(())
    }

    fn atom(&mut self) -> Result<(), IRegexpError> {
        let Some((at, c)) = self.chars.next() else {
            return Err(error(
                self.end,
                "the pattern ends where a character was expected",
            ));
        };
        match c {
            '(' => {
                self.groups += 1;
                if self.groups > MAX_GROUPS {
                    return Err(error(
                        at,
                        format!("groups nested more than {MAX_GROUPS} deep"),
                    ));
                }
                self.out.push_str("(?:");
                self.alternation()?;
                if self.chars.next().map(|(_, c)| c) != Some(')') {
                    return Err(error(at, "`(` is never closed"));
                }
                self.out.push(')');
                self.groups -= 1;
            }
            '.' => self.out.push_str(r"[^\n\r]"),
            '^' | '$' => self.out.push(c),
            '[' => self.class(at)?,
            '\\' => match self.peek() {
                Some('p' | 'P') => self.category(at)?,
                _ => {
                    let c = self.single_escape(at)?;
                    literal(&mut self.out, c);
                }
            },
            '*' | '+' | '?' | '{' => {
                return Err(error(at, format!("`{c}` has nothing to repeat")));
            }
            ']' | '}' => return Err(error(at, format!("`{c}` must be escaped (`\\{c}`)"))),
            _ => literal(&mut self.out, c),
        }
        Ok(())
    }

    /// An optional `*`, `+`, `?` or `{n}`, `{n,}`, `{n,m}` after an atom.
    fn quantifier(&mut self) -> Result<(), IRegexpError> {
        match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.chars.next();
                self.out.push(c);
            }
            Some('{') => {
                let at = self.at();
                self.chars.next();
                let min = self.count(at)?;
                let max = if self.peek() == Some(',') {
                    self.chars.next();
                    if self.peek() == Some('}') {
                        None
                    } else {
                        Some(self.count(at)?)
                    }
                } else {
                    Some(min)
                };
                if self.chars.next().map(|(_, c)| c) != Some('}') {
                    return Err(error(at, "a repetition `{n,m}` needs its closing `}`"));
                }
                if max.is_some_and(|max| max < min) {
                    return Err(error(at, "a repetition's maximum is below its minimum"));
                }
                let _ = match max {
                    Some(max) if max == min => write!(self.out, "{{{min}}}"),
                    Some(max) => write!(self.out, "{{{min},{max}}}"),
                    None => write!(self.out, "{{{min},}}"),
                };
            }
            _ => return Ok(()),
        }
        match self.peek() {
            Some(c @ ('*' | '+' | '?' | '{')) => {
                let at = self.at();
                Err(error(at, format!("`{c}` cannot repeat a repetition")))
            }
            _ => Ok(()),
        }
    }

    fn count(&mut self, at: usize) -> Result<u32, IRegexpError> {
        let mut digits = String::new();
        while let Some(c) = self.peek().filter(char::is_ascii_digit) {
            self.chars.next();
            digits.push(c);
        }
        digits
            .parse()
            .map_err(|_| error(at, "a repetition `{n,m}` needs decimal counts"))
    }

    /// After `\`, not `\p`: one of I-Regexp's single-character escapes.
    fn single_escape(&mut self, at: usize) -> Result<char, IRegexpError> {
        match self.chars.next().map(|(_, c)| c) {
            Some('n') => Ok('\n'),
            Some('r') => Ok('\r'),
            Some('t') => Ok('\t'),
            Some(
                c @ ('(' | ')' | '*' | '+' | '-' | '.' | '?' | '[' | '\\' | ']' | '^' | '{' | '|'
                | '}'),
            ) => Ok(c),
            Some(c) => Err(error(at, format!("`\\{c}` is not an I-Regexp escape"))),
            None => Err(error(at, "the pattern ends with `\\`")),
        }
    }

    /// After `\`: `p{..}` or `P{..}`, a Unicode general category or its complement.
    fn category(&mut self, at: usize) -> Result<(), IRegexpError> {
        let negated = self.chars.next().map(|(_, c)| c) == Some('P');
        if self.chars.next().map(|(_, c)| c) != Some('{') {
            return Err(error(at, "`\\p` needs a category in braces (`\\p{Lu}`)"));
        }
        let mut name = String::new();
        loop {
            match self.chars.next() {
                Some((_, '}')) => break,
                Some((_, c)) if name.len() < 2 => name.push(c),
                _ => return Err(error(at, "`\\p{` needs a category and `}`")),
            }
        }
        if !is_category(&name) {
            return Err(error(
                at,
                format!("`{name}` is not a Unicode general category"),
            ));
        }
        let _ = write!(self.out, r"\{}{{{name}}}", if negated { 'P' } else { 'p' });
        Ok(())
    }

    /// After `[`: `[^]? (- | item) item* -? ]`.
    fn class(&mut self, open: usize) -> Result<(), IRegexpError> {
        self.out.push('[');
        if self.peek() == Some('^') {
            self.chars.next();
            self.out.push('^');
        }
        let mut first = true;
        loop {
            let Some((at, c)) = self.chars.next() else {
                return Err(error(open, "`[` is never closed"));
            };
            match c {
                ']' if !first => break,
                ']' => return Err(error(at, "a character class cannot be empty")),
                '-' if first || self.peek() == Some(']') => literal(&mut self.out, '-'),
                '-' => {
                    return Err(error(
                        at,
                        "`-` inside a class must be first, last or a range",
                    ));
                }
                '[' => return Err(error(at, "`[` inside a class must be escaped (`\\[`)")),
                '\\' if matches!(self.peek(), Some('p' | 'P')) => self.category(at)?,
                _ => {
                    let low = if c == '\\' {
                        self.single_escape(at)?
                    } else {
                        c
                    };
                    literal(&mut self.out, low);
                    self.range_end(low, at)?;
                }
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }

    /// After a class character `low`: `-` and the range's upper end, if a range follows.
    fn range_end(&mut self, low: char, at: usize) -> Result<(), IRegexpError> {
        let mut ahead = self.chars.clone();
        if ahead.next().map(|(_, c)| c) != Some('-') || matches!(ahead.peek(), Some((_, ']'))) {
            return Ok(());
        }
        self.chars.next();
        let high = match self.chars.next() {
            Some((at, '\\')) if !matches!(self.peek(), Some('p' | 'P')) => {
                self.single_escape(at)?
            }
            Some((at, c @ ('-' | '[' | ']' | '\\'))) => {
                return Err(error(at, format!("`{c}` cannot end a range")));
            }
            Some((_, c)) => c,
            None => return Err(error(self.end, "the pattern ends inside a range")),
        };
        if high < low {
            return Err(error(at, format!("the range `{low}-{high}` is reversed")));
        }
        self.out.push('-');
        literal(&mut self.out, high);
        Ok(())
    }
}

/// Appends `c` so that the `regex` crate reads it as itself.
fn literal(out: &mut String, c: char) {
    if c.is_alphanumeric() {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{{{:X}}}", u32::from(c));
    }
}

/// The general categories I-Regexp allows: a major class, or one of its subclasses.
fn is_category(name: &str) -> bool {
    let mut chars = name.chars();
    let subclasses = match chars.next() {
        Some('L') => "lmotu",
        Some('M') => "cen",
        Some('N') => "dlo",
        Some('P') => "cdefios",
        Some('Z') => "lps",
        Some('S') => "ckmo",
        Some('C') => "cfno",
        _ => return false,
    };
    match (chars.next(), chars.next()) {
        (None, _) => true,
        (Some(sub), None) => subclasses.contains(sub),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, s: &str) -> bool {
        Pattern::new(pattern, true).unwrap().is_match(s)
    }

    fn finds(pattern: &str, s: &str) -> bool {
        Pattern::new(pattern, false).unwrap().is_match(s)
    }

    #[test]
    fn match_is_whole_string_and_search_is_anywhere() {
        assert!(matches("a.c", "abc"));
        assert!(!matches("a.c", "xabcx"));
        assert!(finds("a.c", "xabcx"));
        assert!(matches("ab|cd", "cd"));
        assert!(!matches("ab|cd", "abcd"));
    }

    #[test]
    fn dot_matches_any_character_but_line_breaks() {
        assert!(matches(".", "é"));
        assert!(matches(".", "😀"));
        assert!(!matches(".", "\n"));
        assert!(!matches(".", "\r"));
        assert!(matches("[.]", "."));
        assert!(!matches("[.]", "x"));
    }

    #[test]
    fn caret_and_dollar_anchor_outside_classes_only() {
        assert!(finds("^ab", "abc"));
        assert!(!finds("^bc", "abc"));
        assert!(finds("bc$", "abc"));
        assert!(!finds("ab$", "abc"));
        assert!(matches(r"\^a", "^a"));
        assert!(matches("[$^&~#-]+", "$^&~#-"));
        assert!(matches("[a&&b]", "&"));
    }

    #[test]
    fn categories_classes_and_repetitions_translate() {
        assert!(matches(r"\p{Lu}\p{Ll}*", "Ärger"));
        assert!(!matches(r"\p{Lu}", "a"));
        assert!(matches(r"\P{L}", "1"));
        assert!(matches(r"[\p{Nd}x]{2,3}", "1x2"));
        assert!(matches(r"[^a-c]", "d"));
        assert!(matches(r"a{2}", "aa"));
        assert!(matches(r"a{2,}", "aaaa"));
        assert!(matches(r"\(\)\.\*\\", r"().*\"));
        assert!(matches(r"\t\n", "\t\n"));
        assert!(matches(r"[\--/]", "."));
    }

    #[test]
    fn what_is_not_i_regexp_is_refused_with_its_position() {
        for (pattern, at) in [
            (r"\d", 0),
            (r"a\b", 1),
            (r"(a)\1", 3),
            ("(?=a)", 1),
            ("a**", 2),
            ("*a", 0),
            ("a{3,1}", 1),
            ("[]", 1),
            ("[a-]x]", 5),
            ("[z-a]", 1),
            (r"\p{Xx}", 0),
            ("(ab", 0),
            ("ab)", 2),
            ("a{", 1),
        ] {
            let err = Pattern::new(pattern, true).unwrap_err();
            assert_eq!(err.at, at, "{pattern}: {err}");
        }
    }
}
