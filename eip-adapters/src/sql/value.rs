//! Values between messages and databases: what a JSON value or a header is bound as, and what
//! a column becomes in a row's JSON object.
//!
//! Bound: a JSON string as text, an integer as a 64-bit integer, any other number as a double,
//! a boolean as a boolean, `null` as SQL `NULL`, an object or array as its JSON text. Headers
//! bind by their type (bytes as a blob). PostgreSQL's `NULL` is sent without a type, so the
//! server takes the column's.
//!
//! Read: integers, floats, booleans, text and `NULL` map to their JSON kinds; PostgreSQL and
//! MySQL `JSON`/`JSONB` columns to the JSON they hold; MySQL `DECIMAL` to its text. Other types
//! (dates, blobs, PostgreSQL `NUMERIC`) are an error naming the column: cast them in the query.

use eip_core::message::HeaderValue;
use serde_json::{Map, Number, Value};
use sqlx::mysql::{MySql, MySqlRow};
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgRow, PgTypeInfo, Postgres};
use sqlx::query::Query;
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{Column, Database, Row, TypeInfo, ValueRef};

use super::error::SqlError;

/// A value to bind to a placeholder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl SqlValue {
    pub(crate) fn from_json(value: &Value) -> SqlValue {
        match value {
            Value::Null => SqlValue::Null,
            Value::Bool(b) => SqlValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => SqlValue::Int(i),
                None => SqlValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => SqlValue::Text(s.clone()),
            Value::Array(_) | Value::Object(_) => SqlValue::Text(value.to_string()),
        }
    }

    /// The value as SQL writes it, for people: `NULL`, `42`, `'O''Brien'`, `<3 bytes>`.
    pub(crate) fn shown(&self) -> String {
        match self {
            SqlValue::Null => "NULL".to_owned(),
            SqlValue::Bool(b) => b.to_string(),
            SqlValue::Int(i) => i.to_string(),
            SqlValue::Float(x) => x.to_string(),
            SqlValue::Text(s) => format!("'{}'", s.replace('\'', "''")),
            SqlValue::Bytes(b) => format!("<{} bytes>", b.len()),
        }
    }

    pub(crate) fn from_header(value: &HeaderValue) -> SqlValue {
        match value {
            HeaderValue::Str(s) => SqlValue::Text(s.clone()),
            HeaderValue::Int(i) => SqlValue::Int(*i),
            HeaderValue::Float(x) => SqlValue::Float(*x),
            HeaderValue::Bool(b) => SqlValue::Bool(*b),
            HeaderValue::Bytes(b) => SqlValue::Bytes(b.to_vec()),
        }
    }
}

/// What each database needs done its own way.
pub(crate) trait Backend: Database {
    /// `query` with `value` bound to its next placeholder.
    fn bind<'q>(
        query: Query<'q, Self, <Self as Database>::Arguments<'q>>,
        value: &'q SqlValue,
    ) -> Query<'q, Self, <Self as Database>::Arguments<'q>>;

    /// A row as a JSON object, column name → value.
    fn row_json(row: &Self::Row) -> Result<Value, SqlError>;
}

/// `query` with every value bound, in order.
pub(crate) fn bind_all<'q, DB: Backend>(
    mut query: Query<'q, DB, <DB as Database>::Arguments<'q>>,
    values: &'q [SqlValue],
) -> Query<'q, DB, <DB as Database>::Arguments<'q>> {
    for value in values {
        query = DB::bind(query, value);
    }
    query
}

macro_rules! bind_common {
    ($query:expr, $value:expr, $null:expr) => {
        match $value {
            SqlValue::Null => $query.bind($null),
            SqlValue::Bool(b) => $query.bind(*b),
            SqlValue::Int(i) => $query.bind(*i),
            SqlValue::Float(x) => $query.bind(*x),
            SqlValue::Text(s) => $query.bind(s.as_str()),
            SqlValue::Bytes(b) => $query.bind(b.as_slice()),
        }
    };
}

/// PostgreSQL's untyped `NULL`: parameter type 0 lets the server infer it from the column.
struct PgNull;

impl sqlx::Type<Postgres> for PgNull {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(0))
    }
}

impl sqlx::Encode<'_, Postgres> for PgNull {
    fn encode_by_ref(
        &self,
        _: &mut PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        Ok(sqlx::encode::IsNull::Yes)
    }
}

impl Backend for Postgres {
    fn bind<'q>(
        query: Query<'q, Self, <Self as Database>::Arguments<'q>>,
        value: &'q SqlValue,
    ) -> Query<'q, Self, <Self as Database>::Arguments<'q>> {
        bind_common!(query, value, PgNull)
    }

    fn row_json(row: &PgRow) -> Result<Value, SqlError> {
        row_json(row, |row, i, type_name| {
            Ok(Some(match type_name {
                "BOOL" => Value::Bool(row.try_get(i)?),
                "INT2" => Value::from(row.try_get::<i16, _>(i)?),
                "INT4" => Value::from(row.try_get::<i32, _>(i)?),
                "INT8" => Value::from(row.try_get::<i64, _>(i)?),
                "FLOAT4" => float(f64::from(row.try_get::<f32, _>(i)?)),
                "FLOAT8" => float(row.try_get(i)?),
                "TEXT" | "VARCHAR" | "BPCHAR" | "CHAR" | "NAME" => Value::String(row.try_get(i)?),
                "JSON" | "JSONB" => row.try_get(i)?,
                _ => return Ok(None),
            }))
        })
    }
}

impl Backend for MySql {
    fn bind<'q>(
        query: Query<'q, Self, <Self as Database>::Arguments<'q>>,
        value: &'q SqlValue,
    ) -> Query<'q, Self, <Self as Database>::Arguments<'q>> {
        bind_common!(query, value, None::<&str>)
    }

    fn row_json(row: &MySqlRow) -> Result<Value, SqlError> {
        row_json(row, |row, i, type_name| {
            Ok(Some(match type_name {
                "BOOLEAN" => Value::Bool(row.try_get(i)?),
                "TINYINT" | "SMALLINT" | "INT" | "MEDIUMINT" | "BIGINT" => {
                    Value::from(row.try_get::<i64, _>(i)?)
                }
                t if t.ends_with(" UNSIGNED") => Value::from(row.try_get::<u64, _>(i)?),
                "FLOAT" | "DOUBLE" => float(row.try_get(i)?),
                "CHAR" | "VARCHAR" | "TINYTEXT" | "TEXT" | "MEDIUMTEXT" | "LONGTEXT" | "ENUM" => {
                    Value::String(row.try_get(i)?)
                }
                "JSON" => row.try_get(i)?,
                // Sent as its decimal text by the server.
                "DECIMAL" => Value::String(row.try_get_unchecked(i)?),
                _ => return Ok(None),
            }))
        })
    }
}

impl Backend for Sqlite {
    fn bind<'q>(
        query: Query<'q, Self, <Self as Database>::Arguments<'q>>,
        value: &'q SqlValue,
    ) -> Query<'q, Self, <Self as Database>::Arguments<'q>> {
        bind_common!(query, value, None::<&str>)
    }

    fn row_json(row: &SqliteRow) -> Result<Value, SqlError> {
        // A SQLite value's type is its storage class, whatever the column was declared.
        row_json(row, |row, i, type_name| {
            Ok(Some(match type_name {
                "INTEGER" => Value::from(row.try_get::<i64, _>(i)?),
                "REAL" => float(row.try_get(i)?),
                "TEXT" => Value::String(row.try_get(i)?),
                _ => return Ok(None),
            }))
        })
    }
}

fn float(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The row as a JSON object; `read` turns column `i` of the named type into JSON, or `None`
/// for a type it does not read.
fn row_json<R>(
    row: &R,
    read: impl Fn(&R, usize, &str) -> Result<Option<Value>, sqlx::Error>,
) -> Result<Value, SqlError>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
{
    let mut object = Map::with_capacity(row.columns().len());
    for column in row.columns() {
        let i = column.ordinal();
        let failed = |e: sqlx::Error| SqlError::ColumnType {
            column: column.name().to_owned(),
            type_name: e.to_string(),
        };
        let raw = row.try_get_raw(i).map_err(failed)?;
        let value = if raw.is_null() {
            Value::Null
        } else {
            let type_name = raw.type_info().name().to_owned();
            drop(raw);
            read(row, i, &type_name)
                .map_err(failed)?
                .ok_or_else(|| SqlError::ColumnType {
                    column: column.name().to_owned(),
                    type_name,
                })?
        };
        object.insert(column.name().to_owned(), value);
    }
    Ok(Value::Object(object))
}
