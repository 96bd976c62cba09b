//! The outbound database adapter: each message is written by one parameterized statement.
//!
//! [`SqlOutbound`] is a `tower::Service<Message>`. The statement is parsed once, when the
//! adapter is built, into the database's SQL and the list of values to bind (see the
//! [module](super) for the parameter syntax); a message only ever supplies values.
//!
//! **Ok means committed.** A call's future completes with `Ok(())` once the transaction that
//! wrote its message has committed, and with an error otherwise (nothing of that message is in
//! the database, unless the connection broke during the commit itself, when the outcome is
//! unknown: the consumer's redelivery then makes the write at-least-once).
//!
//! **Batching (group commit).** A call binds its message's values and queues them for the
//! adapter's writer task. The writer takes what is queued, up to `batch_size` messages, writes
//! it in one transaction, tells each call, and takes the next batch: calls that arrive while a
//! transaction is being written (a [`Consumer`](eip_core::endpoint::Consumer) with a
//! concurrency above 1) share the next one. A call whose future was dropped before its batch
//! began (a timeout) is not written. If a transaction fails, each of its messages is written
//! again in a transaction of its own, so one bad message (a constraint violation) fails alone.
//! [`SqlOutbound::write_batch`] writes a given slice in one transaction, all or nothing.
//!
//! **Multi-row INSERT.** When the statement is a plain `INSERT … VALUES (…)` (see
//! [`is_multi_row`](SqlOutbound::is_multi_row)), the messages of a transaction are written by
//! one statement with a value tuple per message, `VALUES ($1, $2), ($3, $4), …`, split into
//! several statements when they would bind more values than the database takes in one
//! (PostgreSQL and MySQL/MariaDB 65 535, SQLite 32 766). The values are still bound, never
//! pasted. A statement with a `SELECT`, a second tuple, or parameters outside its tuple (an
//! `ON CONFLICT … DO UPDATE SET x = :$.x`) runs once per message instead. Statement-level
//! triggers fire once per multi-row statement rather than once per message.
//!
//! A parameter that finds no value in a message fails that message's call at once, naming the
//! parameter, before any database work: the consumer dead-letters it with that error.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use eip_core::Message;
use tokio::sync::{mpsc, oneshot};

use super::connection::{Connection, Pool, on_pool};
use super::error::SqlError;
use super::multi_row::MultiRow;
use super::statement::Statement;
use super::value::{SqlValue, bind_all};
use eip_core::log::Escaped;

/// The outbound adapter's settings: plain data, as a flow file would hold them.
#[derive(Debug, Clone)]
pub struct SqlOutboundConfig {
    /// The database.
    pub connection: Connection,
    /// The statement run for each message, with named parameters.
    pub statement: String,
    /// The most messages written in one transaction (default 100); with a plain INSERT, also
    /// the most value tuples in one statement, within the database's limit of bound values.
    pub batch_size: usize,
}

impl SqlOutboundConfig {
    /// Runs `statement` on `connection` for each message.
    pub fn new(connection: Connection, statement: impl Into<String>) -> Self {
        SqlOutboundConfig {
            connection,
            statement: statement.into(),
            batch_size: 100,
        }
    }

    /// The most messages written in one transaction (at least 1).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }
}

/// Writes messages to a database with a parameterized statement; see the [module](self).
#[derive(Clone)]
pub struct SqlOutbound {
    shared: Arc<Shared>,
    /// To the writer task; it ends when the last clone is dropped.
    queue: mpsc::UnboundedSender<Pending>,
}

struct Shared {
    pool: Pool,
    statement: Statement,
    batch_size: usize,
    /// The multi-row statements built so far, by number of rows.
    multi_row_sql: Mutex<HashMap<usize, Arc<str>>>,
}

/// The most multi-row statements of different sizes kept built.
const MULTI_ROW_SIZES_KEPT: usize = 128;

/// A message's values waiting for the writer, and where its result goes.
struct Pending {
    values: Vec<SqlValue>,
    done: oneshot::Sender<Result<(), SqlError>>,
}

impl std::fmt::Debug for SqlOutbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlOutbound")
            .field("statement", &self.shared.statement.configured())
            .field("batch_size", &self.shared.batch_size)
            .field("multi_row", &self.shared.statement.multi_row().is_some())
            .finish()
    }
}

impl SqlOutbound {
    /// Connects, parses the statement and starts the writer task (on the current tokio
    /// runtime).
    pub async fn connect(config: SqlOutboundConfig) -> Result<SqlOutbound, SqlError> {
        let pool = config.connection.connect().await?;
        let statement = Statement::parse(&config.statement, pool.dialect())?;
        let shared = Arc::new(Shared {
            pool,
            statement,
            batch_size: config.batch_size.max(1),
            multi_row_sql: Mutex::new(HashMap::new()),
        });
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(shared.clone().run(pending));
        Ok(SqlOutbound { shared, queue })
    }

    /// The SQL sent to the database for one message, with the database's placeholders.
    pub fn sql(&self) -> &str {
        self.shared.statement.sql()
    }

    /// Whether the statement is a plain INSERT written for a batch as multi-row statements
    /// (see the [module](self)).
    pub fn is_multi_row(&self) -> bool {
        self.shared.statement.multi_row().is_some()
    }

    /// Writes `messages` in one transaction: all of them, or (on an error) none.
    pub async fn write_batch(&self, messages: &[Message]) -> Result<(), SqlError> {
        let rows = messages
            .iter()
            .map(|m| self.shared.statement.bind_message(m))
            .collect::<Result<Vec<_>, _>>()?;
        self.shared.execute(&rows).await
    }
}

impl Shared {
    /// The writer task: takes what is queued, up to `batch_size`, writes it in one
    /// transaction and tells each caller; until every [`SqlOutbound`] is dropped.
    async fn run(self: Arc<Self>, mut pending: mpsc::UnboundedReceiver<Pending>) {
        let mut batch = Vec::with_capacity(self.batch_size);
        while pending.recv_many(&mut batch, self.batch_size).await > 0 {
            // A call dropped before its batch began (a timeout) is not written.
            batch.retain(|p| !p.done.is_closed());
            if !batch.is_empty() {
                self.write(batch.drain(..)).await;
            }
        }
    }

    /// Writes `batch` in one transaction, or each alone if that fails, and tells each caller.
    async fn write(&self, batch: impl Iterator<Item = Pending>) {
        let (rows, done): (Vec<_>, Vec<_>) = batch.map(|p| (p.values, p.done)).unzip();
        match self.execute(&rows).await {
            Ok(()) => done.into_iter().for_each(|d| drop(d.send(Ok(())))),
            Err(e) if rows.len() == 1 => {
                if let Some(d) = done.into_iter().next() {
                    let _ = d.send(Err(e));
                }
            }
            Err(e) => {
                tracing::debug!(error = %Escaped(&e), size = rows.len(), "batch failed: writing its messages one by one");
                for (values, d) in rows.iter().zip(done) {
                    let alone = self.execute(std::slice::from_ref(values)).await;
                    let _ = d.send(alone);
                }
            }
        }
    }

    /// Writes `rows` in one transaction: as multi-row statements when the statement is a plain
    /// INSERT, else one statement per row.
    async fn execute(&self, rows: &[Vec<SqlValue>]) -> Result<(), SqlError> {
        let failed = |source| SqlError::Execute {
            statement: self.statement.configured().to_owned(),
            source,
        };
        on_pool!(&self.pool, pool, Db => {
            let mut tx = pool.begin().await.map_err(failed)?;
            let written: Result<(), sqlx::Error> = async {
                match self.statement.multi_row() {
                    Some(multi) if rows.len() > 1 => {
                        for chunk in rows.chunks(multi.max_rows()) {
                            let sql = self.multi_row_sql(multi, chunk.len());
                            let mut query = sqlx::query::<Db>(&sql);
                            for values in chunk {
                                query = bind_all(query, values);
                            }
                            query.execute(&mut *tx).await?;
                        }
                    }
                    _ => {
                        for values in rows {
                            bind_all(sqlx::query::<Db>(self.statement.sql()), values)
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                }
                Ok(())
            }
            .await;
            match written {
                Ok(()) => tx.commit().await.map_err(failed),
                Err(e) => {
                    // Rolled back before the error is told, so the locks the transaction took
                    // are free by then (a dropped transaction rolls back later, in a task).
                    let _ = tx.rollback().await;
                    Err(failed(e))
                }
            }
        })
    }

    /// The multi-row statement for `rows` rows, built once per size.
    fn multi_row_sql(&self, multi: &MultiRow, rows: usize) -> Arc<str> {
        let mut built = self
            .multi_row_sql
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if built.len() >= MULTI_ROW_SIZES_KEPT && !built.contains_key(&rows) {
            built.clear();
        }
        built
            .entry(rows)
            .or_insert_with(|| multi.sql(rows).into())
            .clone()
    }
}

/// The future of a [`SqlOutbound`] call: its message's result once the writer has it.
#[derive(Debug)]
pub struct ResponseFuture {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Failed before reaching the writer (a parameter without a value).
    Failed(Option<SqlError>),
    Queued(oneshot::Receiver<Result<(), SqlError>>),
}

impl Future for ResponseFuture {
    type Output = Result<(), SqlError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            State::Failed(e) => Poll::Ready(Err(e.take().unwrap_or(SqlError::Cancelled))),
            // The writer task gone (its runtime shut down) is a cancelled write.
            State::Queued(result) => Pin::new(result)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(SqlError::Cancelled))),
        }
    }
}

impl tower::Service<Message> for SqlOutbound {
    type Response = ();
    type Error = SqlError;
    type Future = ResponseFuture;

    /// Always ready: the caller's concurrency bounds the messages queued.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), SqlError>> {
        Poll::Ready(Ok(()))
    }

    /// Binds the message's values and queues them for the writer at once.
    fn call(&mut self, msg: Message) -> Self::Future {
        let state = match self.shared.statement.bind_message(&msg) {
            Ok(values) => {
                let (done, result) = oneshot::channel();
                match self.queue.send(Pending { values, done }) {
                    Ok(()) => State::Queued(result),
                    Err(_) => State::Failed(Some(SqlError::Cancelled)),
                }
            }
            Err(e) => State::Failed(Some(e)),
        };
        ResponseFuture { state }
    }
}
