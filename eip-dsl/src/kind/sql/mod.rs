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

use std::fmt;

use eip_adapters::sql::{Connection, SqlInboundConfig, SqlOutboundConfig};
use futures::future::BoxFuture;
use tower::BoxError;

pub(super) use self::inbound::INBOUND;
pub(super) use self::outbound::OUTBOUND;
use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Endpoint, Entry, Site};
use crate::settings::Settings;

/// A checked database adapter: what it does in its database (its direction's configuration,
/// which holds the [`Connection`]) and the `setup:` statements it runs once when it starts.
#[derive(Debug, Clone)]
pub struct Sql<C> {
    /// The query and claim (`sql-in`) or the statement (`sql-out`), with the database.
    pub config: C,
    /// `setup:` statements run once when it starts.
    pub setup: Vec<String>,
}

/// A checked `sql-in` adapter.
pub type SqlIn = Sql<SqlInboundConfig>;

/// A checked `sql-out` adapter.
pub type SqlOut = Sql<SqlOutboundConfig>;

/// What one direction of the database adapters adds to the database keys both share: the keys
/// it reads, and what it connects once the `setup:` statements ran.
pub(crate) trait SqlDirection: Clone + fmt::Debug + Send + Sync + 'static {
    /// The direction's own keys, over `connection` (`None` when the database keys were wrong:
    /// the direction's keys are checked all the same, so every problem is reported).
    fn read(
        check: &mut Check<'_>,
        settings: &Settings<'_>,
        connection: Option<Connection>,
    ) -> Option<Self>;

    /// The database it works in.
    fn connection(&self) -> &Connection;

    /// Connects the poller or the writer, for the channel of `site`.
    fn start<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>>;
}

/// Checks a `sql-in` or `sql-out` adapter: the setup statements, the database, then the
/// direction's own keys.
fn check<C: SqlDirection>(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let setup = setup(check, settings);
    let connection = connection(check, settings);
    let config = C::read(check, settings, connection)?;
    Some(Box::new(Sql { config, setup }))
}

impl<C: SqlDirection> AdapterConfig for Sql<C> {
    fn endpoint(&self) -> String {
        self.config.connection().redacted_url()
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            self.config.connection().execute(&self.setup).await?;
            self.config.start(site).await
        })
    }
}

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
