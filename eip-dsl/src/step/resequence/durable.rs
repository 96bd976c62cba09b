//! The state of a resequence step on a durable route: in memory for the decisions, and in a
//! key table of the flow's store. A held message is written in the commit that acknowledges
//! it; a released run is deleted, with the next number to release, in the commit after the
//! rest of the route took it (acknowledging the message that released it, if it is the one
//! the route is processing).
//!
//! The table's entries:
//! - `h` and the number (8 bytes big endian): a held message, as the store's codec writes it;
//! - `n`: the next number to release (8 bytes big endian);
//! - `w`: since when the step waits for it with messages held (milliseconds since the Unix
//!   epoch, 8 bytes big endian), absent when nothing is held;
//! - `s` and the first number of a gap given up: its last number (so a late message after a
//!   restart still goes on rather than count as a duplicate; the last 1 024 gaps).
//!
//! At start the table is read back: `n` is the next number, a held message above it is held
//! again, the gap timer counts from `w`. A held message at or below `n` was released and the
//! rest of the route refused it (or the process stopped first): it goes out again first.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use eip_core::channel::Channel;
use eip_core::message::{Message, MessageId, now_millis};
use eip_core::store::durable::{Batch, Durable, KeyTable, codec};
use eip_steps::Keeping;
use eip_steps::resequence::{
    InMemorySequence, Released, SKIPPED_REMEMBERED, SequenceStore, Skipped,
};
use tokio::time::Instant;

use crate::compile::CompileError;

const HELD: u8 = b'h';
const NEXT: &[u8] = b"n";
const WAITING: &[u8] = b"w";
const SKIP: u8 = b's';

/// A resequencer's state kept in memory and in the store.
pub(super) struct DurableSequence {
    memory: InMemorySequence,
    table: KeyTable,
    store: Arc<Durable>,
    /// The channel whose messages are acknowledged with the state's changes.
    from: Channel,
    /// The durable subscription the route reads, on a publish-subscribe channel.
    subscription: String,
    skips: Mutex<Skips>,
}

/// The gaps given up: those not written yet, and the ones in the table, oldest first (the
/// oldest is deleted beyond the bound, as the memory state forgets it).
#[derive(Default)]
struct Skips {
    unwritten: Vec<(u64, u64)>,
    written: VecDeque<u64>,
    forgotten: Vec<u64>,
}

/// What the table held at start.
pub(super) struct ReadBack {
    /// Messages released and not sent, in order: they go out first.
    pub(super) unsent: Vec<(u64, Message)>,
    /// How many are held again.
    pub(super) held: usize,
    /// The next number to release.
    pub(super) next: u64,
    /// Entries that did not read back (passed over).
    pub(super) unreadable: usize,
}

/// The table's entries, sorted out.
#[derive(Default)]
struct Entries {
    held: BTreeMap<u64, Message>,
    next: Option<u64>,
    waiting_ms: Option<u64>,
    skips: Vec<(u64, u64)>,
    unreadable: usize,
}

impl DurableSequence {
    /// The table `name` of `store`, read back (`first` is the next number of a new table).
    pub(super) fn open(
        store: &Arc<Durable>,
        name: &str,
        from: &Channel,
        subscription: &str,
        first: u64,
    ) -> Result<(Self, ReadBack), CompileError> {
        let failed = |source| CompileError::Store {
            dir: store.dir().to_owned(),
            source,
        };
        let table = store.store().table(name).map_err(failed)?;
        let entries = read_entries(table.entries().map_err(failed)?);
        let mut next = entries.next.unwrap_or(first);
        let mut held = entries.held;
        // Below `next`: released, not sent. `next` itself held: a run that is due.
        let mut unsent: Vec<(u64, Message)> = Vec::new();
        let above = held.split_off(&next);
        unsent.extend(held);
        let mut held = above;
        while let Some(msg) = held.remove(&next) {
            unsent.push((next, msg));
            next = next.saturating_add(1);
        }
        let waiting_since = entries.waiting_ms.map(|ms| {
            let (now, now_ms) = (Instant::now(), now_millis());
            let age = Duration::from_millis(now_ms.saturating_sub(ms));
            now.checked_sub(age).unwrap_or(now)
        });
        let mut skips = entries.skips;
        skips.sort_unstable();
        let skips_log = Skips {
            written: skips.iter().map(|(from, _)| *from).collect(),
            ..Skips::default()
        };
        let read = ReadBack {
            unsent,
            held: held.len(),
            next,
            unreadable: entries.unreadable,
        };
        let memory = InMemorySequence::restored(next, held, waiting_since, skips);
        let sequence = DurableSequence {
            memory,
            table,
            store: store.clone(),
            from: from.clone(),
            subscription: subscription.to_owned(),
            skips: Mutex::new(skips_log),
        };
        Ok((sequence, read))
    }

    /// `batch`, acknowledging `id` too if it is the message the route is processing now.
    fn with_ack(&self, batch: Batch, id: MessageId) -> Batch {
        match self.from.durable_ack(&self.subscription, id) {
            Some(ack) => ack.into_batch(batch),
            None => batch,
        }
    }

    fn skips(&self) -> MutexGuard<'_, Skips> {
        self.skips.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `batch` with since when the step waits as the memory state has it now, and the gaps
    /// given up since the last commit.
    fn with_state(&self, mut batch: Batch) -> Batch {
        batch = match self.memory.waiting_since() {
            Some(since) => {
                let age = Instant::now().saturating_duration_since(since);
                let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
                let since_ms = now_millis().saturating_sub(age_ms);
                batch.put(&self.table, WAITING, number(since_ms), None)
            }
            None => batch.remove(&self.table, WAITING),
        };
        let mut skips = self.skips();
        for (from, to) in std::mem::take(&mut skips.unwritten) {
            batch = batch.put(&self.table, skip_key(from), number(to), None);
        }
        for from in std::mem::take(&mut skips.forgotten) {
            batch = batch.remove(&self.table, skip_key(from));
        }
        batch
    }
}

/// Sorts out the table's entries; one that does not read is counted and logged.
fn read_entries(raw: Vec<(Bytes, Bytes)>) -> Entries {
    let mut entries = Entries::default();
    for (key, value) in raw {
        let read = match key.split_first() {
            Some((&HELD, n)) => read_number(n)
                .zip(codec::decode(&value).ok())
                .map(|(n, msg)| entries.held.insert(n, msg))
                .is_some(),
            Some((&SKIP, from)) => read_number(from)
                .zip(read_number(&value))
                .map(|skip| entries.skips.push(skip))
                .is_some(),
            _ if key.as_ref() == NEXT => {
                entries.next = read_number(&value);
                entries.next.is_some()
            }
            _ if key.as_ref() == WAITING => {
                entries.waiting_ms = read_number(&value);
                entries.waiting_ms.is_some()
            }
            _ => false,
        };
        if !read {
            entries.unreadable += 1;
        }
    }
    entries
}

fn read_number(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

fn number(n: u64) -> Bytes {
    Bytes::copy_from_slice(&n.to_be_bytes())
}

/// A key: its tag, then `n`.
fn tagged(tag: u8, n: u64) -> Bytes {
    let mut bytes = BytesMut::with_capacity(9);
    bytes.put_u8(tag);
    bytes.put_u64(n);
    bytes.freeze()
}

fn held_key(n: u64) -> Bytes {
    tagged(HELD, n)
}

fn skip_key(from: u64) -> Bytes {
    tagged(SKIP, from)
}

fn committing(batch: Batch) -> Keeping {
    let ticket = batch.commit();
    Box::pin(async move {
        ticket.await?;
        Ok(())
    })
}

impl SequenceStore for DurableSequence {
    fn next(&self) -> u64 {
        self.memory.next()
    }

    fn is_held(&self, n: u64) -> bool {
        self.memory.is_held(n)
    }

    fn was_skipped(&self, n: u64) -> bool {
        self.memory.was_skipped(n)
    }

    fn held(&self) -> usize {
        self.memory.held()
    }

    fn run_after(&self, n: u64) -> usize {
        self.memory.run_after(n)
    }

    fn waiting_since(&self) -> Option<Instant> {
        self.memory.waiting_since()
    }

    fn hold(&mut self, n: u64, msg: Message, now: Instant) {
        self.memory.hold(n, msg, now);
    }

    fn release(&mut self, msg: Message, now: Instant) -> Vec<Message> {
        self.memory.release(msg, now)
    }

    fn skip_gap(&mut self, now: Instant) -> Option<Skipped> {
        let skipped = self.memory.skip_gap(now)?;
        let skips = self.skips.get_mut().unwrap_or_else(|e| e.into_inner());
        skips.unwritten.push((skipped.from, skipped.to));
        skips.written.push_back(skipped.from);
        if skips.written.len() > SKIPPED_REMEMBERED
            && let Some(oldest) = skips.written.pop_front()
        {
            skips.forgotten.push(oldest);
        }
        Some(skipped)
    }

    fn keeps(&self) -> bool {
        true
    }

    fn keep_held(&self, n: u64) -> Option<Keeping> {
        let msg = self.memory.message(n)?;
        let batch =
            self.store
                .store()
                .batch()
                .put(&self.table, held_key(n), codec::encode(msg), None);
        let batch = self.with_ack(self.with_state(batch), msg.id());
        Some(committing(batch))
    }

    fn keep_released(&self, released: &Released<'_>) -> Option<Keeping> {
        let mut batch = self.store.store().batch();
        for (n, id) in released.sent {
            batch = self.with_ack(batch.remove(&self.table, held_key(*n)), *id);
        }
        for (n, msg) in released.unsent {
            let put = batch.put(&self.table, held_key(*n), codec::encode(msg), None);
            batch = self.with_ack(put, msg.id());
        }
        batch = batch.put(&self.table, NEXT, number(released.next), None);
        Some(committing(self.with_state(batch)))
    }
}
