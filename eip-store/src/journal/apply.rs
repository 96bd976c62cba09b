//! Applying ops to the database: the one place where a round's effects become table writes, for
//! the committer's rounds and for the replay of the journal alike.
//!
//! A [`Writer`] holds the tables of one write transaction open, applies each [`Op`] and says
//! what it found ([`Applied`]: whether a deleted record was there, the bytes an op freed, how
//! many records a removed queue held). In the committer it also appends each op's encoding to
//! the round's journal record, so what is journaled is exactly what was applied. A replay ends
//! with [`Writer::finish`], which writes the last round's number into the store's metadata in
//! the same transaction (the committer's checkpoints write it too): an open then knows which
//! journal records the file already holds. Every op writes explicit values, so rounds applied
//! again onto the state they led to change nothing (the tests check it for every suffix of a
//! history): a file holding rounds past the number it records is brought up to date the same way.

use std::collections::HashMap;
use std::ops::Bound;

use redb::{CursorError, ReadableTable, ReadableTableMetadata, Table, WriteTransaction};

use super::op::Op;
use crate::frame;
use crate::schema::{self, ExpiryKey, META, QUARANTINE, QUEUES, ROUND_KEY, TABLES};
use crate::table::entry::{self, NEVER};

/// What applying one op found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// A deleted record was there to delete.
    pub(crate) found: bool,
    /// Payload (or key and value) bytes the op freed.
    pub(crate) freed: u64,
    /// Records a removed queue held, or a range delete found.
    pub(crate) count: u64,
}

/// The two tables of one key table.
struct KeyTables<'txn> {
    entries: Table<'txn, &'static [u8], &'static [u8]>,
    expiry: Table<'txn, ExpiryKey, ()>,
}

/// The tables of one write transaction, opened on first use, and the record being journaled.
pub(crate) struct Writer<'txn, 'a> {
    txn: &'txn WriteTransaction,
    queues: Table<'txn, &'static str, (u32, u64, u64)>,
    records: HashMap<u32, Table<'txn, u64, &'static [u8]>>,
    quarantine: Option<Table<'txn, schema::QuarantineKey, schema::QuarantineValue>>,
    rows: Option<Table<'txn, &'static str, (u32, u64)>>,
    keys: HashMap<u32, KeyTables<'txn>>,
    /// The journal record the applied ops are encoded into, if this is a round of the committer.
    record: Option<&'a mut Vec<u8>>,
}

impl<'txn, 'a> Writer<'txn, 'a> {
    pub(crate) fn new(
        txn: &'txn WriteTransaction,
        record: Option<&'a mut Vec<u8>>,
    ) -> Result<Self, redb::Error> {
        Ok(Writer {
            txn,
            queues: txn.open_table(QUEUES)?,
            records: HashMap::new(),
            quarantine: None,
            rows: None,
            keys: HashMap::new(),
            record,
        })
    }

    /// Applies `op`, journaling it first.
    pub(crate) fn apply(&mut self, op: &Op<'_>) -> Result<Applied, redb::Error> {
        if let Some(record) = self.record.as_deref_mut() {
            op.encode(record);
        }
        let mut applied = Applied::default();
        match op {
            Op::Append { queue, seq, record } => {
                let frame = frame::encode(*queue, *seq, record);
                self.records(*queue)?.insert(*seq, frame.as_slice())?;
            }
            Op::Delete { queue, seq } => {
                let freed = self
                    .records(*queue)?
                    .remove(*seq)?
                    .map(|v| frame::payload_len(v.value()));
                applied.found = freed.is_some();
                applied.freed = freed.unwrap_or(0);
            }
            Op::DeleteRange { queue, first, last } => {
                let mut found = 0;
                applied.freed = self.delete_range(*queue, *first, *last, |_| found += 1)?;
                applied.found = found > 0;
                applied.count = found;
            }
            Op::SetAside {
                name,
                seq,
                bytes,
                reason,
                at,
            } => {
                let quarantine = match &mut self.quarantine {
                    Some(table) => table,
                    None => self.quarantine.insert(self.txn.open_table(QUARANTINE)?),
                };
                quarantine.insert((*name, *seq), (*bytes, *reason, *at))?;
            }
            Op::DeclareQueue { name, id } => {
                self.queues.insert(*name, (*id, 0, 0))?;
                self.records(*id)?;
            }
            Op::RemoveQueue { name, id } => {
                applied.count = self.records(*id)?.len()?;
                self.records.remove(id);
                self.txn
                    .delete_table(schema::records(&schema::records_table_name(*id)))?;
                self.queues.remove(*name)?;
            }
            Op::QueueRow {
                name,
                id,
                head,
                bytes,
            } => {
                self.queues.insert(*name, (*id, *head, *bytes))?;
            }
            Op::DeclareTable { name, id } => {
                self.rows()?.insert(*name, (*id, 0))?;
                self.key_tables(*id)?;
            }
            Op::Put {
                table,
                key,
                value,
                expires_at,
            } => {
                let stored = entry::encode(*table, key, *expires_at, value);
                let open = self.key_tables(*table)?;
                let old = open
                    .entries
                    .insert(*key, stored.as_slice())?
                    .map(|old| old.value().to_vec());
                if let Some(old) = old {
                    applied.freed = forget(open, *table, key, &old)?;
                }
                if *expires_at != NEVER {
                    open.expiry.insert((*expires_at, *key), ())?;
                }
            }
            Op::Remove { table, key } => {
                let open = self.key_tables(*table)?;
                let old = open.entries.remove(*key)?.map(|old| old.value().to_vec());
                if let Some(old) = old {
                    applied.freed = forget(open, *table, key, &old)?;
                }
            }
            Op::Expire {
                table,
                now_ms,
                candidates,
            } => {
                let open = self.key_tables(*table)?;
                for (at, key) in candidates {
                    open.expiry.remove((*at, *key))?;
                    let Some(stored) = open.entries.get(*key)?.map(|v| v.value().to_vec()) else {
                        continue;
                    };
                    match entry::decode(*table, key, &stored) {
                        Some(entry) if entry.expires_at == *at && entry.is_expired(*now_ms) => {
                            open.entries.remove(*key)?;
                            applied.freed += entry::live_len(key, &stored);
                        }
                        // Put again since (with another expiry), or damaged: not this row's to delete
                        _ => {}
                    }
                }
            }
            Op::TableRow { name, id, bytes } => {
                self.rows()?.insert(*name, (*id, *bytes))?;
            }
        }
        Ok(applied)
    }

    /// Deletes records `first..=last` of `queue` in one pass over its B-tree (one descent, each
    /// leaf rewritten once, where a delete per record rewrites its leaf per record), without
    /// journaling; calls `found` with each sequence number that was there, in order. Answers the
    /// payload bytes freed.
    fn delete_range(
        &mut self,
        queue: u32,
        first: u64,
        last: u64,
        mut found: impl FnMut(u64),
    ) -> Result<u64, redb::Error> {
        let mut freed = 0;
        self.records(queue)?.retain_in(first..=last, |seq, frame| {
            found(seq);
            freed += frame::payload_len(frame);
            false
        })?;
        Ok(freed)
    }

    /// Journals and applies [`Op::DeleteRange`], calling `found` with each sequence number
    /// that was there; answers the payload bytes freed.
    pub(crate) fn apply_delete_range(
        &mut self,
        queue: u32,
        first: u64,
        last: u64,
        found: impl FnMut(u64),
    ) -> Result<u64, redb::Error> {
        if let Some(record) = self.record.as_deref_mut() {
            Op::DeleteRange { queue, first, last }.encode(record);
        }
        self.delete_range(queue, first, last, found)
    }

    /// Journals and applies one [`Op::Append`] per record of `records`, the first with sequence
    /// number `first`, the next with the next one: records appended together in one round, each
    /// past every record of the queue, go in through one cursor at the end of its B-tree (its
    /// inserts gathered per leaf) instead of one descent and one rewrite of a leaf each. A record
    /// that is not past the last one in the table (never, unless the table holds records past
    /// the head) is inserted on its own, over what is there, as [`Op::Append`] does.
    pub(crate) fn apply_appends(
        &mut self,
        queue: u32,
        first: u64,
        records: &[&[u8]],
    ) -> Result<(), redb::Error> {
        if let Some(journal) = self.record.as_deref_mut() {
            for (seq, record) in (first..).zip(records) {
                Op::Append { queue, seq, record }.encode(journal);
            }
        }
        let table = self.records(queue)?;
        let mut cursor = table.upper_bound_mut(Bound::<u64>::Unbounded)?;
        let mut rest = None;
        for (i, (seq, record)) in (first..).zip(records).enumerate() {
            let frame = frame::encode(queue, seq, record);
            match cursor.insert_before(seq, frame.as_slice()) {
                Ok(()) => {}
                Err(CursorError::UnorderedKey) => {
                    rest = Some(i);
                    break;
                }
                Err(error) => return Err(error.into()),
            }
        }
        cursor.close()?;
        if let Some(i) = rest {
            for (seq, record) in (first..).zip(records).skip(i) {
                let frame = frame::encode(queue, seq, record);
                table.insert(seq, frame.as_slice())?;
            }
        }
        Ok(())
    }

    /// Records that the transaction holds every round up to `round`.
    pub(crate) fn finish(self, round: u64) -> Result<(), redb::Error> {
        let mut meta = self.txn.open_table(META)?;
        meta.insert(ROUND_KEY, round)?;
        Ok(())
    }

    fn records(&mut self, queue: u32) -> Result<&mut Table<'txn, u64, &'static [u8]>, redb::Error> {
        if !self.records.contains_key(&queue) {
            let name = schema::records_table_name(queue);
            let table = self.txn.open_table(schema::records(&name))?;
            self.records.insert(queue, table);
        }
        self.records
            .get_mut(&queue)
            .ok_or_else(|| redb::Error::Corrupted("a table just opened is gone".into()))
    }

    fn rows(&mut self) -> Result<&mut Table<'txn, &'static str, (u32, u64)>, redb::Error> {
        if self.rows.is_none() {
            self.rows = Some(self.txn.open_table(TABLES)?);
        }
        self.rows
            .as_mut()
            .ok_or_else(|| redb::Error::Corrupted("a table just opened is gone".into()))
    }

    fn key_tables(&mut self, table: u32) -> Result<&mut KeyTables<'txn>, redb::Error> {
        if !self.keys.contains_key(&table) {
            let open = KeyTables {
                entries: self
                    .txn
                    .open_table(schema::keys(&schema::keys_table_name(table)))?,
                expiry: self
                    .txn
                    .open_table(schema::expiry(&schema::expiry_table_name(table)))?,
            };
            self.keys.insert(table, open);
        }
        self.keys
            .get_mut(&table)
            .ok_or_else(|| redb::Error::Corrupted("a table just opened is gone".into()))
    }
}

/// After the entry `old` under `key` was replaced or deleted: its expiry index row goes (if its
/// expiry can be trusted); answers the bytes it freed.
fn forget(
    open: &mut KeyTables<'_>,
    table: u32,
    key: &[u8],
    old: &[u8],
) -> Result<u64, redb::Error> {
    if let Some(entry) = entry::decode(table, key, old)
        && entry.expires_at != NEVER
    {
        open.expiry.remove((entry.expires_at, key))?;
    }
    Ok(entry::live_len(key, old))
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
