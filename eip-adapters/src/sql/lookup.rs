//! SQL lookups: a query run for a message, whose rows are used to enrich it (EIP's Content
//! Enricher).
//!
//! An [`SqlLookup`] runs one parameterized query (parsed once, with the named parameters of
//! the [module](super): `:name`, `:$.path`, `:header.NAME`) and gives its rows as JSON
//! objects, column name → value, read as the inbound adapter reads a row. The values come
//! from a JSON document ([`bind`](SqlLookup::bind): `:name` is its field `name`), or from the
//! message itself ([`bind_message`](SqlLookup::bind_message)), and are always bound, never
//! pasted into the SQL. Binding is apart from running so that a cache can key an answer by the
//! values bound ([`BoundQuery::key`]) before it asks the database.
//!
//! The pool is opened at the first query ([`SqlLookup::new`] is not async, so a route can be
//! built without the database), and the `setup` statements run on it then: a database that
//! can not be reached, or a setup statement that fails, fails that query, and the next query
//! tries again.

use eip_core::Message;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::connection::{Connection, Pool, on_pool};
use super::error::SqlError;
use super::statement::{Dialect, Statement};
use super::value::{Backend, SqlValue, bind_all};

/// Which rows a lookup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rows {
    /// The first row only (the query's `ORDER BY` says which), or none.
    #[default]
    First,
    /// Every row, in the query's order.
    All,
}

/// A lookup's settings: plain data, as a flow file would hold them.
#[derive(Debug, Clone)]
pub struct SqlLookupConfig {
    /// The database.
    pub connection: Connection,
    /// The query, with named parameters.
    pub query: String,
    /// Which rows it reads.
    pub rows: Rows,
    /// Statements run as written, in order, once the pool is open and before the first query
    /// (typically `CREATE TABLE IF NOT EXISTS …`); the operator's, never a message's.
    pub setup: Vec<String>,
}

/// A query whose values are bound, ready to run.
#[derive(Debug, Clone)]
pub struct BoundQuery {
    values: Vec<SqlValue>,
}

impl BoundQuery {
    /// The values bound, as text that differs whenever they do: a cache key.
    pub fn key(&self) -> String {
        format!("{:?}", self.values)
    }
}

/// Runs a query for each message; see the [module](self). Cheap to clone: clones share the
/// pool.
#[derive(Debug, Clone)]
pub struct SqlLookup {
    inner: std::sync::Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    connection: Connection,
    statement: Statement,
    rows: Rows,
    setup: Vec<String>,
    pool: OnceCell<Pool>,
}

/// The dialect a connection string names, as far as its scheme tells (a string that is an
/// environment variable tells nothing: PostgreSQL is assumed until it connects).
pub fn dialect_of(url: &str) -> Dialect {
    match url.split(':').next().unwrap_or_default() {
        "mysql" | "mariadb" => Dialect::MySql,
        "sqlite" => Dialect::Sqlite,
        _ => Dialect::Postgres,
    }
}

/// Checks `query` for `dialect` before any database is reached: that it parses and, when its
/// values will come from a document with the fields `fields` ([`SqlLookup::bind`]), that
/// every parameter finds one there. The error names the parameter, or the byte where the
/// query is wrong.
pub fn check_query(query: &str, dialect: Dialect, fields: Option<&[&str]>) -> Result<(), SqlError> {
    let statement = Statement::parse(query, dialect)?;
    if let Some(fields) = fields {
        let document: serde_json::Map<String, Value> = fields
            .iter()
            .map(|name| ((*name).to_owned(), Value::Null))
            .collect();
        statement.bind_json(&Value::Object(document))?;
    }
    Ok(())
}

impl SqlLookup {
    /// A lookup for `config`; the query is parsed (for the dialect the connection string's
    /// scheme names) but no connection is made yet.
    pub fn new(config: SqlLookupConfig) -> Result<SqlLookup, SqlError> {
        let statement = Statement::parse(&config.query, dialect_of(&config.connection.url))?;
        Ok(SqlLookup {
            inner: std::sync::Arc::new(Inner {
                connection: config.connection,
                statement,
                rows: config.rows,
                setup: config.setup,
                pool: OnceCell::new(),
            }),
        })
    }

    /// The same lookup with a pool of its own, not opened yet (for another running flow).
    pub fn fresh(&self) -> SqlLookup {
        let inner = &*self.inner;
        SqlLookup {
            inner: std::sync::Arc::new(Inner {
                connection: inner.connection.clone(),
                statement: inner.statement.clone(),
                rows: inner.rows,
                setup: inner.setup.clone(),
                pool: OnceCell::new(),
            }),
        }
    }

    /// The query as configured.
    pub fn query(&self) -> &str {
        self.inner.statement.configured()
    }

    /// The values `bound` holds, each after its parameter as the query writes it, for
    /// people (a dry run): ``:id = 42, :$.name = 'Ada'``.
    pub fn show(&self, bound: &BoundQuery) -> String {
        let names = self.inner.statement.parameter_names();
        let pairs: Vec<String> = names
            .zip(&bound.values)
            .map(|(name, value)| format!("{name} = {}", value.shown()))
            .collect();
        pairs.join(", ")
    }

    /// The query's values from `document`: `:name` is its field `name`, `:$.path` a path
    /// into it; a `:header.NAME` parameter finds nothing.
    pub fn bind(&self, document: &Value) -> Result<BoundQuery, SqlError> {
        Ok(BoundQuery {
            values: self.inner.statement.bind_json(document)?,
        })
    }

    /// The query's values from `message`, as the outbound adapter binds them.
    pub fn bind_message(&self, message: &Message) -> Result<BoundQuery, SqlError> {
        Ok(BoundQuery {
            values: self.inner.statement.bind_message(message)?,
        })
    }

    /// Runs the query: its rows as JSON objects (at most one with [`Rows::First`]).
    pub async fn run(&self, query: &BoundQuery) -> Result<Vec<Value>, SqlError> {
        let inner = &*self.inner;
        let pool = inner
            .pool
            .get_or_try_init(|| async {
                let pool = inner.connection.connect().await?;
                if pool.dialect() != dialect_of(&inner.connection.url) {
                    // A `${VARIABLE}` URL that named another database: parse for it.
                    return Err(SqlError::Config(format!(
                        "the connection string `{}` names another database than its scheme",
                        inner.connection.redacted_url()
                    )));
                }
                for statement in &inner.setup {
                    let done = on_pool!(&pool, p, _Db => sqlx::raw_sql(statement).execute(p).await.map(drop));
                    done.map_err(|source| SqlError::Execute {
                        statement: statement.clone(),
                        source,
                    })?;
                }
                Ok::<Pool, SqlError>(pool)
            })
            .await?;
        let sql = inner.statement.sql();
        let failed = |source| SqlError::Execute {
            statement: inner.statement.configured().to_owned(),
            source,
        };
        on_pool!(pool, pool, Db => {
            let query = bind_all(sqlx::query::<Db>(sql), &query.values);
            match inner.rows {
                Rows::First => match query.fetch_optional(pool).await.map_err(failed)? {
                    Some(row) => Ok(vec![<Db as Backend>::row_json(&row)?]),
                    None => Ok(Vec::new()),
                },
                Rows::All => {
                    let rows = query.fetch_all(pool).await.map_err(failed)?;
                    rows.iter().map(<Db as Backend>::row_json).collect()
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_query_is_checked_against_the_fields_it_binds_and_bound_from_them() {
        let query = "select name from customers where id = :id and tier = :$.tier.name";
        check_query(query, Dialect::Postgres, None).unwrap();
        let e = check_query(query, Dialect::Postgres, Some(&["id"])).unwrap_err();
        assert!(e.to_string().contains("`:$.tier.name`"), "{e}");
        check_query(
            "select 1 where :id = :k",
            Dialect::Postgres,
            Some(&["id", "k"]),
        )
        .unwrap();
        let lookup = SqlLookup::new(SqlLookupConfig {
            connection: Connection::new("postgres://127.0.0.1/test"),
            query: query.into(),
            rows: Rows::First,
            setup: Vec::new(),
        })
        .unwrap();
        let bound = lookup
            .bind(&json!({"id": 7, "tier": {"name": "gold"}}))
            .unwrap();
        assert_eq!(bound.key(), r#"[Int(7), Text("gold")]"#);
        let e = lookup.bind(&json!({"tier": {"name": "x"}})).unwrap_err();
        assert!(e.to_string().contains("`:id`"), "{e}");
    }

    #[test]
    fn a_query_that_does_not_parse_says_where() {
        let e = check_query("select * from t where a = ?", Dialect::MySql, None).unwrap_err();
        assert!(matches!(e, SqlError::Statement { at: 26, .. }), "{e}");
        assert_eq!(dialect_of("mariadb://h/d"), Dialect::MySql);
        assert_eq!(dialect_of("${DB_URL}"), Dialect::Postgres);
    }
}
