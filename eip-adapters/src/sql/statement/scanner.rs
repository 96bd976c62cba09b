//! The scanner of SQL text: it copies the text into the database's SQL, replacing each named
//! parameter by the dialect's placeholder. It knows string literals, quoted identifiers,
//! comments and PostgreSQL's dollar quotes and `::` casts, so a `:` inside them is left
//! alone, and it refuses placeholders written by hand.

use std::ops::Range;

use eip_core::predicate::JsonPath;

use super::parameter::{Parameter, Source};
use super::{Dialect, Statement};
use crate::sql::error::SqlError;
use crate::sql::multi_row::MultiRow;

/// One pass over a statement's text.
pub(super) struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    dialect: Dialect,
    sql: String,
    parameters: Vec<Parameter>,
    /// Where each parameter is in `text`.
    at: Vec<Range<usize>>,
    /// `text` with literals as `'`, quoted identifiers as `_`, comments as spaces and
    /// parameters as `@`, for [`MultiRow`] to read its structure.
    code: Vec<u8>,
    /// Bytes of `text` before this are in `sql` already.
    copied: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub(super) fn new(text: &'a str, dialect: Dialect) -> Scanner<'a> {
        Scanner {
            text,
            b: text.as_bytes(),
            dialect,
            sql: String::with_capacity(text.len()),
            parameters: Vec::new(),
            at: Vec::new(),
            code: text.as_bytes().to_vec(),
            copied: 0,
        }
    }

    /// Scans the whole text into the statement.
    pub(super) fn run(mut self) -> Result<Statement, SqlError> {
        let mut i = 0;
        while i < self.b.len() {
            let parameters = self.parameters.len();
            // What the skipped text reads as in `code`, if it is not code.
            let mut fill = None;
            let next = match self.b[i] {
                b'\'' => {
                    let backslash = self.dialect == Dialect::MySql || self.e_string(i);
                    fill = Some(b'\'');
                    skip_quoted(self.b, i, b'\'', backslash)
                }
                b'"' => {
                    fill = Some(b'_');
                    skip_quoted(self.b, i, b'"', self.dialect == Dialect::MySql)
                }
                b'`' if self.dialect != Dialect::Postgres => {
                    fill = Some(b'_');
                    skip_quoted(self.b, i, b'`', false)
                }
                b'-' if self.b.get(i + 1) == Some(&b'-') => {
                    fill = Some(b' ');
                    self.b[i..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(self.b.len(), |p| i + p + 1)
                }
                b'/' if self.b.get(i + 1) == Some(&b'*') => {
                    fill = Some(b' ');
                    self.text[i + 2..]
                        .find("*/")
                        .map_or(self.b.len(), |p| i + 2 + p + 2)
                }
                b'$' if self.dialect == Dialect::Postgres => {
                    let end = self.dollar(i)?;
                    if end > i + 1 {
                        fill = Some(b'\''); // a dollar-quoted string
                    }
                    end
                }
                b'?' if self.dialect != Dialect::Postgres => {
                    return Err(self.error(
                        i,
                        "a `?` placeholder: name the value (`:$.field`, `:header.NAME`)",
                    ));
                }
                b'$' | b'@'
                    if self.dialect == Dialect::Sqlite
                        && self.b.get(i + 1).is_some_and(|&c| is_ident_start(c)) =>
                {
                    return Err(self.error(
                        i,
                        "a SQLite placeholder: name the value (`:$.field`, `:header.NAME`)",
                    ));
                }
                b':' => self.colon(i)?,
                _ => i + 1,
            };
            if self.parameters.len() > parameters {
                fill = Some(b'@');
                self.at.push(i..next);
            }
            if let Some(fill) = fill {
                self.code[i..next].fill(fill);
            }
            i = next;
        }
        self.sql.push_str(&self.text[self.copied..]);
        Ok(Statement {
            configured: self.text.to_owned(),
            multi_row: MultiRow::of(self.text, &self.code, &self.at, self.dialect),
            sql: self.sql,
            parameters: self.parameters,
        })
    }

    /// Whether the literal at `i` is PostgreSQL's `E'…'`, in which a backslash escapes.
    fn e_string(&self, i: usize) -> bool {
        self.dialect == Dialect::Postgres
            && i >= 1
            && matches!(self.b[i - 1], b'E' | b'e')
            && (i < 2 || !is_ident(self.b[i - 2]))
    }

    /// A `$` in PostgreSQL: a dollar-quoted string is skipped, a `$n` placeholder refused.
    fn dollar(&self, i: usize) -> Result<usize, SqlError> {
        if i > 0 && is_ident(self.b[i - 1]) {
            return Ok(i + 1); // inside an identifier such as `a$b`
        }
        if self.b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return Err(self.error(
                i,
                "a `$n` placeholder: name the value (`:$.field`, `:header.NAME`)",
            ));
        }
        let mut j = i + 1;
        while j < self.b.len() && is_ident(self.b[j]) {
            j += 1;
        }
        if self.b.get(j) != Some(&b'$') {
            return Ok(i + 1);
        }
        let tag = &self.text[i..=j];
        Ok(self.text[j + 1..]
            .find(tag)
            .map_or(self.b.len(), |p| j + 1 + p + tag.len()))
    }

    fn colon(&mut self, i: usize) -> Result<usize, SqlError> {
        match self.b.get(i + 1) {
            Some(b':' | b'=') => Ok(i + 2),
            Some(b'$') => {
                let end = path_end(self.b, i + 1);
                let path = &self.text[i + 1..end];
                let query = JsonPath::parse(path)
                    .map_err(|e| self.error(i + 1, &format!("JSONPath `{path}`: {e}")))?;
                Ok(self.push(i, end, Source::Path(Box::new(query))))
            }
            Some(&c) if is_ident_start(c) => {
                let mut j = i + 1;
                while j < self.b.len() && is_ident(self.b[j]) {
                    j += 1;
                }
                if &self.text[i + 1..j] == "header" && self.b.get(j) == Some(&b'.') {
                    let mut end = j + 1;
                    while end < self.b.len()
                        && (is_ident(self.b[end]) || matches!(self.b[end], b'-' | b'.'))
                    {
                        end += 1;
                    }
                    while end > j + 1 && matches!(self.b[end - 1], b'-' | b'.') {
                        end -= 1;
                    }
                    if end == j + 1 {
                        return Err(self.error(i, "`:header.` without a header name"));
                    }
                    let name = self.text[j + 1..end].to_owned();
                    return Ok(self.push(i, end, Source::Header(name)));
                }
                let name = self.text[i + 1..j].to_owned();
                Ok(self.push(i, j, Source::Field(name)))
            }
            _ => Ok(i + 1),
        }
    }

    /// Replaces `text[start..end]` by the next placeholder.
    fn push(&mut self, start: usize, end: usize, source: Source) -> usize {
        self.sql.push_str(&self.text[self.copied..start]);
        self.parameters.push(Parameter {
            written: self.text[start..end].to_owned(),
            source,
        });
        self.dialect
            .push_placeholder(&mut self.sql, self.parameters.len());
        self.copied = end;
        end
    }

    fn error(&self, at: usize, reason: &str) -> SqlError {
        SqlError::Statement {
            statement: self.text.to_owned(),
            at,
            reason: reason.to_owned(),
        }
    }
}

/// The end of the quoted text starting at `i` (after its closing quote; a doubled quote is
/// one quote character).
fn skip_quoted(b: &[u8], i: usize, quote: u8, backslash: bool) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if backslash => j += 2,
            c if c == quote && b.get(j + 1) == Some(&quote) => j += 2,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The end of a JSONPath starting with the `$` at `i`: names, dots, wildcards and bracketed
/// selectors (whose quotes may hold anything); it stops at a space, comma, parenthesis, colon
/// (a `::` cast) or operator. A trailing dot is not part of it.
fn path_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'[' => {
                let mut depth = 0;
                while j < b.len() {
                    match b[j] {
                        b'\'' | b'"' => {
                            j = skip_quoted(b, j, b[j], true);
                            continue;
                        }
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                j = (j + 1).min(b.len());
            }
            c if is_ident(c) || c == b'.' || c == b'*' => j += 1,
            _ => break,
        }
    }
    while j > i + 1 && b[j - 1] == b'.' {
        j -= 1;
    }
    j
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}
