//! Reading a key table around damage: a lookup that meets a damaged page reads as absent and is
//! counted; a read of the whole table goes from both ends towards the damage.
//!
//! A B-tree keyed by bytes can not be probed key by key the way a queue's sequence numbers can
//! (`scan`): nothing says which keys a damaged page held. A forward walk stops at the first page
//! it can not read; a backward walk from the last key then reads every entry after the damage,
//! down to where the forward walk stopped. What neither reaches (the entries of the damaged
//! pages, and of any pages between two of them) is counted against the table's length, which
//! redb keeps apart from the pages.

use bytes::Bytes;
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, TableError};

use super::{KeyTable, TableState, entry};
use crate::scan::is_damage;
use crate::{StoreError, quiet, schema};

/// An entry as stored: key and stored bytes.
pub(crate) type Raw = (Vec<u8>, Vec<u8>);

/// A key table's entries table, read.
type Entries = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// The entries table of `state`, or `None` if it has none yet.
fn open(txn: &ReadTransaction, state: &TableState) -> Result<Option<Entries>, redb::Error> {
    match txn.open_table(schema::keys(&state.keys)) {
        Ok(table) => Ok(Some(table)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What a read of the engine came to: its answer, or damage met on the way.
fn settle<T>(
    file: &std::path::Path,
    read: Result<Result<T, redb::Error>, String>,
) -> Result<Option<T>, StoreError> {
    match read {
        Ok(Ok(found)) => Ok(Some(found)),
        Ok(Err(error)) if !is_damage(&error) => Err(StoreError::from_redb(file, error)),
        Ok(Err(_)) | Err(_) => Ok(None),
    }
}

/// The value under `key` at `now_ms`; see [`KeyTable::get_at`].
pub(super) fn get(table: &KeyTable, key: &[u8], now_ms: u64) -> Result<Option<Bytes>, StoreError> {
    let state = &table.state;
    let file = &table.shared.file;
    let stored = table.shared.read(|txn| {
        let looked = quiet::catch(|| -> Result<Option<Vec<u8>>, redb::Error> {
            let Some(entries) = open(txn, state)? else {
                return Ok(None);
            };
            Ok(entries.get(key)?.map(|v| v.value().to_vec()))
        });
        settle(file, looked)
    })?;
    let stored = match stored {
        Some(Some(stored)) => stored,
        Some(None) => return Ok(None),
        None => {
            state.note_failed_lookup(file, key);
            return Ok(None);
        }
    };
    match entry::decode(state.id, key, &stored) {
        Some(entry) if entry.is_expired(now_ms) => Ok(None),
        Some(entry) => Ok(Some(Bytes::copy_from_slice(entry.value))),
        None => {
            state.note_damaged(file, key);
            Ok(None)
        }
    }
}

/// Every intact entry not expired at `now_ms`; see [`KeyTable::entries`].
pub(super) fn entries(table: &KeyTable, now_ms: u64) -> Result<Vec<(Bytes, Bytes)>, StoreError> {
    let state = &table.state;
    let file = &table.shared.file;
    let (raw, length) = table.shared.read(|txn| read_whole(txn, state, file))?;
    if let Some(length) = length {
        state.note_unreachable(file, length.saturating_sub(raw.len() as u64));
    }
    let mut intact = Vec::with_capacity(raw.len());
    for (key, stored) in raw {
        match entry::decode(state.id, &key, &stored) {
            Some(entry) if entry.is_expired(now_ms) => {}
            Some(entry) => intact.push((
                Bytes::copy_from_slice(&key),
                Bytes::copy_from_slice(entry.value),
            )),
            None => state.note_damaged(file, &key),
        }
    }
    Ok(intact)
}

/// Every entry the walks reach, in key order, and the table's length if it can be read.
pub(crate) fn read_whole(
    txn: &ReadTransaction,
    state: &TableState,
    file: &std::path::Path,
) -> Result<(Vec<Raw>, Option<u64>), StoreError> {
    let opened = settle(file, quiet::catch(|| open(txn, state)))?;
    let entries = match opened {
        Some(Some(entries)) => entries,
        Some(None) => return Ok((Vec::new(), None)),
        // Not even the table's root can be read: nothing of it can
        None => return Ok((Vec::new(), Some(1))),
    };
    let length = settle(
        file,
        quiet::catch(|| entries.len().map_err(redb::Error::from)),
    )?;
    let mut forward = Vec::new();
    let whole = settle(
        file,
        quiet::catch(|| walk(&entries, &mut forward, false, None)),
    )?;
    if whole.is_some() {
        return Ok((forward, length));
    }
    let mut backward = Vec::new();
    let stop = forward.last().map(|(key, _)| key.clone());
    settle(
        file,
        quiet::catch(|| walk(&entries, &mut backward, true, stop.as_deref())),
    )?;
    forward.extend(backward.into_iter().rev());
    Ok((forward, length))
}

/// Walks `entries` forward, or backward down to (not including) `stop`, into `into`; stops at
/// the first failure, keeping what it found before.
fn walk(
    entries: &Entries,
    into: &mut Vec<Raw>,
    backward: bool,
    stop: Option<&[u8]>,
) -> Result<(), redb::Error> {
    let iter = entries.iter()?;
    let mut step = |row: Result<_, redb::StorageError>| -> Result<bool, redb::Error> {
        let (key, value): (redb::AccessGuard<&[u8]>, redb::AccessGuard<&[u8]>) = row?;
        if stop.is_some_and(|stop| key.value() <= stop) {
            return Ok(false);
        }
        into.push((key.value().to_vec(), value.value().to_vec()));
        Ok(true)
    };
    if backward {
        for row in iter.rev() {
            if !step(row)? {
                break;
            }
        }
    } else {
        for row in iter {
            step(row)?;
        }
    }
    Ok(())
}
