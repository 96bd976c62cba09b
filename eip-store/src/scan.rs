//! Reading a queue's records around damage: every intact record is returned, whatever is
//! damaged next to it.
//!
//! Damage comes in two sizes, and a read handles both without failing:
//!
//! - **A damaged record**: its bytes are read, but they fail their checksum
//!   ([`frame`](crate::frame)). The read returns it apart ([`Scan::damaged`]), with its bytes, for
//!   the caller to set aside; the records after it are read on as usual.
//! - **A damaged page**: the B-tree walk itself fails (redb returns an error, or panics on a
//!   page it cannot make sense of, caught by [`quiet::catch`]). The read then falls back to
//!   asking for the following sequence numbers one by one, each lookup caught on its own, so a
//!   record in an intact page further on is still found even when the walk can not get past
//!   the damage. The numbers whose lookup fails are returned as unreadable ranges
//!   ([`Scan::unreadable`]): their records, if there were any (an acknowledged record leaves no
//!   key), are lost to the damage. A fallback asks for at most [`PROBE_LIMIT`] numbers, so that a
//!   read stays bounded; [`Scan::next`] says where the next read goes on.
//!
//! The next read starts with a walk again: past the damaged pages, walking works.

use std::collections::HashSet;
use std::ops::RangeInclusive;
use std::path::Path;

use bytes::Bytes;
use redb::{ReadOnlyTable, ReadTransaction, TableError};

use crate::StoreError;
use crate::frame;
use crate::quiet;
use crate::schema;

/// The most sequence numbers one fallback asks for one by one.
pub(crate) const PROBE_LIMIT: u64 = 4096;

/// The queue a scan reads, and what it already knows.
pub(crate) struct Target<'a> {
    /// The database file, for errors.
    pub(crate) file: &'a Path,
    /// The queue's id (part of each record's checksum) and its records table.
    pub(crate) id: u32,
    pub(crate) table: &'a str,
    /// The queue's head when the scan began: no record lies at or past it.
    pub(crate) head: u64,
    /// Sequence numbers to pass over: acknowledged, or already set aside.
    pub(crate) skip: &'a HashSet<u64>,
}

/// A record whose bytes were read but fail their checksum.
#[derive(Debug)]
pub(crate) struct DamagedRecord {
    /// The key it was found under.
    pub(crate) seq: u64,
    /// Its bytes after the checksum (all of them, if shorter than a checksum).
    pub(crate) bytes: Bytes,
    /// Whether its key was in order (after the previous key, before the head): only then is it
    /// certainly this key's record, and may be deleted from the queue.
    pub(crate) in_order: bool,
}

/// What one scan found, from its `from` up to [`next`](Scan::next).
#[derive(Debug)]
pub(crate) struct Scan {
    /// Intact records, in sequence order, not in the skip set.
    pub(crate) records: Vec<(u64, Bytes)>,
    /// Records that fail their checksum.
    pub(crate) damaged: Vec<DamagedRecord>,
    /// Sequence numbers whose lookup failed on a damaged page.
    pub(crate) unreadable: Vec<RangeInclusive<u64>>,
    /// Where the next scan goes on: everything before it has been looked at.
    pub(crate) next: u64,
}

impl Scan {
    fn note_unreadable(&mut self, seq: u64) {
        match self.unreadable.last_mut() {
            Some(range) if range.end().checked_add(1) == Some(seq) => {
                *range = *range.start()..=seq;
            }
            _ => self.unreadable.push(seq..=seq),
        }
    }

    /// Sorts one stored frame: an intact record, or a damaged one.
    fn found(&mut self, target: &Target<'_>, seq: u64, raw: &[u8], in_order: bool) {
        if target.skip.contains(&seq) {
            return;
        }
        match frame::decode(target.id, seq, raw) {
            Some(payload) => {
                self.next = self.next.max(seq.saturating_add(1));
                self.records.push((seq, Bytes::copy_from_slice(payload)));
            }
            None => self.damaged.push(DamagedRecord {
                seq,
                bytes: Bytes::copy_from_slice(frame::payload_part(raw)),
                in_order,
            }),
        }
    }
}

/// Reads up to `max` intact records of `target` from `from` on, with what was damaged among
/// them. Fails only when the system fails (an I/O error, a closed database): damage is in the
/// answer, never an error.
pub(crate) fn scan(
    txn: &ReadTransaction,
    target: &Target<'_>,
    from: u64,
    max: usize,
) -> Result<Scan, StoreError> {
    let mut scan = Scan {
        records: Vec::new(),
        damaged: Vec::new(),
        unreadable: Vec::new(),
        next: from,
    };
    match quiet::catch(|| walk(txn, target, max, &mut scan)) {
        Ok(Ok(())) => return Ok(scan),
        Ok(Err(error)) if !is_damage(&error) => {
            return Err(StoreError::from_redb(target.file, error));
        }
        // A damaged page: go on around it
        Ok(Err(_)) | Err(_) => {}
    }
    probe(txn, target, max, &mut scan)?;
    Ok(scan)
}

/// Whether a redb error is damage to the file rather than a failure of the system. A read past
/// the end of the file is damage: a page pointer that leads out of the file.
pub(crate) fn is_damage(error: &redb::Error) -> bool {
    match error {
        redb::Error::Io(e) => e.kind() == std::io::ErrorKind::UnexpectedEof,
        redb::Error::PreviousIo | redb::Error::DatabaseClosed => false,
        _ => true,
    }
}

/// The records table, or `None` if the queue has none (removed).
fn open(
    txn: &ReadTransaction,
    target: &Target<'_>,
) -> Result<Option<ReadOnlyTable<u64, &'static [u8]>>, redb::Error> {
    match txn.open_table(schema::records(target.table)) {
        Ok(table) => Ok(Some(table)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Walks the table in key order from `scan.next`; stops at `max` records, at the end, or at the
/// first failure (leaving `scan` as far as it got).
fn walk(
    txn: &ReadTransaction,
    target: &Target<'_>,
    max: usize,
    scan: &mut Scan,
) -> Result<(), redb::Error> {
    let Some(table) = open(txn, target)? else {
        scan.next = scan.next.max(target.head);
        return Ok(());
    };
    let mut previous = None;
    for entry in table.range(scan.next..)? {
        let (key, value) = entry?;
        let seq = key.value();
        let in_order = previous.is_none_or(|p| seq > p) && seq < target.head;
        previous = Some(seq);
        scan.found(target, seq, value.value(), in_order);
        if scan.records.len() >= max {
            return Ok(());
        }
    }
    scan.next = scan.next.max(target.head);
    Ok(())
}

/// Looks the sequence numbers from `scan.next` up one by one (at most [`PROBE_LIMIT`] of them),
/// each lookup caught on its own; stops at `max` records.
fn probe(
    txn: &ReadTransaction,
    target: &Target<'_>,
    max: usize,
    scan: &mut Scan,
) -> Result<(), StoreError> {
    let start = scan.next;
    let end = target.head.min(start.saturating_add(PROBE_LIMIT));
    let table = match quiet::catch(|| open(txn, target)) {
        Ok(Ok(Some(table))) => table,
        Ok(Ok(None)) => {
            scan.next = scan.next.max(target.head);
            return Ok(());
        }
        Ok(Err(error)) if !is_damage(&error) => {
            return Err(StoreError::from_redb(target.file, error));
        }
        // Not even the table's root can be read: nothing in this stretch can
        Ok(Err(_)) | Err(_) => {
            if start < end {
                scan.unreadable.push(start..=end - 1);
            }
            scan.next = end.max(start);
            return Ok(());
        }
    };
    for seq in start..end {
        scan.next = seq + 1;
        let lookup = quiet::catch(|| {
            table
                .get(seq)
                .map(|value| value.map(|v| v.value().to_vec()))
        });
        match lookup {
            Ok(Ok(Some(raw))) => scan.found(target, seq, &raw, true),
            Ok(Ok(None)) => {}
            Ok(Err(error)) => {
                let error = redb::Error::from(error);
                if !is_damage(&error) {
                    return Err(StoreError::from_redb(target.file, error));
                }
                scan.note_unreadable(seq);
            }
            Err(_) => scan.note_unreadable(seq),
        }
        if scan.records.len() >= max {
            break;
        }
    }
    Ok(())
}
