//! The database adapters: `sql-in` (rows a query selects become messages, each claimed so
//! concurrent pollers never take one twice) and `sql-out` (messages become rows through a
//! parameterized statement, never string-built SQL).
//!
//! Both name their database the same way (`url`, `password-env`, `max-connections`,
//! `connect-timeout`) and may run `setup` statements once when they start. The password is read
//! when the adapter starts, not when the flow is checked: a flow validates on a machine without
//! its secrets.

mod inbound;
mod outbound;

use eip_adapters::sql::Connection;

pub(super) use self::inbound::INBOUND;
pub use self::inbound::SqlIn;
pub(super) use self::outbound::OUTBOUND;
pub use self::outbound::SqlOut;
use crate::diagnostic::Check;
use crate::settings::Settings;

/// The keys both kinds have: the database.
const DATABASE: &[&str] = &[
    "url",
    "password-env",
    "max-connections",
    "connect-timeout",
    "setup",
];

/// The schemes a database URL may have.
const SCHEMES: &[&str] = &[
    "postgres://",
    "postgresql://",
    "mysql://",
    "mariadb://",
    "sqlite:",
];

/// `setup:` statements run once, in order, when the adapter starts (before it polls or
/// writes), such as `CREATE TABLE IF NOT EXISTS …`. An enricher's SQL lookup reads them too.
pub(crate) fn setup(check: &mut Check<'_>, settings: &Settings<'_>) -> Vec<String> {
    settings
        .list(check, "setup")
        .map(|statements| statements.into_iter().map(|s| s.value).collect())
        .unwrap_or_default()
}

/// The database: its URL, password variable and pool; as `sql-in`, `sql-out` and an
/// enricher's SQL lookup read them.
pub(crate) fn connection(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Connection> {
    let url = settings.required_text(
        check,
        "url",
        "add `url:`, such as `postgres://user@127.0.0.1:5432/db`, `mysql://user@127.0.0.1/db` \
         or `sqlite:data.db`",
    )?;
    let known = SCHEMES.iter().any(|s| url.value.starts_with(s));
    if !known && !url.value.starts_with("${") {
        settings.report_value(
            check,
            "url",
            &url,
            "unknown database: the URL must start with `postgres://`, `mysql://` (or \
             `mariadb://`) or `sqlite:`"
                .to_owned(),
            Some("a URL may name environment variables as `${NAME}` or `${NAME:-default}`"),
        );
        return None;
    }
    let mut connection = Connection::new(url.value);
    if let Some(env) = settings.env_name(check, "password-env") {
        connection = connection.password_env(env);
    }
    if let Some(n) = settings.whole(check, "max-connections", 1) {
        connection = connection.max_connections(u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        connection = connection.connect_timeout(d);
    }
    Some(connection)
}
