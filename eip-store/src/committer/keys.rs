//! The key tables' side of a round: declarations, puts, removes and expiry, and each touched
//! table's `tables` row.
//!
//! A put replaces the entry under its key and frees the replaced entry's bytes (and its row in
//! the expiry index, if its expiry can be trusted); an expiry deletes only the entries whose own,
//! checksummed, expiry has come, so a damaged or stale index row never deletes a live entry.
//! The expired entries an expiry looks at are found beforehand in a read transaction
//! ([`Committer::gather_expired`]), so a damaged page of the index costs that expiry what it
//! could not read, not the whole round.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use redb::{ReadTransaction, ReadableTable, Table, TableError, WriteTransaction};

use super::{Committer, Effect};
use crate::schema::{self, ExpiryKey, TABLES};
use crate::table::entry::{self, NEVER};
use crate::table::{EXPIRE_LIMIT, TableRegistry, TableState};

/// What one round does to one key table, applied to memory once the commit succeeded.
pub(super) struct TouchedTable {
    pub(super) table: Arc<TableState>,
    pub(super) added: u64,
    pub(super) freed: u64,
}

/// The two tables of one key table, open in a round.
struct Open<'txn> {
    entries: Table<'txn, &'static [u8], &'static [u8]>,
    expiry: Table<'txn, ExpiryKey, ()>,
}

/// The key tables' part of a round's write transaction.
pub(super) struct KeyRound<'txn, 'a> {
    txn: &'txn WriteTransaction,
    /// The `tables` table, opened (or created) by the first declaration of the round.
    rows: Option<Table<'txn, &'static str, (u32, u64)>>,
    open: HashMap<u32, Open<'txn>>,
    /// Tables declared earlier in this round, by name.
    declared: HashMap<String, Arc<TableState>>,
    touched: &'a mut HashMap<u32, TouchedTable>,
    registry: &'a TableRegistry,
    next_id: &'a mut u32,
}

impl<'txn, 'a> KeyRound<'txn, 'a> {
    pub(super) fn new(
        txn: &'txn WriteTransaction,
        touched: &'a mut HashMap<u32, TouchedTable>,
        registry: &'a TableRegistry,
        next_id: &'a mut u32,
    ) -> Self {
        KeyRound {
            txn,
            rows: None,
            open: HashMap::new(),
            declared: HashMap::new(),
            touched,
            registry,
            next_id,
        }
    }

    fn rows(&mut self) -> Result<&mut Table<'txn, &'static str, (u32, u64)>, redb::Error> {
        if self.rows.is_none() {
            self.rows = Some(self.txn.open_table(TABLES)?);
        }
        self.rows
            .as_mut()
            .ok_or_else(|| redb::Error::Corrupted("a table just opened is gone".into()))
    }

    fn tables(&mut self, table: &TableState) -> Result<&mut Open<'txn>, redb::Error> {
        if !self.open.contains_key(&table.id) {
            let open = Open {
                entries: self.txn.open_table(schema::keys(&table.keys))?,
                expiry: self.txn.open_table(schema::expiry(&table.expiry))?,
            };
            self.open.insert(table.id, open);
        }
        self.open
            .get_mut(&table.id)
            .ok_or_else(|| redb::Error::Corrupted("a table just opened is gone".into()))
    }

    fn touch(&mut self, table: &Arc<TableState>) -> &mut TouchedTable {
        self.touched
            .entry(table.id)
            .or_insert_with(|| TouchedTable {
                table: table.clone(),
                added: 0,
                freed: 0,
            })
    }

    /// Creates the key table `name` with the next table id unless it exists; `state` is the
    /// table either way, `created` whether this made it.
    pub(super) fn declare(
        &mut self,
        name: &str,
        state: &mut Option<Arc<TableState>>,
        created: &mut bool,
    ) -> Result<(), redb::Error> {
        let existing = match self.declared.get(name) {
            Some(table) => Some(table.clone()),
            None => crate::table::lock(self.registry).get(name).cloned(),
        };
        if let Some(existing) = existing {
            *state = Some(existing);
            return Ok(());
        }
        let id = *self.next_id;
        *self.next_id = id.checked_add(1).ok_or_else(|| {
            redb::Error::Corrupted("no key table id left (2^32 tables declared)".into())
        })?;
        let table = Arc::new(TableState::new(name.to_owned(), id, 0));
        self.rows()?.insert(name, (id, 0))?;
        self.tables(&table)?;
        self.declared.insert(name.to_owned(), table.clone());
        *state = Some(table);
        *created = true;
        Ok(())
    }

    /// Stores `value` under `key`, replacing (and freeing) what was there.
    pub(super) fn put(
        &mut self,
        table: &Arc<TableState>,
        key: &[u8],
        value: &[u8],
        expires_at: u64,
    ) -> Result<(), redb::Error> {
        let stored = entry::encode(table.id, key, expires_at, value);
        let open = self.tables(table)?;
        let old = open
            .entries
            .insert(key, stored.as_slice())?
            .map(|old| old.value().to_vec());
        let freed = match old {
            Some(old) => forget(open, table, key, &old)?,
            None => 0,
        };
        if expires_at != NEVER {
            open.expiry.insert((expires_at, key), ())?;
        }
        let t = self.touch(table);
        t.added += (key.len() + value.len()) as u64;
        t.freed += freed;
        Ok(())
    }

    /// Deletes the entry under `key`, if there is one, freeing its bytes.
    pub(super) fn remove(
        &mut self,
        table: &Arc<TableState>,
        key: &[u8],
    ) -> Result<(), redb::Error> {
        let open = self.tables(table)?;
        let old = open.entries.remove(key)?.map(|old| old.value().to_vec());
        let freed = match old {
            Some(old) => forget(open, table, key, &old)?,
            None => 0,
        };
        self.touch(table).freed += freed;
        Ok(())
    }

    /// Deletes the entries of `candidates` (expiry index rows found expired at `now_ms`) whose
    /// own expiry says they have expired; every candidate's index row goes.
    pub(super) fn expire(
        &mut self,
        table: &Arc<TableState>,
        now_ms: u64,
        candidates: &[(u64, Vec<u8>)],
    ) -> Result<(), redb::Error> {
        let open = self.tables(table)?;
        let mut freed = 0;
        for (at, key) in candidates {
            open.expiry.remove((*at, key.as_slice()))?;
            let Some(stored) = open
                .entries
                .get(key.as_slice())?
                .map(|v| v.value().to_vec())
            else {
                continue;
            };
            match entry::decode(table.id, key, &stored) {
                Some(entry) if entry.expires_at == *at && entry.is_expired(now_ms) => {
                    open.entries.remove(key.as_slice())?;
                    freed += entry::live_len(key, &stored);
                }
                // Put again since (with another expiry), or damaged: not this row's to delete
                _ => {}
            }
        }
        self.touch(table).freed += freed;
        Ok(())
    }

    /// Writes the `tables` row of every key table this round changed.
    pub(super) fn write_rows(&mut self) -> Result<(), redb::Error> {
        let rows: Vec<(Arc<TableState>, u64)> = self
            .touched
            .values()
            .filter(|t| t.added > 0 || t.freed > 0)
            .map(|t| {
                let bytes = t.table.bytes.load(Ordering::Acquire) + t.added;
                (t.table.clone(), bytes.saturating_sub(t.freed))
            })
            .collect();
        for (table, bytes) in rows {
            self.rows()?
                .insert(table.name.as_str(), (table.id, bytes))?;
        }
        Ok(())
    }
}

/// After the entry `old` under `key` was replaced or deleted: its expiry index row goes (if its
/// expiry can be trusted); answers the bytes it freed.
fn forget(
    open: &mut Open<'_>,
    table: &TableState,
    key: &[u8],
    old: &[u8],
) -> Result<u64, redb::Error> {
    if let Some(entry) = entry::decode(table.id, key, old)
        && entry.expires_at != NEVER
    {
        open.expiry.remove((entry.expires_at, key))?;
    }
    Ok(entry::live_len(key, old))
}

impl Committer {
    /// Finds, for each expiry of the round, the index rows expired at its time (at most
    /// [`EXPIRE_LIMIT`]), in a read transaction; damage met there ends the search early.
    pub(super) fn gather_expired(&self, effects: &mut [Effect]) {
        let Ok((db, _)) = self.slot.get() else {
            return; // the write fails the same way, and answers
        };
        let Ok(Ok(txn)) = crate::quiet::catch(|| redb::ReadableDatabase::begin_read(&*db)) else {
            return;
        };
        for effect in effects {
            if let Effect::Expire {
                table,
                now_ms,
                candidates,
                ..
            } = effect
                && candidates.is_empty()
            {
                let mut found = Vec::new();
                let _ = crate::quiet::catch(|| expired_rows(&txn, table, *now_ms, &mut found));
                *candidates = found;
            }
        }
    }
}

/// The expiry index rows of `table` at or before `now_ms`, into `found`.
fn expired_rows(
    txn: &ReadTransaction,
    table: &TableState,
    now_ms: u64,
    found: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(), redb::Error> {
    let index = match txn.open_table(schema::expiry(&table.expiry)) {
        Ok(index) => index,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for row in index.iter()? {
        let (key, ()) = row.map(|(k, v)| (k, v.value()))?;
        let (at, key) = key.value();
        if at > now_ms || found.len() >= EXPIRE_LIMIT {
            break;
        }
        found.push((at, key.to_vec()));
    }
    Ok(())
}
