//! `enrich: {sql: ...}`: the lookup is a query with named parameters. The database is named
//! as `sql-in` and `sql-out` name it (`url`, `password-env`, `max-connections`,
//! `connect-timeout`); `query` is the query; `params` (optional) computes its values by jq;
//! `rows: first` (the default) or `all` says what `$answer` holds; `setup` statements run once
//! when the pool opens, at the first lookup, as the adapters' `setup` does.
//!
//! With `params: {id: '.customer_id'}`, `:id` in the query is the value of that jq program
//! over the message; every parameter of the query must be one of `params`, which `eip
//! validate` checks. Without `params`, the query binds from the message as `sql-out` does
//! (`:$.customer.id`, `:header.NAME`, `:field`).

use eip_adapters::sql::SqlError;
use eip_adapters::sql::lookup::{Rows, SqlLookup, SqlLookupConfig, check_query, dialect_of};
use eip_core::message::Message;
use eip_steps::expr::Jq;
use serde_json::{Map, Value};
use tower::BoxError;

use super::{Answer, Request};
use crate::diagnostic::{Check, Problem};
use crate::settings::Settings;
use crate::spec::{Located, SettingValue};

/// The keys of `sql:`.
const KEYS: &[&str] = &[
    "url",
    "password-env",
    "max-connections",
    "connect-timeout",
    "query",
    "params",
    "rows",
    "setup",
];

/// A checked `sql:` lookup.
#[derive(Debug, Clone)]
pub(super) struct SqlSource {
    lookup: SqlLookup,
    /// Each parameter's name and program, in the order written.
    params: Option<Vec<(String, Jq)>>,
    rows: Rows,
}

pub(super) fn read(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<SqlSource> {
    let sql = settings.map(check, "sql", KEYS)?;
    let before = check.problems.len();
    let connection = crate::kind::sql::connection(check, &sql);
    let query = sql.required_text(
        check,
        "query",
        "add `query:`, such as `select name from customers where id = :id`",
    );
    let params = params(check, &sql);
    let rows = sql
        .one_of(check, "rows", &[("first", Rows::First), ("all", Rows::All)])
        .unwrap_or_default();
    let setup = crate::kind::sql::setup(check, &sql);
    if check.problems.len() > before {
        return None;
    }
    let (connection, query) = (connection?, query?);
    let names: Option<Vec<&str>> = params
        .as_ref()
        .map(|p| p.iter().map(|(name, _)| name.as_str()).collect());
    let dialect = dialect_of(&connection.url);
    if let Err(e) = check_query(&query.value, dialect, names.as_deref()) {
        report_query(check, &sql, &query, &e);
        return None;
    }
    let config = SqlLookupConfig {
        connection,
        query: query.value.clone(),
        rows,
        setup,
    };
    match SqlLookup::new(config) {
        Ok(lookup) => Some(SqlSource {
            lookup,
            params,
            rows,
        }),
        Err(e) => {
            report_query(check, &sql, &query, &e);
            None
        }
    }
}

/// A query that does not parse, or names a parameter `params` does not have.
fn report_query(check: &mut Check<'_>, sql: &Settings<'_>, query: &Located<String>, e: &SqlError) {
    let (at, message, help) = match e {
        SqlError::Statement { at, reason, .. } => (
            check.inside(query, *at),
            format!("invalid `query`: {reason}"),
            "values are named parameters: `:name` (one of `params`), or without `params`, \
             `:$.path`, `:header.NAME`, `:field`; never `?` or `$1`",
        ),
        SqlError::MissingValue { parameter, .. } => (
            query.at,
            format!("`query` names the parameter `{parameter}`, which `params` does not compute"),
            "add it to `params:`, or name one of those it has",
        ),
        other => (query.at, format!("invalid `query`: {other}"), ""),
    };
    check.report(
        Problem::new(message, at)
            .with_key(sql.key("query"))
            .with_help_opt((!help.is_empty()).then(|| help.to_owned())),
    );
}

/// `params: {NAME: JQ, ...}`.
fn params(check: &mut Check<'_>, sql: &Settings<'_>) -> Option<Vec<(String, Jq)>> {
    let value = sql.get("params")?;
    let SettingValue::Map(items) = &value.value else {
        sql.wrong_type(
            check,
            "params",
            "a mapping of parameter names to jq programs",
        );
        return None;
    };
    let mut params = Vec::with_capacity(items.len());
    for item in items {
        let key = format!("{}.{}", sql.key("params"), item.key.value);
        let SettingValue::Text(text) = &item.value.value else {
            check.report(
                Problem::new(
                    format!(
                        "parameter `{}` must be computed by a jq program (a string), found {}",
                        item.key.value,
                        item.value.value.describe()
                    ),
                    item.value.at,
                )
                .with_key(key)
                .with_help("such as `'.customer_id'`; quote it: `'\"fixed\"'` for a fixed string"),
            );
            continue;
        };
        let text = Located {
            value: text.clone(),
            at: item.value.at,
        };
        if let Some(jq) = super::super::transform::compile(check, &text, &key) {
            params.push((item.key.value.clone(), jq));
        }
    }
    Some(params)
}

impl SqlSource {
    pub(super) fn describe(&self) -> String {
        let rows = match self.rows {
            Rows::First => "",
            Rows::All => " (all rows)",
        };
        format!("sql `{}`{rows}", self.lookup.query())
    }

    pub(super) fn build(&self) -> SqlAsk {
        SqlAsk {
            lookup: self.lookup.fresh(),
            params: self.params.clone(),
            rows: self.rows,
        }
    }
}

/// A running SQL lookup; its pool opens at the first query.
pub(super) struct SqlAsk {
    lookup: SqlLookup,
    params: Option<Vec<(String, Jq)>>,
    rows: Rows,
}

impl SqlAsk {
    pub(super) fn request(&self, msg: &Message) -> Result<Request, String> {
        let bound = match &self.params {
            None => self.lookup.bind_message(msg),
            Some(params) => {
                let mut document = Map::with_capacity(params.len());
                for (name, jq) in params {
                    let value = jq
                        .one(msg)
                        .map_err(|e| format!("parameter `{name}` (`{}`): {e}", jq.source()))?;
                    document.insert(name.clone(), value);
                }
                self.lookup.bind(&Value::Object(document))
            }
        };
        bound.map(Request::Sql).map_err(|e| e.to_string())
    }

    /// What the dry run says of `query`: the query, and each value it binds.
    pub(super) fn would(&self, query: &eip_adapters::sql::lookup::BoundQuery) -> String {
        let values = self.lookup.show(query);
        match values.is_empty() {
            true => format!("would query `{}`", self.lookup.query()),
            false => format!("would query `{}` with {values}", self.lookup.query()),
        }
    }

    pub(super) async fn ask(
        &self,
        query: &eip_adapters::sql::lookup::BoundQuery,
    ) -> Result<Answer, BoxError> {
        let rows = match self.lookup.run(query).await {
            Ok(rows) => rows,
            // The same on every attempt: the message can not be enriched as the query stands.
            Err(e @ SqlError::ColumnType { .. }) => return Ok(Answer::Unusable(e.to_string())),
            Err(e) => return Err(e.into()),
        };
        Ok(Answer::Found(match self.rows {
            Rows::First => rows.into_iter().next().unwrap_or(Value::Null),
            Rows::All => Value::Array(rows),
        }))
    }
}
