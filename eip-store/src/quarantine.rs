//! The quarantine: where the store sets aside the records it can not deliver because they are
//! damaged, with their bytes, so that nothing damaged is silently thrown away.
//!
//! A record lands here when a read finds that it fails its checksum, or when its reader can not
//! decode it and says so ([`QueueLog::quarantine`](crate::QueueLog::quarantine)). The commit
//! that copies it here deletes it from its queue, so the queue goes on with the next record.
//! Each entry keeps the queue's name, the record's sequence number, its bytes as found (after
//! the checksum), the reason and the time. Entries stay (a [`salvage`](crate::salvage) copies
//! them into the new store): they are few, and they are what a user inspects
//! (`eip store check`) to decide whether a damaged record can be repaired and sent again by
//! hand. Removing a queue leaves its entries.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redb::{ReadTransaction, ReadableTable, TableError};

use crate::StoreError;
use crate::quiet;
use crate::schema::QUARANTINE;

/// A record set aside as damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QuarantinedRecord {
    /// The queue it was read from.
    pub queue: String,
    /// Its sequence number in that queue.
    pub seq: u64,
    /// Its bytes as found: the stored payload, damaged or not decodable.
    pub bytes: Bytes,
    /// Why it was set aside.
    pub reason: String,
    /// When it was set aside.
    pub at: SystemTime,
}

/// Now, in milliseconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Every record in the quarantine of the database `file`, by queue and sequence number.
pub(crate) fn list(
    txn: &ReadTransaction,
    file: &Path,
) -> Result<Vec<QuarantinedRecord>, StoreError> {
    let read = || -> Result<Vec<QuarantinedRecord>, redb::Error> {
        let table = match txn.open_table(QUARANTINE) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut all = Vec::new();
        for entry in table.iter()? {
            let (key, value) = entry?;
            let (queue, seq) = key.value();
            let (bytes, reason, at) = value.value();
            all.push(QuarantinedRecord {
                queue: queue.to_string(),
                seq,
                bytes: Bytes::copy_from_slice(bytes),
                reason: reason.to_string(),
                at: UNIX_EPOCH + Duration::from_millis(at),
            });
        }
        Ok(all)
    };
    quiet::catch(read)
        .map_err(|detail| StoreError::from_panic(file, detail))?
        .map_err(|e| StoreError::from_redb(file, e))
}
