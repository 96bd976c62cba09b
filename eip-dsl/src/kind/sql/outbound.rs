//! `sql-out`: each message becomes a row (or rows), through a parameterized statement.

use eip_adapters::sql::{SqlOutbound, SqlOutboundConfig};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{DATABASE, connection, setup};
use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `sql-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::adapter("sql-out", Direction::Outbound),
    feature: "sql",
    keys: &[DATABASE, &["statement", "batch-size"]],
    drawing: Drawing::Database,
    check,
};

/// A checked `sql-out` adapter.
#[derive(Debug, Clone)]
pub struct SqlOut {
    /// The statement and the database.
    pub config: SqlOutboundConfig,
    /// `setup:` statements run once when it starts.
    pub setup: Vec<String>,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let setup = setup(check, settings);
    let connection = connection(check, settings);
    let statement = settings.required_text(
        check,
        "statement",
        "add `statement:`, such as `INSERT INTO orders (sku, qty) VALUES (:$.sku, :$.qty)`",
    );
    let mut config = SqlOutboundConfig::new(connection?, statement?.value);
    if let Some(n) = settings.whole(check, "batch-size", 1) {
        config = config.batch_size(usize::try_from(n).unwrap_or(usize::MAX));
    }
    Some(Box::new(SqlOut { config, setup }))
}

impl AdapterConfig for SqlOut {
    fn endpoint(&self) -> String {
        self.config.connection.redacted_url()
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            self.config.connection.execute(&self.setup).await?;
            let writer = SqlOutbound::connect(self.config.clone()).await?;
            Ok(Endpoint::outbound(writer, |_| false))
        })
    }
}
