//! The tables of `store.redb`.
//!
//! - `eip-store` (`&str → u64`): `"format"` → the format version, [`FORMAT_VERSION`]. A redb file
//!   with other tables and without this one belongs to another program.
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
//! Every commit writes a queue's records and its `queues` row in the same transaction, so the
//! row always agrees with the table.

use redb::TableDefinition;

/// The store's own metadata.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("eip-store");
/// The key of the format version in [`META`].
pub(crate) const FORMAT_KEY: &str = "format";
/// The format this build writes and reads.
pub(crate) const FORMAT_VERSION: u64 = 1;
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
