//! `sql-out`: each message becomes a row (or rows), through a parameterized statement.

use eip_adapters::sql::{Connection, SqlOutbound, SqlOutboundConfig};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{DATABASE, SqlDirection, check};
use crate::diagnostic::Check;
use crate::kind::{Drawing, Endpoint, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `sql-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::adapter("sql-out", Direction::Outbound),
    feature: "sql",
    keys: &[DATABASE, &["statement", "batch-size"]],
    drawing: Drawing::Database,
    check: check::<SqlOutboundConfig>,
};

impl SqlDirection for SqlOutboundConfig {
    fn read(
        check: &mut Check<'_>,
        settings: &Settings<'_>,
        connection: Option<Connection>,
    ) -> Option<Self> {
        let statement = settings.required_text(
            check,
            "statement",
            "add `statement:`, such as `INSERT INTO orders (sku, qty) VALUES (:$.sku, :$.qty)`",
        );
        let mut config = SqlOutboundConfig::new(connection?, statement?.value);
        if let Some(n) = settings.whole(check, "batch-size", 1) {
            config = config.batch_size(usize::try_from(n).unwrap_or(usize::MAX));
        }
        Some(config)
    }

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn start<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let writer = SqlOutbound::connect(self.clone()).await?;
            Ok(Endpoint::outbound(writer, |_| false))
        })
    }
}
