//! Statements with named parameters, parsed once when the adapter is built.
//!
//! A parameter is written where a value goes and is replaced by the database's placeholder
//! (`$1`, `$2`, … for PostgreSQL, `?` for MySQL/MariaDB and SQLite); its value is bound from
//! the message, never pasted into the SQL:
//!
//! - `:$.symbol`, `:$.order.lines[0].qty`: a JSONPath into the JSON payload, which must select
//!   exactly one value;
//! - `:header.NAME`: the message header `NAME`;
//! - `:name`: the payload's top-level field `name` (short for `:$.name`), which is how the
//!   inbound adapter's done statement names a column of the polled row (`WHERE id = :id`).
//!
//! The scanner knows SQL's string literals, quoted identifiers, comments and PostgreSQL's
//! dollar quotes and `::` casts, so a `:` inside them is left alone. A placeholder written by
//! hand (`?`, `$1`) is refused: every value goes through a named parameter.

use std::ops::Range;

use eip_core::Message;
use jsonpath_rust::parser::model::{JpQuery, Segment, Selector};
use jsonpath_rust::parser::parse_json_path;
use jsonpath_rust::query::js_path_process;
use serde_json::Value;

use super::error::SqlError;
use super::multi_row::MultiRow;
use super::value::SqlValue;

/// The SQL dialects the adapter speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL: `$n` placeholders, `FOR UPDATE SKIP LOCKED`.
    Postgres,
    /// MySQL and MariaDB: `?` placeholders, `FOR UPDATE SKIP LOCKED` from MariaDB 10.6 and
    /// MySQL 8.0.
    MySql,
    /// SQLite: `?` placeholders, no row locks (a claim column instead).
    Sqlite,
}

impl Dialect {
    /// The placeholder of the `n`th (from 1) bound value.
    pub(crate) fn placeholder(self, n: usize) -> String {
        let mut sql = String::new();
        self.push_placeholder(&mut sql, n);
        sql
    }

    /// Appends the placeholder of the `n`th (from 1) bound value to `sql`.
    pub(crate) fn push_placeholder(self, sql: &mut String, n: usize) {
        match self {
            Dialect::Postgres => {
                use std::fmt::Write;
                let _ = write!(sql, "${n}");
            }
            Dialect::MySql | Dialect::Sqlite => sql.push('?'),
        }
    }

    /// The most values one statement binds: PostgreSQL's and MySQL's protocols count them in
    /// 16 bits; SQLite's `SQLITE_MAX_VARIABLE_NUMBER` is 32 766 (the default since 3.32, and
    /// that of the SQLite sqlx bundles).
    pub(crate) fn max_parameters(self) -> usize {
        match self {
            Dialect::Postgres | Dialect::MySql => 65_535,
            Dialect::Sqlite => 32_766,
        }
    }
}

/// Where a parameter's value comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A path of names and indexes only (`$.order.lines[0].qty`), walked without the JSONPath
    /// engine.
    Steps(Vec<Step>),
    Path(Box<JpQuery>),
    Header(String),
    Field(String),
}

#[derive(Debug, Clone)]
enum Step {
    Name(String),
    Index(i64),
}

impl Source {
    /// `query` as steps when it selects at most one value by names and indexes.
    fn of_path(query: JpQuery) -> Source {
        let step = |segment: &Segment| match segment {
            Segment::Selector(Selector::Name(name)) => Some(Step::Name(name.clone())),
            Segment::Selector(Selector::Index(i)) => Some(Step::Index(*i)),
            Segment::Selectors(one) if one.len() == 1 => match &one[0] {
                Selector::Name(name) => Some(Step::Name(name.clone())),
                Selector::Index(i) => Some(Step::Index(*i)),
                _ => None,
            },
            _ => None,
        };
        match query.segments.iter().map(step).collect() {
            Some(steps) => Source::Steps(steps),
            None => Source::Path(Box::new(query)),
        }
    }
}

/// The value `steps` lead to from `root`, as JSONPath selects it (a negative index counts
/// from the end).
fn walk<'v>(root: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    steps.iter().try_fold(root, |value, step| match step {
        Step::Name(name) => value.as_object()?.get(name),
        Step::Index(i) => {
            let array = value.as_array()?;
            let at = if *i < 0 {
                array
                    .len()
                    .checked_sub(usize::try_from(i.unsigned_abs()).ok()?)?
            } else {
                usize::try_from(*i).ok()?
            };
            array.get(at)
        }
    })
}

#[derive(Debug, Clone)]
struct Parameter {
    /// As written, for errors: `:$.symbol`.
    written: String,
    source: Source,
}

/// A statement parsed into the database's SQL and the list of values to bind.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    configured: String,
    sql: String,
    parameters: Vec<Parameter>,
    multi_row: Option<MultiRow>,
}

impl Statement {
    /// Parses `text` for `dialect`.
    pub(crate) fn parse(text: &str, dialect: Dialect) -> Result<Statement, SqlError> {
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
        .run()
    }

    /// The statement as configured.
    pub(crate) fn configured(&self) -> &str {
        &self.configured
    }

    /// The SQL sent to the database.
    pub(crate) fn sql(&self) -> &str {
        &self.sql
    }

    /// How many values it binds.
    pub(crate) fn parameter_count(&self) -> usize {
        self.parameters.len()
    }

    /// The statement for several messages at once, when it is a plain INSERT (see
    /// [`MultiRow`]).
    pub(crate) fn multi_row(&self) -> Option<&MultiRow> {
        self.multi_row.as_ref()
    }

    /// The first header parameter, as written, if any.
    pub(crate) fn header_parameter(&self) -> Option<&str> {
        self.parameters
            .iter()
            .find(|p| matches!(p.source, Source::Header(_)))
            .map(|p| p.written.as_str())
    }

    /// The values to bind for `msg`, in placeholder order.
    pub(crate) fn bind_message(&self, msg: &Message) -> Result<Vec<SqlValue>, SqlError> {
        self.parameters
            .iter()
            .map(|p| match &p.source {
                Source::Header(name) => msg
                    .headers()
                    .get(name)
                    .map(SqlValue::from_header)
                    .ok_or_else(|| self.missing(p)),
                Source::Steps(_) | Source::Path(_) | Source::Field(_) => {
                    let root = msg.json_value().map_err(|e| SqlError::NotJson {
                        statement: self.configured.clone(),
                        parameter: p.written.clone(),
                        reason: e.to_string(),
                    })?;
                    self.value_of(p, root)
                }
            })
            .collect()
    }

    /// The values to bind from a JSON document (a polled row); header parameters find none.
    pub(crate) fn bind_json(&self, root: &Value) -> Result<Vec<SqlValue>, SqlError> {
        self.parameters
            .iter()
            .map(|p| match &p.source {
                Source::Header(_) => Err(self.missing(p)),
                Source::Steps(_) | Source::Path(_) | Source::Field(_) => self.value_of(p, root),
            })
            .collect()
    }

    fn value_of(&self, p: &Parameter, root: &Value) -> Result<SqlValue, SqlError> {
        match &p.source {
            Source::Field(name) => root
                .get(name)
                .map(SqlValue::from_json)
                .ok_or_else(|| self.missing(p)),
            Source::Steps(steps) => walk(root, steps)
                .map(SqlValue::from_json)
                .ok_or_else(|| self.missing(p)),
            Source::Path(query) => {
                let found = js_path_process(query, root).unwrap_or_default();
                match found.as_slice() {
                    [] => Err(self.missing(p)),
                    [one] => Ok(SqlValue::from_json(one.val)),
                    more => Err(SqlError::ManyValues {
                        statement: self.configured.clone(),
                        parameter: p.written.clone(),
                        count: more.len(),
                    }),
                }
            }
            Source::Header(_) => Err(self.missing(p)),
        }
    }

    fn missing(&self, p: &Parameter) -> SqlError {
        SqlError::MissingValue {
            statement: self.configured.clone(),
            parameter: p.written.clone(),
        }
    }
}

struct Scanner<'a> {
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

impl Scanner<'_> {
    fn run(mut self) -> Result<Statement, SqlError> {
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
                let query = parse_json_path(path)
                    .map_err(|e| self.error(i + 1, &format!("JSONPath `{path}`: {e}")))?;
                Ok(self.push(i, end, Source::of_path(query)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str, dialect: Dialect) -> Statement {
        Statement::parse(text, dialect).unwrap()
    }

    #[test]
    fn named_parameters_become_the_dialects_placeholders() {
        let text = "INSERT INTO trades(symbol, qty, trader) VALUES (:$.symbol, :$.quantity, :header.trader-id)";
        let pg = parse(text, Dialect::Postgres);
        assert_eq!(
            pg.sql(),
            "INSERT INTO trades(symbol, qty, trader) VALUES ($1, $2, $3)"
        );
        let my = parse(text, Dialect::MySql);
        assert_eq!(
            my.sql(),
            "INSERT INTO trades(symbol, qty, trader) VALUES (?, ?, ?)"
        );
        let written: Vec<_> = my.parameters.iter().map(|p| p.written.as_str()).collect();
        assert_eq!(written, [":$.symbol", ":$.quantity", ":header.trader-id"]);
    }

    #[test]
    fn colons_in_literals_comments_and_casts_are_not_parameters() {
        let text = "SELECT ':$.no', \"a:b\", $tag$ :$.no $tag$, x::int -- :$.no\n /* :no */ FROM t WHERE id = :id";
        let pg = parse(text, Dialect::Postgres);
        assert_eq!(pg.parameter_count(), 1);
        assert!(pg.sql().ends_with("WHERE id = $1"));
        assert!(pg.sql().contains("x::int"));
    }

    #[test]
    fn paths_with_brackets_and_filters_end_where_the_path_ends() {
        let st = parse(
            "UPDATE t SET a = :$.lines[0]['unit price'], b = :$.x.y::text WHERE c = :$.items[?@.k == 'a b'].v",
            Dialect::Postgres,
        );
        assert_eq!(st.sql(), "UPDATE t SET a = $1, b = $2::text WHERE c = $3");
        let values = st
            .bind_json(&json!({"lines": [{"unit price": 2.5}], "x": {"y": true}, "items": [{"k": "a b", "v": 7}]}))
            .unwrap();
        assert_eq!(
            values,
            [SqlValue::Float(2.5), SqlValue::Bool(true), SqlValue::Int(7)]
        );
    }

    #[test]
    fn placeholders_written_by_hand_are_refused() {
        for (text, dialect) in [
            ("SELECT * FROM t WHERE a = ?", Dialect::MySql),
            ("SELECT * FROM t WHERE a = ?", Dialect::Sqlite),
            ("SELECT * FROM t WHERE a = $1", Dialect::Postgres),
            ("SELECT * FROM t WHERE a = @a", Dialect::Sqlite),
        ] {
            let e = Statement::parse(text, dialect).unwrap_err();
            assert!(
                matches!(e, SqlError::Statement { at: 26, .. }),
                "{text}: {e}"
            );
        }
        // A `?` in a literal is text, and PostgreSQL's `?` is a jsonb operator.
        parse("SELECT '?' FROM t", Dialect::MySql);
        parse("SELECT doc ? 'k' FROM t", Dialect::Postgres);
    }

    #[test]
    fn a_backslash_escapes_a_quote_in_mysql_literals_only() {
        let my = parse(r"SELECT 'it\'s :x' , :y", Dialect::MySql);
        assert_eq!(my.parameter_count(), 1);
        let pg = parse(r"SELECT E'it\'s :x', :y", Dialect::Postgres);
        assert_eq!(pg.parameter_count(), 1);
    }

    #[test]
    fn a_bad_json_path_is_reported_with_its_position() {
        let e = Statement::parse("INSERT INTO t VALUES (:$.a[)", Dialect::Sqlite).unwrap_err();
        assert!(matches!(e, SqlError::Statement { at: 23, .. }), "{e}");
    }

    #[test]
    fn a_missing_value_and_several_values_name_the_parameter() {
        let st = parse("INSERT INTO t VALUES (:$.a, :$.b[*])", Dialect::Sqlite);
        let e = st.bind_json(&json!({"b": [1]})).unwrap_err();
        assert!(e.to_string().contains("`:$.a`"), "{e}");
        let e = st.bind_json(&json!({"a": 1, "b": [1, 2]})).unwrap_err();
        assert!(e.to_string().contains("`:$.b[*]` selects 2 values"), "{e}");
    }

    #[test]
    fn name_and_index_paths_select_what_the_jsonpath_engine_selects() {
        let root = json!({"a": {"b": [10, 20, {"c d": "x"}]}, "n": null});
        for path in [
            "$.a.b[0]",
            "$.a.b[-1]['c d']",
            "$.a.b[-4]",
            "$.a.b[3]",
            "$['a'].b[1]",
            "$.n",
            "$.missing",
            "$.a.b.c",
            "$.a[0]",
        ] {
            let query = parse_json_path(path).unwrap();
            let engine = js_path_process(&query, &root).unwrap_or_default();
            let Source::Steps(steps) = Source::of_path(query) else {
                panic!("{path}: not walked as steps");
            };
            let expected = match engine.as_slice() {
                [] => None,
                [one] => Some(one.val),
                more => panic!("{path}: {} values", more.len()),
            };
            assert_eq!(walk(&root, &steps), expected, "{path}");
        }
        let wildcard = parse_json_path("$.a.b[*]").unwrap();
        assert!(matches!(Source::of_path(wildcard), Source::Path(_)));
    }

    #[test]
    fn a_plain_insert_is_written_for_several_rows() {
        let text = "INSERT INTO \"select\" (a, b) VALUES (:$.a, 'VALUES (:x), SELECT') -- :c\n;";
        let pg = parse(text, Dialect::Postgres);
        let multi = pg.multi_row().unwrap();
        assert_eq!(
            multi.sql(2),
            "INSERT INTO \"select\" (a, b) VALUES ($1, 'VALUES (:x), SELECT'), ($2, 'VALUES (:x), SELECT')"
        );
        for text in [
            "INSERT INTO t (a) VALUES (:$.a) ON CONFLICT (a) DO UPDATE SET a = :$.b",
            "INSERT INTO t (a) SELECT :$.a",
            "UPDATE t SET a = :$.a",
        ] {
            assert!(
                parse(text, Dialect::Postgres).multi_row().is_none(),
                "{text}"
            );
        }
    }

    #[test]
    fn header_and_field_parameters_bind_from_the_message() {
        let st = parse("INSERT INTO t VALUES (:header.n, :id)", Dialect::Sqlite);
        let msg = Message::builder(r#"{"id": "x"}"#).header("n", 3i64).build();
        assert_eq!(
            st.bind_message(&msg).unwrap(),
            [SqlValue::Int(3), SqlValue::Text("x".into())]
        );
    }
}
