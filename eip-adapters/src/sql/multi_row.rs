//! Multi-row INSERT: a plain `INSERT … VALUES (…)` statement written for several messages at
//! once, as one statement with one value tuple per message.
//!
//! A statement qualifies when, outside literals, quoted identifiers and comments, it reads
//! `INSERT` [words, dots, one column list] `VALUES (` tuple `)` [tail] [`;`], where every
//! parameter is in the tuple, the tuple is the only one, and neither the tuple, the column list
//! nor the tail holds a `SELECT` (rows of one statement share a snapshot: a subquery reading the
//! table would see less than it does row by row) or a `;`. A tail without parameters, such as
//! `ON CONFLICT DO NOTHING` or `RETURNING id`, is repeated once for the whole statement. Any
//! other statement is run once per message.
//!
//! A statement binds at most the database's limit of parameters (PostgreSQL and MySQL/MariaDB
//! 65 535, SQLite 32 766 in the bundled SQLite 3.46) and is kept under 1 MB of SQL text; more
//! rows than that are split into several statements of the same transaction.

use std::ops::Range;

use super::statement::Dialect;

/// The most SQL text put in one multi-row statement.
const MAX_SQL_BYTES: usize = 1 << 20;

/// A plain INSERT's SQL split around its value tuple, to write it for `n` rows.
#[derive(Debug, Clone)]
pub(crate) struct MultiRow {
    dialect: Dialect,
    /// Everything before the tuple, `VALUES ` included.
    prefix: String,
    /// The tuple's text between its parameters: one more piece than parameters.
    pieces: Vec<String>,
    /// After the tuple, without a final `;`.
    tail: String,
    /// The most rows in one statement.
    max_rows: usize,
}

impl MultiRow {
    /// The template for `text` when it is a plain INSERT; `code` is `text` with literals as
    /// `'`, quoted identifiers as `_`, comments as spaces and parameters as `@` (same length),
    /// and `parameters` where each parameter is in `text`, in order.
    pub(crate) fn of(
        text: &str,
        code: &[u8],
        parameters: &[Range<usize>],
        dialect: Dialect,
    ) -> Option<MultiRow> {
        let layout = layout(code)?;
        let tuple = layout.tuple;
        let mut pieces = Vec::with_capacity(parameters.len() + 1);
        let mut copied = tuple.start;
        for p in parameters {
            pieces.push(text.get(copied..p.start)?.to_owned());
            copied = p.end;
        }
        pieces.push(text.get(copied..tuple.end)?.to_owned());
        let tuple_bytes = pieces.iter().map(String::len).sum::<usize>() + parameters.len() * 6 + 2;
        let by_size = MAX_SQL_BYTES / tuple_bytes.max(1);
        let by_parameters = match parameters.len() {
            0 => usize::MAX,
            n => dialect.max_parameters() / n,
        };
        Some(MultiRow {
            dialect,
            prefix: text.get(..tuple.start)?.to_owned(),
            pieces,
            tail: text.get(tuple.end..layout.end)?.to_owned(),
            max_rows: by_size.min(by_parameters).max(1),
        })
    }

    /// The most rows one statement writes.
    pub(crate) fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// The statement writing `rows` rows, its placeholders numbered row after row.
    pub(crate) fn sql(&self, rows: usize) -> String {
        let per_row = self.pieces.len() - 1;
        let tuple_len: usize = self.pieces.iter().map(String::len).sum::<usize>() + per_row * 6;
        let mut sql =
            String::with_capacity(self.prefix.len() + rows * (tuple_len + 2) + self.tail.len());
        sql.push_str(&self.prefix);
        let mut n = 0;
        for row in 0..rows {
            if row > 0 {
                sql.push_str(", ");
            }
            for (i, piece) in self.pieces.iter().enumerate() {
                sql.push_str(piece);
                if i < per_row {
                    n += 1;
                    self.dialect.push_placeholder(&mut sql, n);
                }
            }
        }
        sql.push_str(&self.tail);
        sql
    }
}

/// Where a plain INSERT's parts are, in bytes of the statement.
#[derive(Debug, PartialEq)]
struct Layout {
    /// The value tuple, parentheses included.
    tuple: Range<usize>,
    /// The end of the statement, before a final `;`.
    end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Word,
    Literal,
    Parameter,
    Punct(u8),
}

/// The tokens of `code`: words, literals, parameters and single punctuation bytes.
fn tokens(code: &[u8]) -> Vec<(Token, Range<usize>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        let run = |class: fn(u8) -> bool| {
            let mut j = i;
            while j < code.len() && class(code[j]) {
                j += 1;
            }
            j
        };
        let (token, end) = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if is_word(c) {
            (Token::Word, run(is_word))
        } else if c == b'\'' {
            (Token::Literal, run(|c| c == b'\''))
        } else if c == b'@' {
            (Token::Parameter, run(|c| c == b'@'))
        } else {
            (Token::Punct(c), i + 1)
        };
        out.push((token, i..end));
        i = end;
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// The layout of `code` if it is a plain INSERT (see the [module](self)).
fn layout(code: &[u8]) -> Option<Layout> {
    let tokens = tokens(code);
    let word = |k: usize, w: &str| {
        tokens.get(k).is_some_and(|(t, r)| {
            *t == Token::Word && code[r.clone()].eq_ignore_ascii_case(w.as_bytes())
        })
    };
    if !word(0, "INSERT") {
        return None;
    }
    // Up to VALUES: names, dots, a column list.
    let mut k = 1;
    let mut column_lists = 0;
    while !word(k, "VALUES") {
        match tokens.get(k)?.0 {
            Token::Word if !word(k, "SELECT") => k += 1,
            Token::Punct(b'.') => k += 1,
            Token::Punct(b'(') if column_lists == 0 => {
                column_lists += 1;
                let close = closing(&tokens, k)?;
                if (k..close).any(|i| tokens[i].0 == Token::Parameter || word(i, "SELECT")) {
                    return None;
                }
                k = close + 1;
            }
            _ => return None,
        }
    }
    k += 1;
    if tokens.get(k)?.0 != Token::Punct(b'(') {
        return None;
    }
    let close = closing(&tokens, k)?;
    if (k..close).any(|i| word(i, "SELECT") || tokens[i].0 == Token::Punct(b';')) {
        return None;
    }
    let tuple = tokens[k].1.start..tokens[close].1.end;
    // The tail: no second tuple, no parameter, no subquery, no second statement.
    let mut end = tuple.end;
    for i in close + 1..tokens.len() {
        match tokens[i].0 {
            Token::Punct(b',') if i == close + 1 => return None,
            Token::Parameter => return None,
            Token::Punct(b';') if i + 1 == tokens.len() => break,
            Token::Punct(b';') => return None,
            Token::Word if word(i, "SELECT") => return None,
            _ => end = tokens[i].1.end,
        }
    }
    Some(Layout { tuple, end })
}

/// The index of the `)` closing the `(` at token `open`.
fn closing(tokens: &[(Token, Range<usize>)], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, (t, _)) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::Punct(b'(') => depth += 1,
            Token::Punct(b')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout_of(code: &str) -> Option<(String, String)> {
        layout(code.as_bytes()).map(|l| (code[l.tuple].to_owned(), code[..l.end].to_owned()))
    }

    #[test]
    fn a_plain_insert_is_split_around_its_tuple() {
        let (tuple, whole) = layout_of("INSERT INTO s.t (a, b) VALUES (@@@, lower(@@)) ;").unwrap();
        assert_eq!(tuple, "(@@@, lower(@@))");
        assert_eq!(whole, "INSERT INTO s.t (a, b) VALUES (@@@, lower(@@))");
        let (_, whole) =
            layout_of("insert into t values (@@) on conflict (a) do nothing returning a").unwrap();
        assert!(whole.ends_with("returning a"), "{whole}");
    }

    #[test]
    fn other_statements_are_not_multi_row() {
        for code in [
            "UPDATE t SET a = @@",
            "INSERT INTO t (a) SELECT @@",
            "INSERT INTO t SELECT 1 UNION VALUES (@@)",
            "INSERT INTO t (a) VALUES (@@), (@@)",
            "INSERT INTO t (a) VALUES ((SELECT max(a) FROM t) + @@)",
            "INSERT INTO t (a) VALUES (@@) ON CONFLICT (a) DO UPDATE SET a = @@",
            "INSERT INTO t (a) VALUES (@@); DELETE FROM t",
            "INSERT INTO t DEFAULT VALUES",
            "WITH x AS (SELECT 1) INSERT INTO t (a) VALUES (@@)",
            "INSERT INTO t (a) VALUES (@@",
        ] {
            assert_eq!(layout_of(code), None, "{code}");
        }
    }

    #[test]
    fn placeholders_are_numbered_row_after_row() {
        let text = "INSERT INTO t (a, b) VALUES (:$.a, :header.b) ON CONFLICT DO NOTHING;";
        let code = "INSERT INTO t (a, b) VALUES (@@@@, @@@@@@@@@) ON CONFLICT DO NOTHING;";
        let params = [29..33, 35..44];
        let pg = MultiRow::of(text, code.as_bytes(), &params, Dialect::Postgres).unwrap();
        assert_eq!(
            pg.sql(2),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) ON CONFLICT DO NOTHING"
        );
        assert_eq!(pg.max_rows(), 65_535 / 2);
        let lite = MultiRow::of(text, code.as_bytes(), &params, Dialect::Sqlite).unwrap();
        assert_eq!(
            lite.sql(1),
            "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT DO NOTHING"
        );
        assert_eq!(lite.max_rows(), 32_766 / 2);
    }
}
