//! The groups of an aggregate step on a durable route: in memory for the decisions, and in a
//! key table of the flow's store, each held message written in the commit that acknowledges
//! it, each group deleted in the commit that acknowledges the message that completed it.
//!
//! An entry's key is the group's key (its length, 4 bytes big endian, then its bytes) and the
//! message id (16 bytes); its value is when the group opened (milliseconds since the Unix
//! epoch, 8 bytes big endian) and the message as the store's codec writes it. At start the
//! step reads the table back into its groups, each opened when it was, so its timeout counts
//! from then.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use eip_core::channel::Channel;
use eip_core::message::{Message, MessageId, now_millis};
use eip_core::store::durable::{Batch, Durable, KeyTable, codec};
use eip_steps::Keeping;
use eip_steps::aggregate::{Added, Group, GroupRules, GroupStore, InMemoryGroups, Part, Refusal};
use tokio::time::Instant;

use crate::compile::CompileError;

/// Open groups kept in memory and in the store.
pub(super) struct DurableGroups {
    memory: InMemoryGroups,
    table: KeyTable,
    store: Arc<Durable>,
    /// The channel whose messages are acknowledged with their group's changes.
    from: Channel,
    /// The durable subscription the route reads, on a publish-subscribe channel.
    subscription: String,
}

/// What the table held at start: each message with the time its group opened.
pub(super) type Held = Vec<(Message, Instant)>;

impl DurableGroups {
    /// The table `name` of `store`, and what it holds (to [restore] into the aggregator).
    ///
    /// [restore]: eip_steps::aggregate::Aggregator::restore
    pub(super) fn open(
        store: &Arc<Durable>,
        name: &str,
        from: &Channel,
        subscription: &str,
    ) -> Result<(Self, Held), CompileError> {
        let failed = |source| CompileError::Store {
            dir: store.dir().to_owned(),
            source,
        };
        let table = store.store().table(name).map_err(failed)?;
        let mut entries: Vec<(u64, Bytes, Message)> = Vec::new();
        for (key, value) in table.entries().map_err(failed)? {
            match read_entry(&value) {
                Some((opened, msg)) => entries.push((opened, key, msg)),
                None => tracing::error!(
                    table = name,
                    "an aggregator's held message does not read back: passed over"
                ),
            }
        }
        // Groups in the order they opened, each one's messages by id (ids grow with time).
        entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let (now, now_ms) = (Instant::now(), now_millis());
        let held = entries
            .into_iter()
            .map(|(opened, _, msg)| {
                let age = Duration::from_millis(now_ms.saturating_sub(opened));
                (msg, now.checked_sub(age).unwrap_or(now))
            })
            .collect();
        let groups = DurableGroups {
            memory: InMemoryGroups::new(),
            table,
            store: store.clone(),
            from: from.clone(),
            subscription: subscription.to_owned(),
        };
        Ok((groups, held))
    }

    /// `batch`, acknowledging `id` too if it is the message the route is processing now.
    fn with_ack(&self, batch: Batch, id: MessageId) -> Batch {
        match self.from.durable_ack(&self.subscription, id) {
            Some(ack) => ack.into_batch(batch),
            None => batch,
        }
    }
}

/// The key of `id`'s entry in group `key`.
fn entry_key(key: &str, id: MessageId) -> Bytes {
    let mut bytes = BytesMut::with_capacity(4 + key.len() + 16);
    bytes.put_u32(u32::try_from(key.len()).unwrap_or(u32::MAX));
    bytes.put_slice(key.as_bytes());
    bytes.put_slice(id.as_uuid().as_bytes());
    bytes.freeze()
}

/// An entry's value: when its group opened, and the message.
fn entry_value(opened_ms: u64, msg: &Message) -> Bytes {
    let encoded = codec::encode(msg);
    let mut bytes = BytesMut::with_capacity(8 + encoded.len());
    bytes.put_u64(opened_ms);
    bytes.put_slice(&encoded);
    bytes.freeze()
}

fn read_entry(value: &Bytes) -> Option<(u64, Message)> {
    let opened = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
    let msg = codec::decode(&value.slice(8..)).ok()?;
    Some((opened, msg))
}

fn committing(batch: Batch) -> Keeping {
    let ticket = batch.commit();
    Box::pin(async move {
        ticket.await?;
        Ok(())
    })
}

impl GroupStore for DurableGroups {
    fn group(&self, key: &str) -> Option<&Group> {
        self.memory.group(key)
    }

    fn add(
        &mut self,
        key: &str,
        part: Part,
        now: &dyn Fn() -> Instant,
        rules: &dyn GroupRules,
    ) -> Result<Added, Box<(Refusal, Part)>> {
        self.memory.add(key, part, now, rules)
    }

    fn remove(&mut self, key: &str, close: bool) -> Option<Group> {
        self.memory.remove(key, close)
    }

    fn is_closed(&self, key: &str) -> bool {
        self.memory.is_closed(key)
    }

    fn len(&self) -> usize {
        self.memory.len()
    }

    fn oldest(&self) -> Option<(&str, Instant)> {
        self.memory.oldest()
    }

    fn keep_added(&self, key: &str, message: &Message) -> Option<Keeping> {
        let opened = self.memory.group(key)?.opened();
        let age = Instant::now().saturating_duration_since(opened);
        let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
        let opened_ms = now_millis().saturating_sub(age_ms);
        let batch = self.store.store().batch().put(
            &self.table,
            entry_key(key, message.id()),
            entry_value(opened_ms, message),
            None,
        );
        Some(committing(self.with_ack(batch, message.id())))
    }

    fn keep_removed(&self, key: &str, messages: &[MessageId]) -> Option<Keeping> {
        let mut batch = self.store.store().batch();
        for id in messages {
            batch = self.with_ack(batch.remove(&self.table, entry_key(key, *id)), *id);
        }
        Some(committing(batch))
    }
}
