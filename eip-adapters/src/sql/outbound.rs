//! The outbound database adapter: each message runs one parameterized statement.
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
//! **Batching (group commit).** Calls that arrive while a transaction is being written (a
//! [`Consumer`](eip_core::endpoint::Consumer) with a concurrency above 1) queue up; the next
//! call to reach the database writes the queued messages, up to `batch_size`, in one
//! transaction, and every one of them completes when it commits. If that transaction fails,
//! each of its messages is written again in a transaction of its own, so one bad message
//! (a constraint violation) fails alone. [`SqlOutbound::write_batch`] writes a given slice in
//! one transaction, all or nothing.
//!
//! A parameter that finds no value in a message fails that message's call at once, naming the
//! parameter, before any database work: the consumer dead-letters it with that error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use eip_core::Message;
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::connection::{Connection, Pool, on_pool};
use super::error::SqlError;
use super::statement::Statement;
use super::value::{SqlValue, bind_all};

/// The outbound adapter's settings: plain data, as a flow file would hold them.
#[derive(Debug, Clone)]
pub struct SqlOutboundConfig {
    /// The database.
    pub connection: Connection,
    /// The statement run for each message, with named parameters.
    pub statement: String,
    /// The most messages written in one transaction (default 100).
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
}

struct Shared {
    pool: Pool,
    statement: Statement,
    batch_size: usize,
    /// Messages waiting for a writer.
    queue: Mutex<VecDeque<Pending>>,
    /// Held by the call writing a transaction.
    writer: tokio::sync::Mutex<()>,
}

struct Pending {
    values: Vec<SqlValue>,
    done: oneshot::Sender<Result<(), SqlError>>,
}

impl std::fmt::Debug for SqlOutbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlOutbound")
            .field("statement", &self.shared.statement.configured())
            .field("batch_size", &self.shared.batch_size)
            .finish()
    }
}

impl SqlOutbound {
    /// Connects and parses the statement.
    pub async fn connect(config: SqlOutboundConfig) -> Result<SqlOutbound, SqlError> {
        let pool = config.connection.connect().await?;
        let statement = Statement::parse(&config.statement, pool.dialect())?;
        Ok(SqlOutbound {
            shared: Arc::new(Shared {
                pool,
                statement,
                batch_size: config.batch_size.max(1),
                queue: Mutex::new(VecDeque::new()),
                writer: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The SQL sent to the database, with the database's placeholders.
    pub fn sql(&self) -> &str {
        self.shared.statement.sql()
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
    /// Queues `values` and writes, or waits for the call writing them.
    async fn submit(self: Arc<Self>, values: Vec<SqlValue>) -> Result<(), SqlError> {
        let (done, mut result) = oneshot::channel();
        self.queue
            .lock()
            .expect("queue lock")
            .push_back(Pending { values, done });
        loop {
            // Written by another call meanwhile, or this call's turn to write.
            let _writing = tokio::select! {
                r = &mut result => return r.unwrap_or(Err(SqlError::Cancelled)),
                writing = self.writer.lock() => writing,
            };
            if let Some(r) = settled(&mut result) {
                return r;
            }
            let batch: Vec<Pending> = {
                let mut queue = self.queue.lock().expect("queue lock");
                let n = queue.len().min(self.batch_size);
                queue.drain(..n).collect()
            };
            self.write(batch).await;
        }
    }

    /// Writes `batch` in one transaction, or each alone if that fails, and tells each caller.
    async fn write(&self, batch: Vec<Pending>) {
        let rows: Vec<Vec<SqlValue>> = batch.iter().map(|p| p.values.clone()).collect();
        match self.execute(&rows).await {
            Ok(()) => batch.into_iter().for_each(|p| drop(p.done.send(Ok(())))),
            Err(e) if batch.len() == 1 => {
                if let Some(p) = batch.into_iter().next() {
                    let _ = p.done.send(Err(e));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, size = batch.len(), "batch failed: writing its messages one by one");
                for p in batch {
                    let alone = self.execute(std::slice::from_ref(&p.values)).await;
                    let _ = p.done.send(alone);
                }
            }
        }
    }

    /// Runs the statement once per row, in one transaction.
    async fn execute(&self, rows: &[Vec<SqlValue>]) -> Result<(), SqlError> {
        let failed = |source| SqlError::Execute {
            statement: self.statement.configured().to_owned(),
            source,
        };
        on_pool!(&self.pool, pool, Db => {
            let mut tx = pool.begin().await.map_err(failed)?;
            for values in rows {
                bind_all(sqlx::query::<Db>(self.statement.sql()), values)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
            }
            tx.commit().await.map_err(failed)
        })
    }
}

/// The result, once the call that wrote this message has sent it.
fn settled(result: &mut oneshot::Receiver<Result<(), SqlError>>) -> Option<Result<(), SqlError>> {
    match result.try_recv() {
        Ok(r) => Some(r),
        Err(oneshot::error::TryRecvError::Empty) => None,
        // The writer was dropped mid-transaction: sqlx rolled it back.
        Err(oneshot::error::TryRecvError::Closed) => Some(Err(SqlError::Cancelled)),
    }
}

impl tower::Service<Message> for SqlOutbound {
    type Response = ();
    type Error = SqlError;
    type Future = BoxFuture<'static, Result<(), SqlError>>;

    /// Always ready: the connection pool bounds the work in progress.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), SqlError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let shared = self.shared.clone();
        let values = self.shared.statement.bind_message(&msg);
        Box::pin(async move { shared.submit(values?).await })
    }
}
