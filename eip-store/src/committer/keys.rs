//! The key tables' side of a round: declarations, puts, removes and expiry, and each touched
//! table's `tables` row.
//!
//! A put replaces the entry under its key and frees the replaced entry's bytes (and its row in
//! the expiry index, if its expiry can be trusted); an expiry deletes only the entries whose own,
//! checksummed, expiry has come, so a damaged or stale index row never deletes a live entry
//! (both applied by the journal's [`Writer`], which journals them as it applies them).
//! The expired entries an expiry looks at are found beforehand in a read transaction
//! ([`Committer::gather_expired`]), so a damaged page of the index costs that expiry what it
//! could not read, not the whole round.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use redb::{ReadTransaction, ReadableTable, TableError};

use super::{Committer, Effect};
use crate::journal::Op;
use crate::journal::apply::Writer;
use crate::schema;
use crate::table::{EXPIRE_LIMIT, TableRegistry, TableState};

/// What one round does to one key table, applied to memory once the commit succeeded.
pub(super) struct TouchedTable {
    pub(super) table: Arc<TableState>,
    pub(super) added: u64,
    pub(super) freed: u64,
}

/// The key tables' part of a round.
pub(super) struct KeyRound<'a> {
    /// Tables declared earlier in this round, by name.
    declared: HashMap<String, Arc<TableState>>,
    touched: &'a mut HashMap<u32, TouchedTable>,
    registry: &'a TableRegistry,
    next_id: &'a mut u32,
}

impl<'a> KeyRound<'a> {
    pub(super) fn new(
        touched: &'a mut HashMap<u32, TouchedTable>,
        registry: &'a TableRegistry,
        next_id: &'a mut u32,
    ) -> Self {
        KeyRound {
            declared: HashMap::new(),
            touched,
            registry,
            next_id,
        }
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
        w: &mut Writer<'_, '_>,
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
        w.apply(&Op::DeclareTable { name, id })?;
        self.declared.insert(name.to_owned(), table.clone());
        *state = Some(table);
        *created = true;
        Ok(())
    }

    /// Stores `value` under `key`, replacing (and freeing) what was there.
    pub(super) fn put(
        &mut self,
        w: &mut Writer<'_, '_>,
        table: &Arc<TableState>,
        key: &[u8],
        value: &[u8],
        expires_at: u64,
    ) -> Result<(), redb::Error> {
        let applied = w.apply(&Op::Put {
            table: table.id,
            key,
            value,
            expires_at,
        })?;
        let t = self.touch(table);
        t.added += (key.len() + value.len()) as u64;
        t.freed += applied.freed;
        Ok(())
    }

    /// Deletes the entry under `key`, if there is one, freeing its bytes.
    pub(super) fn remove(
        &mut self,
        w: &mut Writer<'_, '_>,
        table: &Arc<TableState>,
        key: &[u8],
    ) -> Result<(), redb::Error> {
        let applied = w.apply(&Op::Remove {
            table: table.id,
            key,
        })?;
        self.touch(table).freed += applied.freed;
        Ok(())
    }

    /// Deletes the entries of `candidates` (expiry index rows found expired at `now_ms`) whose
    /// own expiry says they have expired; every candidate's index row goes.
    pub(super) fn expire(
        &mut self,
        w: &mut Writer<'_, '_>,
        table: &Arc<TableState>,
        now_ms: u64,
        candidates: &[(u64, Vec<u8>)],
    ) -> Result<(), redb::Error> {
        let applied = w.apply(&Op::Expire {
            table: table.id,
            now_ms,
            candidates: candidates
                .iter()
                .map(|(at, key)| (*at, key.as_slice()))
                .collect(),
        })?;
        self.touch(table).freed += applied.freed;
        Ok(())
    }

    /// Writes the `tables` row of every key table this round changed.
    pub(super) fn write_rows(&mut self, w: &mut Writer<'_, '_>) -> Result<(), redb::Error> {
        for t in self.touched.values() {
            if t.added == 0 && t.freed == 0 {
                continue;
            }
            let bytes = (t.table.bytes.load(Ordering::Acquire) + t.added).saturating_sub(t.freed);
            w.apply(&Op::TableRow {
                name: &t.table.name,
                id: t.table.id,
                bytes,
            })?;
        }
        Ok(())
    }
}

impl Committer {
    /// Finds, for each expiry of the round, the index rows expired at its time (at most
    /// [`EXPIRE_LIMIT`]), in a read transaction; damage met there ends the search early.
    pub(super) fn gather_expired(&self, effects: &mut [Effect]) {
        let expiring =
            |e: &Effect| matches!(e, Effect::Expire { candidates, .. } if candidates.is_empty());
        if !effects.iter().any(expiring) {
            return; // no read transaction for a round without expiries
        }
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
