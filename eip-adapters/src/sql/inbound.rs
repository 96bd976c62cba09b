//! The inbound database adapter: polls a query, claims the rows, sends each as a message and
//! marks it done once the channel accepted it.
//!
//! Each row becomes a JSON object (column name → value; see the [module](super) for the types)
//! sent as the payload of a message with content type `application/json`.
//!
//! **Claiming.** Two pollers (two adapters, two processes) never take the same row:
//! - [`Claim::SkipLocked`] (PostgreSQL, MariaDB 10.6+, MySQL 8): in one transaction, the query
//!   runs with `LIMIT n FOR UPDATE SKIP LOCKED` appended, each row is sent, and the done
//!   statement runs for it, then the transaction commits. Rows locked by another poller are
//!   skipped. A poller that dies leaves nothing behind: its connection closes, its transaction
//!   rolls back and the rows are free at once (after a network partition, once the server
//!   notices the connection is gone: its TCP keepalive or `idle_in_transaction_session_timeout`).
//! - [`Claim::Column`] (SQLite, or any database): one `UPDATE` sets a claim column to a token of
//!   this poll and a time column to now (milliseconds since the Unix epoch) on at most `n`
//!   unclaimed rows of the query, then reads them back by token; after each row is sent, the
//!   done statement runs on its own. A row whose claim is older than the claim timeout counts as
//!   unclaimed: a poller that died between claim and done leaves its rows taken for that long,
//!   then another poller takes them again. The timeout must exceed the time one poll takes.
//!
//! Either way a row is marked done only after the channel **accepted** its message (the send
//! completed: on disk, for a durable channel). Delivery is at-least-once: a poller that dies
//! after the send and before the commit (or a claim that times out while its poll is still
//! running) sends the row again.
//!
//! **Backpressure.** A poll first waits until the channel can take a message, then claims at
//! most as many rows as the channel has room for now (and at most `max_rows`): while the
//! channel is full, nothing is polled or claimed. A poll that found rows is followed at once by
//! the next; one that found none waits the interval.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::{Channel, ChannelSender};
use eip_core::message::now_millis;
use eip_core::{Message, MessageId};
use serde_json::Value;
use tokio::sync::Notify;
use tower::{Service, ServiceExt};

use super::connection::{Connection, Pool, on_pool};
use super::error::SqlError;
use super::statement::{Dialect, Statement};
use super::value::{Backend, SqlValue, bind_all};
use eip_core::log::Escaped;

/// How pollers claim rows so that no two take the same one; see the [module](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Row locks: `SELECT … FOR UPDATE SKIP LOCKED` in the transaction that marks the rows done.
    SkipLocked,
    /// A claim column and a claim-time column in the table.
    Column(ClaimColumns),
}

/// The table and columns of a [`Claim::Column`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimColumns {
    /// The table the query reads (`orders`, or `schema.orders`).
    pub table: String,
    /// Its key column, which the query must select.
    pub key: String,
    /// A nullable text column holding the claimant's token (default `claimed_by`).
    pub claimed_by: String,
    /// A nullable integer column holding the claim time in ms since the epoch (default
    /// `claimed_at`).
    pub claimed_at: String,
    /// How long a claim holds before the row may be taken again (default 5 minutes).
    pub timeout: Duration,
}

impl ClaimColumns {
    /// Claims in `table`, whose key column is `key`, with the default columns and timeout.
    pub fn new(table: impl Into<String>, key: impl Into<String>) -> Self {
        ClaimColumns {
            table: table.into(),
            key: key.into(),
            claimed_by: "claimed_by".to_owned(),
            claimed_at: "claimed_at".to_owned(),
            timeout: Duration::from_secs(300),
        }
    }

    /// How long a claim holds.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The inbound adapter's settings: plain data, as a flow file would hold them.
#[derive(Debug, Clone)]
pub struct SqlInboundConfig {
    /// The database.
    pub connection: Connection,
    /// The query selecting the rows to take (without `LIMIT`, without parameters), such as
    /// `SELECT id, symbol FROM orders WHERE NOT done ORDER BY id`.
    pub query: String,
    /// The statement marking one row done, with the row's columns as parameters, such as
    /// `UPDATE orders SET done = true WHERE id = :id` or `DELETE FROM orders WHERE id = :id`.
    pub done: String,
    /// How rows are claimed (default [`Claim::SkipLocked`]).
    pub claim: Claim,
    /// How long to wait after a poll that found no rows (default 1 s).
    pub interval: Duration,
    /// The most rows one poll takes (default 100).
    pub max_rows: usize,
}

impl SqlInboundConfig {
    /// Polls `query` on `connection`, marking each row done with `done`.
    pub fn new(connection: Connection, query: impl Into<String>, done: impl Into<String>) -> Self {
        SqlInboundConfig {
            connection,
            query: query.into(),
            done: done.into(),
            claim: Claim::SkipLocked,
            interval: Duration::from_secs(1),
            max_rows: 100,
        }
    }

    /// How rows are claimed.
    pub fn claim(mut self, claim: Claim) -> Self {
        self.claim = claim;
        self
    }

    /// How long to wait after a poll that found no rows.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The most rows one poll takes (at least 1).
    pub fn max_rows(mut self, n: usize) -> Self {
        self.max_rows = n.max(1);
        self
    }
}

/// Polls a table into a channel; see the [module](self).
#[derive(Clone)]
pub struct SqlInbound {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    query: String,
    done: Statement,
    claim: Claiming,
    interval: Duration,
    max_rows: usize,
}

/// The SQL of a claim strategy, built once.
enum Claiming {
    SkipLocked {
        select: String,
    },
    Column {
        /// Binds: token, now, cutoff, cutoff, limit.
        claim: String,
        /// Binds: token.
        read: String,
        /// Binds: token.
        release: String,
        timeout: Duration,
    },
}

impl std::fmt::Debug for SqlInbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlInbound")
            .field("query", &self.inner.query)
            .field("done", &self.inner.done.configured())
            .finish()
    }
}

impl SqlInbound {
    /// Connects, checks the configuration and builds its statements.
    pub async fn connect(config: SqlInboundConfig) -> Result<SqlInbound, SqlError> {
        let pool = config.connection.connect().await?;
        let dialect = pool.dialect();
        let query = Statement::parse(&config.query, dialect)?;
        if query.parameter_count() > 0 {
            return Err(SqlError::Config(format!(
                "the poll query `{}` takes no parameters",
                config.query
            )));
        }
        let done = Statement::parse(&config.done, dialect)?;
        if let Some(header) = done.header_parameter() {
            return Err(SqlError::Config(format!(
                "the done statement `{}` can bind only the row's columns, not {header}",
                config.done
            )));
        }
        let query = config.query.trim().trim_end_matches(';').to_owned();
        let claim = match &config.claim {
            Claim::SkipLocked if dialect == Dialect::Sqlite => {
                return Err(SqlError::Config(
                    "SQLite has no row locks: claim rows with a claim column (Claim::Column)"
                        .to_owned(),
                ));
            }
            Claim::SkipLocked => Claiming::SkipLocked {
                select: format!(
                    "{query} LIMIT {} FOR UPDATE SKIP LOCKED",
                    dialect.placeholder(1)
                ),
            },
            Claim::Column(columns) => column_claim(&query, columns, dialect)?,
        };
        Ok(SqlInbound {
            inner: Arc::new(Inner {
                pool,
                query,
                done,
                claim,
                interval: config.interval,
                max_rows: config.max_rows.max(1),
            }),
        })
    }

    /// Polls once: waits until the channel can take a message, claims at most as many rows
    /// as it has room for, sends each and marks it done. How many rows it took.
    pub async fn poll_once(&self, sender: &mut ChannelSender) -> Result<usize, SqlError> {
        sender.ready().await?;
        let limit = room(sender.get_ref()).min(self.inner.max_rows);
        match &self.inner.claim {
            Claiming::SkipLocked { select } => self.inner.poll_locked(sender, select, limit).await,
            Claiming::Column { .. } => self.inner.poll_claimed(sender, limit).await,
        }
    }

    /// Polls until `shutdown` completes (a poll under way is finished first). Errors are
    /// logged and the poll tried again after the interval.
    pub async fn run_until(self, mut sender: ChannelSender, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                () = &mut shutdown => return,
                ready = sender.ready() => if ready.is_err() {
                    tracing::warn!(channel = sender.get_ref().name(), "sql inbound: channel closed, stopping");
                    return;
                },
            }
            let wait = match self.poll_once(&mut sender).await {
                Ok(0) => true,
                Ok(_) => false,
                Err(SqlError::Send(e)) => {
                    tracing::warn!(error = %Escaped(&e), "sql inbound: channel refused a row, stopping");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %Escaped(&e), query = %self.inner.query, "sql inbound: poll failed");
                    true
                }
            };
            if wait {
                tokio::select! {
                    biased;
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(self.inner.interval) => {}
                }
            }
        }
    }

    /// Polls on the current tokio runtime into `sender`'s channel; the handle stops it.
    pub fn spawn(self, sender: ChannelSender) -> SqlInboundHandle {
        let stop = Arc::new(Notify::new());
        let signal = stop.clone();
        let task = tokio::spawn(self.run_until(sender, async move { signal.notified().await }));
        SqlInboundHandle { stop, task }
    }
}

/// Stops a spawned [`SqlInbound`].
#[derive(Debug)]
pub struct SqlInboundHandle {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl SqlInboundHandle {
    /// Stops polling (after the poll under way) and waits for it.
    pub async fn shutdown(self) {
        self.stop.notify_one();
        if let Err(e) = self.task.await {
            tracing::error!(error = %Escaped(&e), "sql inbound task failed");
        }
    }

    /// Whether it has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Inner {
    async fn poll_locked(
        &self,
        sender: &mut ChannelSender,
        select: &str,
        limit: usize,
    ) -> Result<usize, SqlError> {
        let failed = |statement: &str| {
            let statement = statement.to_owned();
            move |source| SqlError::Execute { statement, source }
        };
        on_pool!(&self.pool, pool, Db => {
            let mut tx = pool.begin().await.map_err(failed(select))?;
            let rows = sqlx::query::<Db>(select)
                .bind(limit as i64)
                .fetch_all(&mut *tx)
                .await
                .map_err(failed(select))?;
            for row in &rows {
                let row = <Db as Backend>::row_json(row)?;
                let values = self.done.bind_json(&row)?;
                // An error drops the transaction: it rolls back and the rows are free again.
                send(sender, &row).await?;
                bind_all(sqlx::query::<Db>(self.done.sql()), &values)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed(self.done.configured()))?;
            }
            tx.commit().await.map_err(failed(self.done.configured()))?;
            Ok(rows.len())
        })
    }

    async fn poll_claimed(
        &self,
        sender: &mut ChannelSender,
        limit: usize,
    ) -> Result<usize, SqlError> {
        let Claiming::Column {
            claim,
            read,
            release,
            timeout,
        } = &self.claim
        else {
            unreachable!("poll_claimed with a claim column only");
        };
        let failed = |statement: &str| {
            let statement = statement.to_owned();
            move |source| SqlError::Execute { statement, source }
        };
        let token = SqlValue::Text(format!(
            "{}/{}/{}",
            eip_core::message::host_name(),
            std::process::id(),
            MessageId::new()
        ));
        let now = now_millis() as i64;
        let cutoff = now.saturating_sub(timeout.as_millis() as i64);
        let claim_values = [
            token.clone(),
            SqlValue::Int(now),
            SqlValue::Int(cutoff),
            SqlValue::Int(cutoff),
            SqlValue::Int(limit as i64),
        ];
        on_pool!(&self.pool, pool, Db => {
            let claimed = bind_all(sqlx::query::<Db>(claim), &claim_values)
                .execute(pool)
                .await
                .map_err(failed(claim))?;
            if claimed.rows_affected() == 0 {
                return Ok(0);
            }
            let token = std::slice::from_ref(&token);
            let rows = bind_all(sqlx::query::<Db>(read), token)
                .fetch_all(pool)
                .await
                .map_err(failed(read))?;
            let mut taken = 0;
            for row in &rows {
                let outcome = async {
                    let row = <Db as Backend>::row_json(row)?;
                    let values = self.done.bind_json(&row)?;
                    send(sender, &row).await?;
                    bind_all(sqlx::query::<Db>(self.done.sql()), &values)
                        .execute(pool)
                        .await
                        .map_err(failed(self.done.configured()))
                }
                .await;
                if let Err(e) = outcome {
                    // Free the rest at once rather than after the claim timeout.
                    if let Err(release_error) = bind_all(sqlx::query::<Db>(release), token).execute(pool).await {
                        tracing::warn!(error = %Escaped(&release_error), "sql inbound: claims not released; they expire after the claim timeout");
                    }
                    return Err(e);
                }
                taken += 1;
            }
            Ok(taken)
        })
    }
}

/// Sends a row's message and waits until the channel accepted it (or diverted it to its
/// invalid message channel, which settles the row all the same).
async fn send(sender: &mut ChannelSender, row: &Value) -> Result<(), SqlError> {
    let payload = serde_json::to_vec(row).expect("a JSON value serializes");
    let msg = Message::builder(payload)
        .content_type("application/json")
        .build();
    sender.ready().await?;
    sender.call(msg).await?;
    Ok(())
}

/// How many messages the channel can take now, at least 1 (it said it was ready).
fn room(channel: &Channel) -> usize {
    let capacity = match channel {
        Channel::PointToPoint(c) => c.capacity(),
        Channel::PublishSubscribe(c) => c.capacity(),
    };
    let stats = channel.stats();
    capacity
        .saturating_sub(stats.depth + stats.in_flight)
        .max(1)
}

/// The statements of a claim column, over `query`.
fn column_claim(query: &str, c: &ClaimColumns, dialect: Dialect) -> Result<Claiming, SqlError> {
    for (setting, name) in [
        ("table", &c.table),
        ("key", &c.key),
        ("claimed_by", &c.claimed_by),
        ("claimed_at", &c.claimed_at),
    ] {
        if !is_identifier(name) {
            return Err(SqlError::Config(format!(
                "claim column setting {setting} = `{name}` is not a plain SQL name (letters, digits, `_`, one `.`)"
            )));
        }
    }
    let ClaimColumns {
        table,
        key,
        claimed_by: by,
        claimed_at: at,
        ..
    } = c;
    let p = |n| dialect.placeholder(n);
    let free = |n| format!("({by} IS NULL OR {at} < {})", p(n));
    Ok(Claiming::Column {
        // The inner derived table lets MySQL update the table it reads; the outer condition
        // is checked again on each row as it is updated, so two claims never both win a row.
        claim: format!(
            "UPDATE {table} SET {by} = {}, {at} = {} WHERE {} AND {key} IN \
             (SELECT {key} FROM (SELECT {key} FROM ({query}) AS eip_rows WHERE {key} IN \
             (SELECT {key} FROM {table} WHERE {}) LIMIT {}) AS eip_claim)",
            p(1),
            p(2),
            free(3),
            free(4),
            p(5)
        ),
        read: format!(
            "SELECT * FROM ({query}) AS eip_rows WHERE {key} IN (SELECT {key} FROM {table} WHERE {by} = {})",
            p(1)
        ),
        release: format!(
            "UPDATE {table} SET {by} = NULL, {at} = NULL WHERE {by} = {}",
            p(1)
        ),
        timeout: c.timeout,
    })
}

fn is_identifier(name: &str) -> bool {
    let part = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match name.split_once('.') {
        Some((schema, table)) => part(schema) && part(table),
        None => part(name),
    }
}
