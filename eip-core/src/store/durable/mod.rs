//! The durable store: channels whose messages survive the process (Guaranteed Delivery).
//!
//! A [`Durable`] backend is one data directory holding the embedded store of `eip-store`
//! (redb underneath). Every channel built on it keeps its messages there: a point-to-point
//! channel in a queue of its name, each durable subscription of a publish-subscribe channel in a
//! queue of its own.
//!
//! - **A push completes once the message is on disk** (the commit holding it is fsynced). Many
//!   pushes in flight at once, from any channels of the directory, share one commit (group
//!   commit): throughput grows with the number of senders.
//! - **Acknowledgements are written lazily**, with the next commit or a few milliseconds later.
//!   A crash can lose an ack: the message is then delivered again, never lost.
//! - **After a restart** every message not acknowledged is delivered again, its redelivery count
//!   raised by one (it may have been delivered before the crash). Durable subscriptions come
//!   back with their channel and keep their place. Expiration is an absolute time in a header,
//!   so it holds across restarts.
//! - **Disk cap**: with `max_bytes` set, a push that would pass it waits for acknowledgements to
//!   free room, then fails with an error naming the directory and the limit. Nothing already
//!   accepted is dropped.
//! - **Damage**: a message whose record fails its checksum, or does not decode, is set aside
//!   into the store's quarantine with its bytes (see [`Durable::store`] and
//!   `quarantined`) and the channel goes on with the next one; records on a page that can not be
//!   read are counted and logged. [`check`] and [`salvage`] (`eip store check|salvage`) report
//!   and repair a damaged directory.
//! - **Memory**: messages waiting stay on disk; a queue keeps a window of at most a few hundred
//!   in memory (a selective consumer looks at most [`SELECTOR_WINDOW`] messages ahead).
//!
//! ```
//! use std::sync::Arc;
//! use eip_core::{Message, channel::PointToPoint, store::durable::Durable};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let dir = std::env::temp_dir().join(format!("eip-doc-{}", std::process::id()));
//! let store = Arc::new(Durable::open(&dir, Default::default()).unwrap());
//! let orders = PointToPoint::builder("orders").store(store.clone()).build().unwrap();
//! orders.send(Message::new("one widget")).await.unwrap(); // on disk now
//! let delivery = orders.receiver().recv().await.unwrap();
//! assert_eq!(delivery.message().payload_str(), Some("one widget"));
//! delivery.ack();
//! # drop(orders); drop(store); std::fs::remove_dir_all(&dir).unwrap();
//! # }
//! ```

mod browse;
pub mod codec;
mod queue;

use std::path::Path;
use std::sync::Arc;

pub use eip_store::{
    Batch, BatchTicket, KeyTable, QuarantinedRecord, QueueCheck, StoreCheck, StoreConfig,
    StoreError, check, salvage,
};
pub use queue::{DurableQueue, SELECTOR_WINDOW};

use super::{Backend, BackendError, MessageStore, Overflow, StoreFailure, Waiting};

/// The acknowledgement of a message a durable channel handed out, to be written in a
/// [`Batch`] of the caller's: see [`MessageStore::durable_ack`].
#[derive(Clone)]
pub struct DurableAck {
    log: eip_store::QueueLog,
    seq: u64,
}

impl DurableAck {
    /// `batch`, acknowledging the message too when it commits.
    pub fn into_batch(self, batch: Batch) -> Batch {
        batch.ack(&self.log, self.seq)
    }
}

impl std::fmt::Debug for DurableAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableAck")
            .field("queue", &self.log.name())
            .field("seq", &self.seq)
            .finish()
    }
}

/// The durable backend: the embedded store of one data directory.
#[derive(Clone)]
pub struct Durable {
    store: eip_store::DurableStore,
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable")
            .field("dir", &self.store.dir())
            .finish()
    }
}

impl Durable {
    /// Opens (or creates) the store in `dir`. Fails with a clear error if another process (or
    /// another handle in this one) has it open, or if a file there is damaged or not a store.
    pub fn open(dir: impl AsRef<Path>, config: StoreConfig) -> Result<Self, StoreError> {
        Ok(Durable {
            store: eip_store::DurableStore::open(dir, config)?,
        })
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// The embedded store, for its statistics and limits.
    pub fn store(&self) -> &eip_store::DurableStore {
        &self.store
    }

    /// Writes the acknowledgements not yet on disk now (they are written lazily otherwise).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.store.flush().await
    }

    fn error(&self, store: &str, error: StoreError) -> BackendError {
        BackendError {
            store: store.to_owned(),
            location: self.location(),
            cause: StoreFailure::new(error),
        }
    }
}

impl Backend for Durable {
    fn is_durable(&self) -> bool {
        true
    }

    fn open(
        &self,
        name: &str,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        let log = self.store.queue(name).map_err(|e| self.error(name, e))?;
        Ok(Arc::new(DurableQueue::new(log, capacity, overflow)))
    }

    fn names(&self, prefix: &str) -> Vec<String> {
        self.store
            .queue_names()
            .into_iter()
            .filter(|name| name.starts_with(prefix))
            .collect()
    }

    fn remove(&self, name: &str) -> Waiting<'_, Result<(), BackendError>> {
        let name = name.to_owned();
        Box::pin(async move {
            self.store
                .remove_queue(&name)
                .await
                .map(|_| ())
                .map_err(|e| self.error(&name, e))
        })
    }

    fn location(&self) -> String {
        self.store.dir().display().to_string()
    }
}
