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
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, TableError};

use crate::StoreError;
use crate::frame;
use crate::quiet;
use crate::schema;

mod sweep;

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
    /// Whether it was found where the queue's records are (in key order, below the head): only
    /// then is it certainly this key's record, and may be deleted from the queue.
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
    /// How many entries of the table a sweep could not reach at all (counted against the
    /// table's length: the same ones are counted again by every sweep).
    pub(crate) unreachable: u64,
}

impl Scan {
    /// Nothing found yet, from `from` on.
    pub(crate) fn starting(from: u64) -> Scan {
        Scan {
            records: Vec::new(),
            damaged: Vec::new(),
            unreadable: Vec::new(),
            next: from,
            unreachable: 0,
        }
    }

    fn note_unreadable(&mut self, seq: u64) {
        match self.unreadable.last_mut() {
            Some(range) if range.end().checked_add(1) == Some(seq) => {
                *range = *range.start()..=seq;
            }
            _ => self.unreadable.push(seq..=seq),
        }
    }

    /// Sorts one stored frame: an intact record, or a damaged one.
    fn found(&mut self, target: &Target<'_>, seq: u64, raw: &[u8]) {
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
                in_order: true,
            }),
        }
    }

    /// Sorts a frame met off track (see [`off_track`]): damaged if its checksum fails under the
    /// key it was found under, but not certainly that key's record; an intact one is left to
    /// the lookups one by one, which find it under its key if it can be reached.
    fn stray(&mut self, target: &Target<'_>, seq: u64, raw: &[u8]) {
        if target.skip.contains(&seq) || frame::decode(target.id, seq, raw).is_some() {
            return;
        }
        self.damaged.push(DamagedRecord {
            seq,
            bytes: Bytes::copy_from_slice(frame::payload_part(raw)),
            in_order: false,
        });
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
    let mut scan = Scan::starting(from);
    match quiet::catch(|| walk(txn, target, max, &mut scan)) {
        Ok(Ok(())) => return Ok(scan),
        Ok(Err(error)) if !is_damage(&error) => {
            return Err(StoreError::from_redb(target.file, error));
        }
        // A damaged page: go on around it
        Ok(Err(_)) | Err(_) => {}
    }
    // The walk may have gone wrong at its first step already: what it found is dropped
    let walked = std::mem::replace(&mut scan, Scan::starting(from));
    match quiet::catch(|| sweep::sweep(txn, target, max, &mut scan)) {
        Ok(Ok(sweep::Swept::Whole)) => return Ok(scan),
        Ok(Err(error)) if !is_damage(&error) => {
            return Err(StoreError::from_redb(target.file, error));
        }
        Ok(Ok(sweep::Swept::Incomplete)) | Ok(Err(_)) | Err(_) => {}
    }
    scan = walked;
    probe(txn, target, max, &mut scan)?;
    Ok(scan)
}

/// Whether a redb error is damage to the file rather than a failure of the system. A read past
/// the end of the file is damage: a page pointer that leads out of the file. A failure the
/// handle latched (`PreviousIo`, a poisoned lock) is not: the store reopens the file for it
/// ([`slot`](crate::slot)).
pub(crate) fn is_damage(error: &redb::Error) -> bool {
    match error {
        redb::Error::Io(e) => e.kind() == std::io::ErrorKind::UnexpectedEof,
        redb::Error::PreviousIo | redb::Error::DatabaseClosed | redb::Error::LockPoisoned(_) => {
            false
        }
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
/// first failure (leaving `scan` as far as it got). A key that does not follow
/// the one before, or that lies at or past the head, is a failure ([`off_track`]): the lookups
/// one by one go on from there.
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
    // Entries a walk may pass without returning them: acks not yet committed, records set
    // aside, damaged ones, and a bound on a damaged page that claims more
    let limit = target.skip.len() + max + PROBE_LIMIT as usize;
    let from = scan.next;
    let mut previous: Option<u64> = None;
    for (visited, entry) in table.range(from..)?.enumerate() {
        let (key, value) = entry?;
        let seq = key.value();
        let bounds = from..target.head;
        if let Some(anomaly) = off_track(seq, previous, bounds, visited > limit) {
            scan.stray(target, seq, value.value());
            return Err(redb::Error::Corrupted(format!(
                "{anomaly} in queue table {}",
                target.table
            )));
        }
        previous = Some(seq);
        scan.found(target, seq, value.value());
        if scan.records.len() >= max {
            return Ok(());
        }
    }
    // The descent can go wrong without a key out of place: landing past every entry. Finding
    // nothing below the head, or ending before the table's last key (found by a descent along
    // its right edge), tells
    if previous.is_none() && from < target.head {
        return Err(redb::Error::Corrupted(format!(
            "no entry from {from} on in queue table {}, whose head is {}",
            target.table, target.head
        )));
    }
    if let Some((last, _)) = table.last()?
        && last.value() >= from
        && previous.is_none_or(|seen| seen < last.value())
    {
        return Err(redb::Error::Corrupted(format!(
            "the walk from {from} ended before key {}, the last of queue table {}",
            last.value(),
            target.table
        )));
    }
    scan.next = scan.next.max(target.head);
    Ok(())
}

/// Why a walk from `bounds.start` that met key `seq` after `previous` has left the queue's
/// records, if it has: a key before where the walk began (the descent into the tree went to a
/// wrong page), a key that does not follow the one before (a cycle of damaged page pointers, a
/// stale copy of a page), a key at or past the head (a damaged key, or a record committed since
/// the read began, which the lookups one by one find), or more entries than the queue holds.
fn off_track(
    seq: u64,
    previous: Option<u64>,
    bounds: std::ops::Range<u64>,
    too_many: bool,
) -> Option<String> {
    match previous {
        _ if seq < bounds.start => Some(format!(
            "key {seq} before {}, where the walk began",
            bounds.start
        )),
        Some(previous) if seq <= previous => Some(format!("key {seq} after key {previous}")),
        _ if seq >= bounds.end => Some(format!("key {seq} at or past the head {}", bounds.end)),
        _ if too_many => Some(format!("more entries than the queue holds, at key {seq}")),
        _ => None,
    }
}

/// After this many lookups failed in a row, the probe looks for the end of the stretch.
const GALLOP_AFTER: u32 = 4;

/// What a lookup of one key found.
enum Lookup {
    Found(Vec<u8>),
    Absent,
    /// The lookup met a damaged page.
    Failed,
}

/// Looks `seq` up, a panic of the storage engine caught as a failed lookup.
fn lookup(
    table: &ReadOnlyTable<u64, &'static [u8]>,
    target: &Target<'_>,
    seq: u64,
) -> Result<Lookup, StoreError> {
    let found = quiet::catch(|| {
        table
            .get(seq)
            .map(|value| value.map(|v| v.value().to_vec()))
    });
    match found {
        Ok(Ok(Some(raw))) => Ok(Lookup::Found(raw)),
        Ok(Ok(None)) => Ok(Lookup::Absent),
        Ok(Err(error)) => {
            let error = redb::Error::from(error);
            if is_damage(&error) {
                Ok(Lookup::Failed)
            } else {
                Err(StoreError::from_redb(target.file, error))
            }
        }
        Err(_) => Ok(Lookup::Failed),
    }
}

/// The first key after `failed` (whose lookup failed) whose lookup does not fail, or `end`:
/// steps of growing length until one succeeds, then halving back. A damaged subtree covers
/// one stretch of keys, so the keys in between fail too (those are not looked up).
fn end_of_failures(
    table: &ReadOnlyTable<u64, &'static [u8]>,
    target: &Target<'_>,
    failed: u64,
    end: u64,
) -> Result<u64, StoreError> {
    let mut low = failed; // fails
    let mut step = 1;
    let high = loop {
        let at = low.saturating_add(step);
        if at >= end {
            break end;
        }
        if !matches!(lookup(table, target, at)?, Lookup::Failed) {
            break at;
        }
        low = at;
        step = step.saturating_mul(2);
    };
    let mut high = high; // succeeds, or is the end
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if matches!(lookup(table, target, middle)?, Lookup::Failed) {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(high)
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
    let mut seq = start;
    let mut failed_in_a_row = 0;
    while seq < end {
        scan.next = seq + 1;
        match lookup(&table, target, seq)? {
            Lookup::Found(raw) => {
                failed_in_a_row = 0;
                scan.found(target, seq, &raw);
            }
            Lookup::Absent => failed_in_a_row = 0,
            Lookup::Failed => {
                failed_in_a_row += 1;
                if failed_in_a_row >= GALLOP_AFTER {
                    // A damaged subtree hides a stretch of keys: find where it ends in a few
                    // lookups instead of failing once per key
                    let resumes = end_of_failures(&table, target, seq, end)?;
                    for unreadable in seq..resumes {
                        scan.note_unreadable(unreadable);
                    }
                    scan.next = resumes;
                    seq = resumes;
                    failed_in_a_row = 0;
                    continue;
                }
                scan.note_unreadable(seq);
            }
        }
        if scan.records.len() >= max {
            break;
        }
        seq += 1;
    }
    Ok(())
}
