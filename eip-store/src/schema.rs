//! The tables of `store.redb`.
//!
//! - `eip-store` (`&str → u64`): `"format"` → the format version, [`FORMAT_VERSION`]. A redb file
//!   with other tables and without this one belongs to another program. `"round"` → the last
//!   committer round the database holds durably (see [`journal`](crate::journal)): written by
//!   every checkpoint and replay, read by an open to know which journal records to replay.
//! - `queues` (`&str → (u32, u64, u64)`): queue name → (queue id, head, live bytes). Head is the
//!   next sequence number, kept here so that sequence numbers keep growing across restarts even
//!   when every record has been acknowledged and deleted. Live bytes lets an open rebuild
//!   [`DurableStore::used_bytes`](crate::DurableStore::used_bytes) without reading payloads.
//! - `records/<id>` (`u64 → &[u8]`), one per queue: sequence number → record, framed with a
//!   checksum ([`frame`](crate::frame)). Its length, which
//!   redb keeps in the table's root, is the queue's length, so an open reads no payloads.
//! - `quarantine` (`(&str, u64) → (&[u8], &str, u64)`): (queue name, sequence number) → (the
//!   record's bytes as found, why it was set aside, when: milliseconds since the Unix epoch).
//!   Records that failed their checksum or could not be decoded, kept for inspection and replay
//!   ([`quarantine`](crate::quarantine)). Created by the first record set aside.
//!
//! - `tables` (`&str → (u32, u64)`): key table name → (table id, live bytes). Created by the
//!   first [`DurableStore::table`](crate::DurableStore::table) declared: a store written before
//!   key tables existed has none, and opens as it is.
//! - `keys/<id>` (`&[u8] → &[u8]`), one per key table: key → entry, framed with a checksum and
//!   its expiry ([`table::entry`](crate::table)).
//! - `expiry/<id>` (`(u64, &[u8]) → ()`), one per key table: (expiry in ms since the epoch, key)
//!   for every entry that has an expiry, so that [`KeyTable::expire`](crate::KeyTable::expire)
//!   finds the expired entries without reading the others. An index only: an entry is removed
//!   only when its own, checksummed, expiry says so.
//!
//! Every commit writes a queue's records and its `queues` row in the same transaction, so the
//! row always agrees with the table; the same holds for a key table and its `tables` row.

use redb::TableDefinition;

/// The store's own metadata.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("eip-store");
/// The key of the format version in [`META`].
pub(crate) const FORMAT_KEY: &str = "format";
/// The key of the last round the database holds in [`META`].
pub(crate) const ROUND_KEY: &str = "round";
/// The format this build writes. 2: the store has a write-ahead journal, whose rounds after the
/// database's own must be replayed before anything reads it; a build that does not know the
/// journal must refuse such a store, or it would miss acknowledged records.
pub(crate) const FORMAT_VERSION: u64 = 2;
/// The oldest format this build reads: 1, the store before the journal (opened as a store with
/// an empty journal, and brought to [`FORMAT_VERSION`] by the open).
pub(crate) const OLDEST_FORMAT: u64 = 1;

/// Whether this build reads a store of format `version`.
pub(crate) fn is_readable(version: u64) -> bool {
    (OLDEST_FORMAT..=FORMAT_VERSION).contains(&version)
}
/// Queue name → (id, head, live bytes).
pub(crate) const QUEUES: TableDefinition<&str, (u32, u64, u64)> = TableDefinition::new("queues");

/// The name of the records table of queue `id`.
pub(crate) fn records_table_name(id: u32) -> String {
    format!("records/{id}")
}

/// The definition of a records table named by [`records_table_name`].
pub(crate) fn records(name: &str) -> TableDefinition<'_, u64, &'static [u8]> {
    TableDefinition::new(name)
}

/// The key of a quarantined record: (queue name, sequence number).
pub(crate) type QuarantineKey = (&'static str, u64);
/// What the quarantine keeps of a record: (bytes, reason, time in ms since the epoch).
pub(crate) type QuarantineValue = (&'static [u8], &'static str, u64);

/// Damaged records set aside: (queue, seq) → (bytes, reason, time in ms since the epoch).
pub(crate) const QUARANTINE: TableDefinition<QuarantineKey, QuarantineValue> =
    TableDefinition::new("quarantine");

/// Key table name → (id, live bytes).
pub(crate) const TABLES: TableDefinition<&str, (u32, u64)> = TableDefinition::new("tables");

/// The name of the entries table of key table `id`.
pub(crate) fn keys_table_name(id: u32) -> String {
    format!("keys/{id}")
}

/// The name of the expiry index of key table `id`.
pub(crate) fn expiry_table_name(id: u32) -> String {
    format!("expiry/{id}")
}

/// The definition of an entries table named by [`keys_table_name`].
pub(crate) fn keys(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

/// The key of the expiry index: (expiry in ms since the epoch, key).
pub(crate) type ExpiryKey = (u64, &'static [u8]);

/// The definition of an expiry index named by [`expiry_table_name`].
pub(crate) fn expiry(name: &str) -> TableDefinition<'_, ExpiryKey, ()> {
    TableDefinition::new(name)
}
