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
//!
//! The pieces: the [`Dialect`] (placeholders and limits), the `scanner` of SQL text, and
//! the named `parameter`s with where each finds its value.

mod dialect;
mod parameter;
mod scanner;

use eip_core::Message;
use serde_json::Value;

use super::error::SqlError;
use super::multi_row::MultiRow;
use super::value::SqlValue;
pub use dialect::Dialect;
use parameter::{Parameter, Source};
use scanner::Scanner;

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
    /// Parses `text` for `dialect`.
    pub(crate) fn parse(text: &str, dialect: Dialect) -> Result<Statement, SqlError> {
        Scanner::new(text, dialect).run()
    }

    /// The statement as configured.
    pub(crate) fn configured(&self) -> &str {
        &self.configured
    }

    /// The SQL sent to the database.
    pub(crate) fn sql(&self) -> &str {
        &self.sql
    }

    /// Each parameter as written (`:id`, `:$.customer.id`), in placeholder order.
    pub(crate) fn parameter_names(&self) -> impl Iterator<Item = &str> {
        self.parameters.iter().map(|p| p.written.as_str())
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
                Source::Path(_) | Source::Field(_) => {
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
                Source::Path(_) | Source::Field(_) => self.value_of(p, root),
            })
            .collect()
    }

    fn value_of(&self, p: &Parameter, root: &Value) -> Result<SqlValue, SqlError> {
        match &p.source {
            Source::Field(name) => root
                .get(name)
                .map(SqlValue::from_json)
                .ok_or_else(|| self.missing(p)),
            Source::Path(query) => {
                let found = query.select(root);
                match found.as_slice() {
                    [] => Err(self.missing(p)),
                    [one] => Ok(SqlValue::from_json(one)),
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

    /// Parameters are read with eip's own RFC 9535 engine, the one predicates use.
    #[test]
    fn paths_read_as_rfc_9535_says() {
        let st = parse(
            "INSERT INTO t VALUES (:$.lines[-1].qty, :$.lines[?match(@.sku, 'A-[0-9]+')].qty, :$['odd key'])",
            Dialect::Postgres,
        );
        let doc = json!({
            "lines": [{"sku": "B-1", "qty": 1}, {"sku": "A-12", "qty": 2}, {"sku": "A-1x", "qty": 3}],
            "odd key": "x"
        });
        assert_eq!(
            st.bind_json(&doc).unwrap(),
            [
                SqlValue::Int(3),
                SqlValue::Int(2),
                SqlValue::Text("x".to_owned())
            ]
        );
        let e = Statement::parse("SELECT :$[?length(@.*) < 3]", Dialect::Postgres).unwrap_err();
        assert!(e.to_string().contains("length"), "{e}");
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
