//! The tokenizer: splits a predicate into words, operators, literals and JSONPath operands.
//!
//! A JSONPath starts at `$` and runs to the first white space, `)`, `,` or comparison character
//! outside brackets and quotes; inside `[...]` (and the parentheses of a filter) anything goes,
//! operators and white space included, so `$.items[?@.price > 10 && @.kind == 'x']` is one
//! token. White space followed by `.` or `[` continues the path, as RFC 9535 allows between
//! segments.

use super::error::{PredicateError, PredicateErrorKind};
use super::eval::{CmpOp, Number};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok<'a> {
    LParen,
    RParen,
    Cmp(CmpOp),
    /// `=~`
    RegexMatch,
    /// A keyword or other identifier.
    Word(&'a str),
    /// A quoted string: `text` with its escapes applied (or why they can not be), and `raw`,
    /// the characters between the quotes as written (what a regex gets).
    Str {
        text: Result<String, PredicateError>,
        raw: &'a str,
    },
    Num(Number),
    Path(&'a str),
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token<'a> {
    pub(super) tok: Tok<'a>,
    /// Byte offsets into the expression.
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Splits `source` into tokens, ending with [`Tok::End`].
pub(super) fn tokenize(source: &str) -> Result<Vec<Token<'_>>, PredicateError> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let tok = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'(' => {
                i += 1;
                Tok::LParen
            }
            b')' => {
                i += 1;
                Tok::RParen
            }
            b'=' | b'!' | b'<' | b'>' | b'&' | b'|' => {
                let (tok, len) = operator(source, start)?;
                i += len;
                tok
            }
            b'"' | b'\'' => {
                let len = string_len(source, start)?;
                i += len;
                Tok::Str {
                    text: unescape(source, start, len),
                    raw: &source[start + 1..i - 1],
                }
            }
            b'-' | b'0'..=b'9' => {
                let (num, len) = number(source, start)?;
                i += len;
                Tok::Num(num)
            }
            b'$' => {
                let len = path(source, start)?;
                i += len;
                Tok::Path(&source[start..i])
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                Tok::Word(&source[start..i])
            }
            b'@' => {
                return Err(PredicateError::unexpected(
                    start,
                    "a JSONPath starting with `$` (`@` is only valid inside a filter)",
                    "`@`",
                ));
            }
            _ => {
                let ch = source[start..].chars().next().unwrap_or('?');
                return Err(PredicateError::unexpected(
                    start,
                    "an expression",
                    &format!("`{ch}`"),
                ));
            }
        };
        tokens.push(Token { tok, start, end: i });
    }
    tokens.push(Token {
        tok: Tok::End,
        start: source.len(),
        end: source.len(),
    });
    Ok(tokens)
}

fn operator(source: &str, start: usize) -> Result<(Tok<'static>, usize), PredicateError> {
    let two = source.get(start..start + 2).unwrap_or("");
    let one = &source[start..start + 1];
    let tok = match two {
        "==" => return Ok((Tok::Cmp(CmpOp::Eq), 2)),
        "!=" => return Ok((Tok::Cmp(CmpOp::Ne), 2)),
        "<=" => return Ok((Tok::Cmp(CmpOp::Le), 2)),
        ">=" => return Ok((Tok::Cmp(CmpOp::Ge), 2)),
        "=~" => return Ok((Tok::RegexMatch, 2)),
        "&&" => ("`and`", "`&&`"),
        "||" => ("`or`", "`||`"),
        _ => match one {
            "<" => return Ok((Tok::Cmp(CmpOp::Lt), 1)),
            ">" => return Ok((Tok::Cmp(CmpOp::Gt), 1)),
            "=" => ("`==` or `=~`", "`=`"),
            "!" => ("`not` (or `!=`)", "`!`"),
            _ => ("an expression", one),
        },
    };
    Err(PredicateError::unexpected(start, tok.0, tok.1))
}

/// The length in bytes of the quoted string at `start`, quotes included: a backslash takes the
/// next character with it, so `\"` does not close a `"` string.
fn string_len(source: &str, start: usize) -> Result<usize, PredicateError> {
    let b = source.as_bytes();
    let quote = b[start];
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return Ok(i + 1 - start),
            _ => i += 1,
        }
    }
    Err(PredicateError::new(
        start,
        PredicateErrorKind::UnterminatedString,
    ))
}

/// The text of the quoted string of `len` bytes at `start`, with JSON-style escapes applied
/// (`\'` too).
fn unescape(source: &str, start: usize, len: usize) -> Result<String, PredicateError> {
    let rest = &source[start..start + len - 1];
    let mut chars = rest.char_indices();
    chars.next();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                let bad = || {
                    PredicateError::new(
                        start + i,
                        PredicateErrorKind::InvalidEscape(format!("\\{e}")),
                    )
                };
                match e {
                    '"' | '\'' | '\\' | '/' => out.push(e),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'u' => {
                        let high = hex4(rest, i + 2).ok_or_else(bad)?;
                        let mut taken = 4;
                        let code = if (0xD800..0xDC00).contains(&high) {
                            let low = rest
                                .get(i + 6..i + 8)
                                .filter(|s| *s == "\\u")
                                .and_then(|_| hex4(rest, i + 8))
                                .filter(|low| (0xDC00..0xE000).contains(low))
                                .ok_or_else(bad)?;
                            taken += 6;
                            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            high
                        };
                        out.push(char::from_u32(code).ok_or_else(bad)?);
                        for _ in 0..taken {
                            chars.next();
                        }
                    }
                    _ => return Err(bad()),
                }
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

fn hex4(s: &str, at: usize) -> Option<u32> {
    let digits = s.get(at..at + 4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// `-?digits(.digits)?([eE][+-]?digits)?`: an integer if it has neither fraction nor exponent
/// and fits an `i64`, a float otherwise.
fn number(source: &str, start: usize) -> Result<(Number, usize), PredicateError> {
    let b = source.as_bytes();
    let digits = |mut i: usize| {
        let from = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, i > from)
    };
    let mut i = start;
    if b[i] == b'-' {
        i += 1;
    }
    let (after, any) = digits(i);
    if !any {
        return Err(PredicateError::unexpected(
            start,
            "a number after `-`",
            &format!("`{}`", &source[start..after.max(start + 1)]),
        ));
    }
    i = after;
    let mut integral = true;
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        integral = false;
        i = digits(i + 1).0;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let (after, any) = digits(j);
        if any {
            integral = false;
            i = after;
        }
    }
    let text = &source[start..i];
    let invalid = || PredicateError::new(start, PredicateErrorKind::InvalidNumber(text.into()));
    let num = match text.parse::<i64>() {
        Ok(n) if integral => Number::Int(n),
        _ => match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Number::Float(f),
            _ => return Err(invalid()),
        },
    };
    Ok((num, i - start))
}

/// The length of the JSONPath starting at `start` (a `$`).
fn path(source: &str, start: usize) -> Result<usize, PredicateError> {
    let b = source.as_bytes();
    // Openers not yet closed, with their offsets, for the error if one never is.
    let mut open: Vec<(u8, usize)> = Vec::new();
    let mut quote: Option<(u8, usize)> = None;
    let mut i = start + 1;
    while i < b.len() {
        let c = b[i];
        if let Some((q, _)) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' => quote = Some((c, i)),
            b'[' | b'(' => open.push((c, i)),
            b']' | b')' => match open.pop() {
                Some((b'[', _)) if c == b']' => {}
                Some((b'(', _)) if c == b')' => {}
                Some((opener, at)) => {
                    return Err(PredicateError::new(
                        at,
                        PredicateErrorKind::Unclosed(char::from(opener)),
                    ));
                }
                // A `)` closing the group or `exists(` around the path; a stray `]` is left
                // for the JSONPath parser to report.
                None if c == b')' => break,
                None => {}
            },
            b' ' | b'\t' | b'\r' | b'\n' if open.is_empty() => {
                let mut j = i;
                while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\r' | b'\n') {
                    j += 1;
                }
                if j < b.len() && matches!(b[j], b'.' | b'[') {
                    i = j;
                    continue;
                }
                break;
            }
            b'=' | b'!' | b'<' | b'>' | b'&' | b'|' | b',' if open.is_empty() => break,
            _ => {}
        }
        i += 1;
    }
    if let Some((_, at)) = quote {
        return Err(PredicateError::new(
            at,
            PredicateErrorKind::UnterminatedString,
        ));
    }
    if let Some(&(c, at)) = open.last() {
        return Err(PredicateError::new(
            at,
            PredicateErrorKind::Unclosed(char::from(c)),
        ));
    }
    Ok(i.min(b.len()) - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok<'_>> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn a_jsonpath_keeps_operators_and_spaces_inside_its_brackets() {
        let src = r#"$.items[?@.price > 10 && @.kind == 'a b)'].id == "x""#;
        let toks = tokenize(src).unwrap();
        assert_eq!(
            toks[0].tok,
            Tok::Path(r#"$.items[?@.price > 10 && @.kind == 'a b)'].id"#)
        );
        assert_eq!(toks[1].tok, Tok::Cmp(CmpOp::Eq));
        assert!(matches!(&toks[2].tok, Tok::Str { text: Ok(t), raw: "x" } if t == "x"));
    }

    #[test]
    fn a_jsonpath_ends_at_a_closing_paren_or_an_operator() {
        assert_eq!(
            kinds("exists($.a.b)"),
            vec![
                Tok::Word("exists"),
                Tok::LParen,
                Tok::Path("$.a.b"),
                Tok::RParen,
                Tok::End
            ]
        );
        assert_eq!(
            kinds("$.price>=100"),
            vec![
                Tok::Path("$.price"),
                Tok::Cmp(CmpOp::Ge),
                Tok::Num(Number::Int(100)),
                Tok::End
            ]
        );
    }

    #[test]
    fn white_space_between_segments_continues_the_path() {
        assert_eq!(
            kinds("$.a [0] .b and true"),
            vec![
                Tok::Path("$.a [0] .b"),
                Tok::Word("and"),
                Tok::Word("true"),
                Tok::End
            ]
        );
    }

    fn text(s: &str) -> Result<String, usize> {
        match &tokenize(s).unwrap()[0].tok {
            Tok::Str { text, .. } => text.clone().map_err(|e| e.offset),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn strings_unescape_and_keep_their_raw_form() {
        assert_eq!(text(r#"'it\'s'"#), Ok("it's".into()));
        assert_eq!(
            text(r#""a\"b\\c\u00e9\ud83d\ude00""#),
            Ok("a\"b\\cé😀".into())
        );
        assert_eq!(text(r#""\n\t\/""#), Ok("\n\t/".into()));
        assert_eq!(text(r#"'\q'"#), Err(1));
        assert_eq!(text(r#"'\ud800'"#), Err(1));
        assert_eq!(text(r#"'\u12'"#), Err(1));
        let toks = tokenize(r#""^a\.b\"" x"#).unwrap();
        assert!(matches!(
            toks[0].tok,
            Tok::Str {
                raw: r#"^a\.b\""#,
                ..
            }
        ));
    }

    #[test]
    fn numbers_are_integers_or_floats() {
        assert_eq!(
            kinds("-5 2.5 1e3 99999999999999999999"),
            vec![
                Tok::Num(Number::Int(-5)),
                Tok::Num(Number::Float(2.5)),
                Tok::Num(Number::Float(1000.0)),
                Tok::Num(Number::Float(1e20)),
                Tok::End
            ]
        );
        let err = tokenize("$.a < 1e999").unwrap_err();
        assert_eq!(err.offset, 6);
    }

    #[test]
    fn lexical_errors_point_at_their_byte() {
        assert_eq!(tokenize("$.a == 'x").unwrap_err().offset, 7);
        assert_eq!(tokenize("$.a[?@.b == 'x").unwrap_err().offset, 12);
        assert_eq!(tokenize("exists($.a[0)").unwrap_err().offset, 10);
        assert_eq!(tokenize("$.a && $.b").unwrap_err().offset, 4);
        assert_eq!(tokenize("$.a = 1").unwrap_err().offset, 4);
        assert_eq!(tokenize("@.a").unwrap_err().offset, 0);
        assert_eq!(tokenize(r#"'a\'"#).unwrap_err().offset, 0);
        assert_eq!(tokenize("- 1").unwrap_err().offset, 0);
        assert_eq!(tokenize("é").unwrap_err().offset, 0);
    }
}
