//! `sql-in`: a query polled at an interval; each row it selects becomes a message, and is
//! marked taken (`done`) once its channel accepted it.

use eip_adapters::sql::{
    Claim, ClaimColumns, Connection, SqlInbound, SqlInboundConfig, SqlInboundHandle,
};
use eip_core::channel::Channel;
use futures::future::BoxFuture;
use tower::BoxError;

use super::{DATABASE, SqlDirection, check};
use crate::diagnostic::Check;
use crate::kind::{Drawing, Endpoint, Inbound, Kind, Site, Started};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction, SettingValue};

/// `sql-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::adapter("sql-in", Direction::Inbound),
    feature: "sql",
    keys: &[
        &["to", "query", "done", "claim", "interval", "max-rows"],
        DATABASE,
    ],
    drawing: Drawing::Database,
    check: check::<SqlInboundConfig>,
};

/// The keys of `claim:` when it names claim columns.
const CLAIM: &[&str] = &["table", "key", "claimed-by", "claimed-at", "timeout"];

impl SqlDirection for SqlInboundConfig {
    fn read(
        check: &mut Check<'_>,
        settings: &Settings<'_>,
        connection: Option<Connection>,
    ) -> Option<Self> {
        let query = settings.required_text(
            check,
            "query",
            "add `query:`, the SELECT that finds the rows to take",
        );
        let done = settings.required_text(
            check,
            "done",
            "add `done:`, the statement that marks a row taken, such as \
             `UPDATE orders SET done = true WHERE id = :id`",
        );
        let mut config = SqlInboundConfig::new(connection?, query?.value, done?.value);
        if let Some(claim) = claim(check, settings)? {
            config.claim = claim;
        }
        if let Some(d) = settings.positive_duration(check, "interval") {
            config.interval = d;
        }
        if let Some(n) = settings.whole(check, "max-rows", 1) {
            config.max_rows = usize::try_from(n).unwrap_or(usize::MAX);
        }
        Some(config)
    }

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn start<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let inbound = SqlInbound::connect(self.clone()).await?;
            Ok(Endpoint::Inbound(Box::new(Connected {
                inbound,
                channel: site.channel.clone(),
                pause: site.pause.clone(),
            })))
        })
    }
}

/// `claim:`: `Some(None)` when not written, `None` when it is wrong.
fn claim(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Option<Claim>> {
    let Some(claim) = settings.get("claim") else {
        return Some(None);
    };
    match &claim.value {
        SettingValue::Text(word) if word == "skip-locked" => Some(Some(Claim::SkipLocked)),
        SettingValue::Map(_) => {
            let columns = settings.map(check, "claim", CLAIM)?;
            let table = columns.required_text(check, "table", "add `table: NAME`");
            let key = columns.required_text(check, "key", "add `key: COLUMN`");
            let mut claim = ClaimColumns::new(table?.value, key?.value);
            if let Some(c) = columns.text(check, "claimed-by") {
                claim.claimed_by = c.value;
            }
            if let Some(c) = columns.text(check, "claimed-at") {
                claim.claimed_at = c.value;
            }
            if let Some(d) = columns.positive_duration(check, "timeout") {
                claim.timeout = d;
            }
            Some(Some(Claim::Column(claim)))
        }
        other => {
            settings.report_at_value(
                check,
                "claim",
                claim.at,
                format!(
                    "`claim` must be `skip-locked` or a mapping of claim columns, found {}",
                    describe(other)
                ),
                Some(
                    "`skip-locked` (PostgreSQL, MariaDB), or `{table: T, key: ID}` for a \
                     claim column (SQLite)",
                ),
            );
            None
        }
    }
}

struct Connected {
    /// Its pause switch: its sends wait while paused.
    pause: eip_core::endpoint::PauseGate,
    inbound: SqlInbound,
    channel: Channel,
}

impl Inbound for Connected {
    fn start(self: Box<Self>) -> Box<dyn Started> {
        Box::new(Polling(
            self.inbound
                .spawn(self.channel.sender().pause_gate(self.pause)),
        ))
    }
}

struct Polling(SqlInboundHandle);

impl Started for Polling {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(self.0.shutdown())
    }
}

/// A value for "found ...": text and numbers as written, anything else by its type.
fn describe(value: &SettingValue) -> String {
    match value {
        SettingValue::Text(s) => format!("`{s}`"),
        SettingValue::Number(n) => format!("`{n}`"),
        other => other.describe().to_owned(),
    }
}
