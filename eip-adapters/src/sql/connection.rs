//! Where the database is, and how its secrets stay out of files and messages.
//!
//! A [`Connection`] is a connection string plus settings. The string's scheme picks the
//! database: `postgres://` (or `postgresql://`), `mysql://` (or `mariadb://`), `sqlite:`. It
//! may name environment variables as `${NAME}` or `${NAME:-default}`, expanded when the adapter
//! connects (`postgres://${PGUSER:-root}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}/test`); a
//! variable that is not set and has no default is an error naming it.
//!
//! The password is best kept out of the string: `password_env` names the environment
//! variable holding it, and it is handed to the driver as it is (no URL escaping needed). A
//! password written in the string works too. Either way it never appears in an error or a log
//! line: connection strings are shown with the password replaced by `***`, and the driver's
//! answer is searched for the password and scrubbed before it becomes an error.
//!
//! No TLS yet: connections are plain TCP (sqlx is built without a TLS backend), so the
//! database should be on the same host or a trusted network.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use super::error::SqlError;
use super::statement::Dialect;
use crate::env::{redact_url, split_password, user_info};

/// A database to connect to: plain data, as a flow file would hold it.
#[derive(Clone, PartialEq, Eq)]
pub struct Connection {
    /// The connection string; `${NAME}` and `${NAME:-default}` are environment variables.
    pub url: String,
    /// The environment variable holding the password, if any.
    pub password_env: Option<String>,
    /// The most connections the adapter opens (default 4).
    pub max_connections: u32,
    /// How long to wait for a connection before giving up (default 10 s).
    pub connect_timeout: Duration,
}

impl Connection {
    /// A connection to `url`, with the default settings.
    pub fn new(url: impl Into<String>) -> Self {
        Connection {
            url: url.into(),
            password_env: None,
            max_connections: 4,
            connect_timeout: Duration::from_secs(10),
        }
    }

    /// Reads the password from the environment variable `name` when connecting.
    pub fn password_env(mut self, name: impl Into<String>) -> Self {
        self.password_env = Some(name.into());
        self
    }

    /// The most connections the adapter opens (at least 1).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long to wait for a connection.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Connects and runs `statements` one after the other, each as written (no parameters:
    /// these are the operator's, not a message's), then closes the connection. What a flow
    /// file's `setup:` does before its adapter starts, typically `CREATE TABLE IF NOT EXISTS`.
    /// The first statement that fails is the error; those before it stay done.
    pub async fn execute(&self, statements: &[String]) -> Result<(), SqlError> {
        if statements.is_empty() {
            return Ok(());
        }
        let pool = self.connect().await?;
        let mut outcome = Ok(());
        for statement in statements {
            let done =
                on_pool!(&pool, p, _Db => sqlx::raw_sql(statement).execute(p).await.map(drop));
            if let Err(source) = done {
                outcome = Err(SqlError::Execute {
                    statement: statement.clone(),
                    source,
                });
                break;
            }
        }
        on_pool!(&pool, p, _Db => p.close().await);
        outcome
    }

    /// The connection string as it may be shown: any password in it replaced by `***`
    /// (environment variables are not expanded).
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url)
    }

    /// Expands the environment variables, reads the password and connects.
    pub(crate) async fn connect(&self) -> Result<Pool, SqlError> {
        let url = expand(&self.url)?;
        let password = match &self.password_env {
            Some(name) => Some(std::env::var(name).map_err(|_| SqlError::MissingEnv {
                name: name.clone(),
                setting: "password_env",
            })?),
            None => None,
        };
        let secret = password.clone().or_else(|| url_password(&url));
        let shown = redact_url(&url);
        let scrub = |text: String| match &secret {
            Some(s) if !s.is_empty() => text.replace(s.as_str(), "***"),
            _ => text,
        };
        let bad_url = |e: sqlx::Error| SqlError::Url {
            url: shown.clone(),
            reason: scrub(e.to_string()),
        };
        let failed = |e: sqlx::Error| SqlError::Connect {
            url: shown.clone(),
            reason: scrub(e.to_string()),
        };
        let scheme = url.split(':').next().unwrap_or_default();
        Ok(match scheme {
            "postgres" | "postgresql" => {
                let mut options = PgConnectOptions::from_str(&url).map_err(bad_url)?;
                if let Some(p) = &password {
                    options = options.password(p);
                }
                Pool::Postgres(
                    PgPoolOptions::new()
                        .max_connections(self.max_connections)
                        .acquire_timeout(self.connect_timeout)
                        .connect_with(options)
                        .await
                        .map_err(failed)?,
                )
            }
            "mysql" | "mariadb" => {
                let url = url.replacen("mariadb:", "mysql:", 1);
                let mut options = MySqlConnectOptions::from_str(&url).map_err(bad_url)?;
                if let Some(p) = &password {
                    options = options.password(p);
                }
                Pool::MySql(
                    MySqlPoolOptions::new()
                        .max_connections(self.max_connections)
                        .acquire_timeout(self.connect_timeout)
                        .connect_with(options)
                        .await
                        .map_err(failed)?,
                )
            }
            "sqlite" => {
                let options = SqliteConnectOptions::from_str(&url).map_err(bad_url)?;
                Pool::Sqlite(
                    SqlitePoolOptions::new()
                        .max_connections(self.max_connections)
                        .acquire_timeout(self.connect_timeout)
                        .connect_with(options)
                        .await
                        .map_err(failed)?,
                )
            }
            other => {
                return Err(SqlError::Url {
                    url: shown,
                    reason: format!(
                        "unknown scheme `{other}`: expected postgres://, mysql://, mariadb:// or sqlite:"
                    ),
                });
            }
        })
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("url", &redact_url(&self.url))
            .field("password_env", &self.password_env)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// An open pool, of one of the three databases.
#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Postgres(PgPool),
    MySql(MySqlPool),
    Sqlite(SqlitePool),
}

impl Pool {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Pool::Postgres(_) => Dialect::Postgres,
            Pool::MySql(_) => Dialect::MySql,
            Pool::Sqlite(_) => Dialect::Sqlite,
        }
    }
}

/// Runs `$body` with `$pool` bound to the concrete pool and `$db` naming its database type.
macro_rules! on_pool {
    ($pool:expr, $p:ident, $db:ident => $body:expr) => {
        match $pool {
            $crate::sql::connection::Pool::Postgres($p) => {
                type $db = ::sqlx::Postgres;
                $body
            }
            $crate::sql::connection::Pool::MySql($p) => {
                type $db = ::sqlx::MySql;
                $body
            }
            $crate::sql::connection::Pool::Sqlite($p) => {
                type $db = ::sqlx::Sqlite;
                $body
            }
        }
    };
}
pub(crate) use on_pool;

/// `text` with `${NAME}` and `${NAME:-default}` replaced by the environment's values.
fn expand(text: &str) -> Result<String, SqlError> {
    crate::env::expand(text).map_err(|e| match e {
        crate::env::EnvError::Missing(name) => SqlError::MissingEnv {
            name,
            setting: "connection string",
        },
        crate::env::EnvError::Unclosed => SqlError::Url {
            url: redact_url(text),
            reason: e.to_string(),
        },
    })
}

/// The password written in `url`, percent-decoded as the driver will read it.
fn url_password(url: &str) -> Option<String> {
    let (_, info) = user_info(url)?;
    let (_, password) = split_password(info)?;
    Some(percent_decode(password))
}

fn percent_decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_string_is_shown_without_its_password() {
        assert_eq!(
            redact_url("postgres://root:s3cret@db:5432/test?sslmode=disable&password=x"),
            "postgres://root:***@db:5432/test?sslmode=disable&password=***"
        );
        assert_eq!(redact_url("mysql://root@db/test"), "mysql://root@db/test");
        assert_eq!(
            redact_url("postgres://${PGUSER:-root}@${PGHOST:-db}:5432/test"),
            "postgres://${PGUSER:-root}@${PGHOST:-db}:5432/test"
        );
        assert_eq!(
            redact_url("postgres://${PGUSER:-root}:${PGPASS:-x}@db/test"),
            "postgres://${PGUSER:-root}:***@db/test"
        );
        assert_eq!(redact_url("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
        assert_eq!(
            url_password("mysql://u:p%40ss@h/d").as_deref(),
            Some("p@ss")
        );
        let debug = format!("{:?}", Connection::new("postgres://u:hunter22@h/d"));
        assert!(!debug.contains("hunter22"), "{debug}");
    }

    #[test]
    fn environment_variables_are_expanded_with_defaults() {
        let url = expand(
            "postgres://${EIP_SQL_TEST_UNSET_USER:-root}@${EIP_SQL_TEST_UNSET_HOST:-127.0.0.1}/t",
        )
        .unwrap();
        assert_eq!(url, "postgres://root@127.0.0.1/t");
        let e = expand("postgres://${EIP_SQL_TEST_UNSET_HOST}/t").unwrap_err();
        assert!(e.to_string().contains("`EIP_SQL_TEST_UNSET_HOST`"), "{e}");
    }
}
