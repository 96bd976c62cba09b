//! The seen keys of a dedupe step on a durable route: in memory for the decisions, and in a
//! key table of the flow's store, each written in the commit that acknowledges its message.
//!
//! A key's entry holds the time it was seen (milliseconds since the Unix epoch, 8 bytes big
//! endian) and expires with the window, so the table holds no more than a window's keys.
//! At start the step reads the table back: every key still inside its window is seen again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eip_core::channel::Channel;
use eip_core::message::{MessageId, now_millis};
use eip_core::store::durable::{Durable, KeyTable};
use eip_steps::dedupe::{InMemorySeen, Keeping, Seen, SeenStore};
use tokio::time::Instant;

use super::DedupeConfig;
use crate::compile::CompileError;

/// Expired keys are deleted from the table once in this many keeps.
const EXPIRE_EVERY: u64 = 4096;

/// Seen keys kept in memory and in the store.
pub(super) struct DurableSeen {
    memory: InMemorySeen,
    table: KeyTable,
    store: Arc<Durable>,
    /// The channel whose messages are acknowledged with their key.
    from: Channel,
    /// The durable subscription the route reads, on a publish-subscribe channel.
    subscription: String,
    kept: AtomicU64,
}

impl DurableSeen {
    /// The table `name` of `store`, read back: every key seen less than the window ago.
    pub(super) fn open(
        store: &Arc<Durable>,
        name: &str,
        from: &Channel,
        subscription: &str,
        config: &DedupeConfig,
    ) -> Result<Self, CompileError> {
        let failed = |source| CompileError::Store {
            dir: store.dir().to_owned(),
            source,
        };
        let table = store.store().table(name).map_err(failed)?;
        let mut entries: Vec<(u64, String)> = table
            .entries()
            .map_err(failed)?
            .into_iter()
            .filter_map(|(key, value)| {
                let seen_at = u64::from_be_bytes(value.as_ref().try_into().ok()?);
                Some((seen_at, String::from_utf8(key.to_vec()).ok()?))
            })
            .collect();
        // Oldest first: the memory store keeps its keys in the order they were seen.
        entries.sort_unstable();
        let mut memory = InMemorySeen::with_capacity(config.max_keys);
        let (now, now_ms) = (Instant::now(), now_millis());
        for (seen_at, key) in entries {
            let age = Duration::from_millis(now_ms.saturating_sub(seen_at));
            if age >= config.window {
                continue;
            }
            let at = now.checked_sub(age).unwrap_or(now);
            memory.record(&key, at, config.window);
        }
        Ok(DurableSeen {
            memory,
            table,
            store: store.clone(),
            from: from.clone(),
            subscription: subscription.to_owned(),
            kept: AtomicU64::new(0),
        })
    }
}

impl SeenStore for DurableSeen {
    fn seen(&self, key: &str, now: Instant, window: Duration) -> Seen {
        self.memory.seen(key, now, window)
    }

    fn record(&mut self, key: &str, now: Instant, window: Duration) -> Seen {
        self.memory.record(key, now, window)
    }

    fn forget(&mut self, key: &str) {
        self.memory.forget(key);
    }

    fn len(&self) -> usize {
        self.memory.len()
    }

    fn keep(&self, key: &str, window: Duration, message: MessageId) -> Keeping {
        let now = now_millis();
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        let mut batch = self.store.store().batch().put(
            &self.table,
            key.as_bytes().to_vec(),
            now.to_be_bytes().to_vec(),
            Some(now.saturating_add(window_ms)),
        );
        if let Some(ack) = self.from.durable_ack(&self.subscription, message) {
            batch = ack.into_batch(batch);
        }
        let committed = batch.commit();
        if self.kept.fetch_add(1, Ordering::Relaxed) % EXPIRE_EVERY == EXPIRE_EVERY - 1 {
            // Not waited for: expired keys already read as absent; this gives their room back.
            drop(self.table.expire(now));
        }
        Box::pin(async move {
            committed.await?;
            Ok(())
        })
    }
}
