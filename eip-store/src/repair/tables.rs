//! The key tables' part of a check or a salvage: each table read as a step does after a
//! restart ([`KeyTable::entries`](crate::KeyTable::entries): from both ends towards damage),
//! its damaged entries named, and in a salvage its intact entries, expired or not, copied under
//! the same table id with their expiry index rebuilt. A damaged entry is not copied: it could
//! not be read back anyway (it reads as absent), and the check names its key.

use std::path::Path;

use bytes::Bytes;
use redb::{ReadTransaction, WriteTransaction};

use crate::StoreError;
use crate::schema::{self, TABLES};
use crate::table::entry::{self, NEVER};
use crate::table::{self, Raw, TableState};

/// What [`check`](crate::check) found in one key table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableCheck {
    /// The table's name.
    pub name: String,
    /// How many entries the table says it holds (`None` if not even that can be read).
    pub entries: Option<u64>,
    /// How many entries are intact (expired ones included).
    pub intact: u64,
    /// The keys of the entries that fail their checksum.
    pub damaged: Vec<Bytes>,
    /// Entries the table counts that no read reached (on a damaged page).
    pub unreadable: u64,
}

impl TableCheck {
    /// Whether every entry of the table is intact.
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty() && self.unreadable == 0
    }
}

/// Every key table of the store, read: its check, and its intact entries as stored.
pub(super) fn read(
    txn: &ReadTransaction,
    file: &Path,
) -> Result<Vec<(TableState, TableCheck, Vec<Raw>)>, StoreError> {
    let mut tables = Vec::new();
    for state in table::load(txn, file)? {
        let (raw, length) = table::read_whole(txn, &state, file)?;
        let mut check = TableCheck {
            name: state.name.clone(),
            entries: length,
            intact: 0,
            damaged: Vec::new(),
            unreadable: length.unwrap_or(0).saturating_sub(raw.len() as u64),
        };
        let intact: Vec<Raw> = raw
            .into_iter()
            .filter(|(key, stored)| {
                let whole = entry::decode(state.id, key, stored).is_some();
                if !whole {
                    check.damaged.push(Bytes::copy_from_slice(key));
                }
                whole
            })
            .collect();
        check.intact = intact.len() as u64;
        tables.push((state, check, intact));
    }
    Ok(tables)
}

/// Writes `state`'s row, its `intact` entries and their expiry index into a new store.
pub(super) fn write(
    txn: &WriteTransaction,
    state: &TableState,
    intact: &[Raw],
) -> Result<(), redb::Error> {
    let mut entries = txn.open_table(schema::keys(&state.keys))?;
    let mut expiry = txn.open_table(schema::expiry(&state.expiry))?;
    let mut bytes = 0u64;
    for (key, stored) in intact {
        entries.insert(key.as_slice(), stored.as_slice())?;
        bytes = bytes.saturating_add(entry::live_len(key, stored));
        if let Some(entry) = entry::decode(state.id, key, stored)
            && entry.expires_at != NEVER
        {
            expiry.insert((entry.expires_at, key.as_slice()), ())?;
        }
    }
    txn.open_table(TABLES)?
        .insert(state.name.as_str(), (state.id, bytes))?;
    Ok(())
}
