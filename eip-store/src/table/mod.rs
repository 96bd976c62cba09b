//! A key table: a named map of byte keys to byte values in the store, each entry with an
//! optional expiry, for the state of durable steps (an aggregator's groups, an idempotent
//! receiver's seen keys).
//!
//! - [`KeyTable::put`] and [`KeyTable::remove`] hand the change to the committer at once and
//!   return a [`Ticket`] that resolves once the commit holding it is fsynced. They ride the same
//!   group commit as appends; inside a [`Batch`](crate::Batch) they commit together with acks
//!   and appends, all or nothing.
//! - [`KeyTable::get`] and [`KeyTable::entries`] read what is committed: a change is seen once
//!   its ticket resolved (or a moment before). An entry whose expiry (milliseconds since the
//!   Unix epoch) has come reads as absent at once; [`KeyTable::expire`] deletes expired entries
//!   from the file, at most [`EXPIRE_LIMIT`] per call, through an index by expiry, so an expiry
//!   costs work in proportion to what it removes, not to the table's size.
//! - Live bytes: an entry counts its key and value against
//!   [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes) like a record; a put reserves
//!   them before it reaches the committer (and fails with [`StoreError::Full`] if they do not
//!   fit), the entry it replaces gives its bytes back once the commit is done.
//! - Damage: every entry carries a CRC-32C over table, key, expiry and value
//!   ([`entry`]). An entry that fails it is never returned: it reads as absent, is counted once
//!   in [`KeyTable::damage`] and logged, and stays in the file until a put or a remove of its key
//!   replaces it. A page that can not be read costs only its entries: [`KeyTable::entries`]
//!   reads from both ends of the table towards the damage, and counts what it could not reach.
//!
//! Key tables are a namespace of their own: a table and a queue may have the same name.
//! Like queues, any name is accepted; a table is declared durably by its first
//! [`DurableStore::table`](crate::DurableStore::table). In memory a table keeps its id and its
//! live bytes only; the entries stay on disk.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use redb::{ReadTransaction, ReadableTable, TableError};
use tokio::sync::oneshot;

use crate::StoreError;
use crate::batch::Batch;
use crate::committer::Job;
use crate::schema::{self, TABLES};
use crate::store::Shared;
use crate::ticket::Ticket;

pub(crate) mod entry;
mod read;

pub(crate) use read::{Raw, read_whole};

/// The most expired entries one [`KeyTable::expire`] removes (one commit's worth).
pub const EXPIRE_LIMIT: usize = 1024;

/// Every declared key table by name, shared by the handles and the committer.
pub(crate) type TableRegistry = Mutex<BTreeMap<String, Arc<TableState>>>;

/// Locks `registry`; a panic elsewhere never leaves it inconsistent, so poisoning is ignored.
pub(crate) fn lock(registry: &TableRegistry) -> MutexGuard<'_, BTreeMap<String, Arc<TableState>>> {
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The in-memory state of one key table, shared by its handles and the committer.
#[derive(Debug)]
pub(crate) struct TableState {
    pub(crate) name: String,
    pub(crate) id: u32,
    /// The names of its entries table and of its expiry index.
    pub(crate) keys: String,
    pub(crate) expiry: String,
    /// Bytes of the committed entries (keys and values).
    pub(crate) bytes: AtomicU64,
    /// Keys whose entry failed its checksum since the store opened: counted once each.
    damaged: Mutex<HashSet<Vec<u8>>>,
    /// The most entries one read of the whole table could not reach.
    unreachable: AtomicU64,
    /// Lookups that met a damaged page.
    failed_lookups: AtomicU64,
}

impl TableState {
    pub(crate) fn new(name: String, id: u32, bytes: u64) -> TableState {
        TableState {
            name,
            id,
            keys: schema::keys_table_name(id),
            expiry: schema::expiry_table_name(id),
            bytes: AtomicU64::new(bytes),
            damaged: Mutex::new(HashSet::new()),
            unreachable: AtomicU64::new(0),
            failed_lookups: AtomicU64::new(0),
        }
    }

    /// Counts and logs, once per key, an entry that fails its checksum.
    pub(crate) fn note_damaged(&self, file: &Path, key: &[u8]) {
        let mut damaged = self.damaged.lock().unwrap_or_else(PoisonError::into_inner);
        if damaged.insert(key.to_vec()) {
            tracing::error!(
                file = %file.display(),
                table = %self.name,
                key = %key.escape_ascii(),
                "damaged entry of a key table fails its checksum: read as absent"
            );
        }
    }

    /// Counts and logs a lookup of `key` that met a damaged page.
    pub(crate) fn note_failed_lookup(&self, file: &Path, key: &[u8]) {
        self.failed_lookups.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            file = %file.display(),
            table = %self.name,
            key = %key.escape_ascii(),
            "a lookup in a key table met a damaged page: read as absent"
        );
    }

    /// Notes that a read of the whole table reached all but `count` of its entries.
    pub(crate) fn note_unreachable(&self, file: &Path, count: u64) {
        let before = self.unreachable.fetch_max(count, Ordering::Relaxed);
        if count > before {
            tracing::error!(
                file = %file.display(),
                table = %self.name,
                count,
                "entries of a key table on a damaged page can not be read: counted as lost"
            );
        }
    }
}

/// What a key table met of damage since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TableDamage {
    /// Entries that failed their checksum (each key once): they read as absent.
    pub damaged: u64,
    /// Entries the table counts that a read of the whole table could not reach (a damaged
    /// page), at the most seen by one read; lookups that met a damaged page are counted here
    /// too, one each.
    pub unreadable: u64,
}

/// A handle on one named key table of a [`DurableStore`](crate::DurableStore). Cheap to clone;
/// keeps the store open.
#[derive(Clone)]
pub struct KeyTable {
    pub(crate) state: Arc<TableState>,
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyTable")
            .field("name", &self.state.name)
            .field("used_bytes", &self.used_bytes())
            .finish()
    }
}

impl KeyTable {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The value stored under `key`, unless there is none, it has expired, or it is damaged
    /// (counted in [`damage`](Self::damage)). Reads what is committed.
    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>, StoreError> {
        self.get_at(key, crate::quarantine::now_ms())
    }

    /// Like [`get`](Self::get), with the time of the reading given: `now_ms`, milliseconds since
    /// the Unix epoch.
    pub fn get_at(&self, key: &[u8], now_ms: u64) -> Result<Option<Bytes>, StoreError> {
        read::get(self, key, now_ms)
    }

    /// Every intact entry not expired, as (key, value), in key order. Reads the whole table into
    /// memory: for recovery after a restart (an aggregator reloading its groups), not for a hot
    /// path. Damage does not fail it: an entry that fails its checksum is passed over and
    /// counted, and after a page that can not be read the table is read from its end back to the
    /// damage, what neither walk reaches counted in [`damage`](Self::damage).
    pub fn entries(&self) -> Result<Vec<(Bytes, Bytes)>, StoreError> {
        read::entries(self, crate::quarantine::now_ms())
    }

    /// Stores `value` under `key`, replacing what was there, to expire at `expires_at`
    /// (milliseconds since the Unix epoch) if given. Resolves once the commit is fsynced; fails
    /// at once with [`StoreError::Full`] if key and value would pass
    /// [`StoreConfig::max_bytes`](crate::StoreConfig::max_bytes).
    pub fn put(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        expires_at: Option<u64>,
    ) -> Ticket<()> {
        Batch::new(self.shared.clone())
            .put(self, key, value, expires_at)
            .submit(drop)
    }

    /// Deletes the entry under `key`, if there is one. Resolves once the commit is fsynced.
    pub fn remove(&self, key: impl Into<Bytes>) -> Ticket<()> {
        Batch::new(self.shared.clone())
            .remove(self, key)
            .submit(drop)
    }

    /// Deletes from the file up to [`EXPIRE_LIMIT`] entries expired at `now_ms` (milliseconds
    /// since the Unix epoch), in one commit; resolves with how many expired entries it went
    /// through: each deleted, unless it is damaged (it stays, read as absent). Fewer than the
    /// limit means none is left. Expired entries read as absent before they are deleted; this
    /// gives their bytes back.
    pub fn expire(&self, now_ms: u64) -> Ticket<u64> {
        let (reply, receiver) = oneshot::channel();
        let job = Job::Expire {
            table: self.state.clone(),
            now_ms,
            reply,
        };
        let dir = self.shared.dir.clone();
        match self.shared.send(job) {
            Ok(()) => Ticket::waiting(receiver, dir),
            Err(_) => Ticket::refused(self.shared.closed_error(), dir),
        }
    }

    /// Bytes of this table's committed entries (keys and values).
    pub fn used_bytes(&self) -> u64 {
        self.state.bytes.load(Ordering::Acquire)
    }

    /// What this table met of damage since the store was opened.
    pub fn damage(&self) -> TableDamage {
        let damaged = self
            .state
            .damaged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len() as u64;
        TableDamage {
            damaged,
            unreadable: self.state.unreachable.load(Ordering::Relaxed)
                + self.state.failed_lookups.load(Ordering::Relaxed),
        }
    }
}

/// Every key table of an opening database, from its `tables` table (none if the store has
/// never declared one).
pub(crate) fn load(txn: &ReadTransaction, file: &Path) -> Result<Vec<TableState>, StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let rows = match txn.open_table(TABLES) {
        Ok(rows) => rows,
        Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(redb_error(e.into())),
    };
    let mut tables = Vec::new();
    for row in rows.iter().map_err(|e| redb_error(e.into()))? {
        let (name, value) = row.map_err(|e| redb_error(e.into()))?;
        let (id, bytes) = value.value();
        let state = TableState::new(name.value().to_string(), id, bytes);
        for table in [&state.keys, &state.expiry] {
            match txn.open_untyped_table(schema::keys(table)) {
                Ok(_) => {}
                Err(TableError::TableDoesNotExist(_)) => {
                    return Err(StoreError::Damaged {
                        file: file.to_path_buf(),
                        reason: format!("key table {:?} has lost its table {table:?}", state.name),
                    });
                }
                Err(e) => return Err(redb_error(e.into())),
            }
        }
        tables.push(state);
    }
    Ok(tables)
}
