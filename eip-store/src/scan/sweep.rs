//! The sweep: a read of a queue's table in the tree's own order, from its first page, for when
//! the descent by key can not be trusted.
//!
//! A walk from a sequence number descends the B-tree by the keys its branch pages hold; a
//! damaged branch (a flipped bit in a key or a page pointer) sends that descent, and every
//! lookup by key after it, to the wrong page, so that whole pages of intact records are never
//! found, and nothing says so. A sweep does not descend by key: it visits every page below the
//! table's root from left to right and takes each entry for what its key and checksum say.
//! What it can not reach either (a page pointer that now leads to a stale copy of another page)
//! it counts: the table's length, which redb keeps apart from the pages, says how many entries
//! there are, and the sweep says how many it saw.
//!
//! A sweep visits at most a bounded number of entries ([`Target::skip`] plus the read's `max`
//! plus [`PROBE_LIMIT`]), so that a read stays bounded: a queue longer than that falls back to
//! lookups one by one ([`probe`](super::probe)).

use std::collections::{BTreeMap, HashSet};

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata};

use super::{PROBE_LIMIT, Scan, Target, open};

/// How a sweep ended.
pub(super) enum Swept {
    /// It saw the whole table: the scan holds what it found.
    Whole,
    /// The table is longer than a sweep may visit, or a page of it can not be read: nothing
    /// was added to the scan.
    Incomplete,
}

/// Sweeps `target`'s table for the records from `scan.next` on (at most `max` of them).
pub(super) fn sweep(
    txn: &ReadTransaction,
    target: &Target<'_>,
    max: usize,
    scan: &mut Scan,
) -> Result<Swept, redb::Error> {
    let Some(table) = open(txn, target)? else {
        return Ok(Swept::Incomplete);
    };
    let limit = target.skip.len() + max + PROBE_LIMIT as usize;
    let length = table.len()?;
    // The lowest `max` entries from `scan.next` on, by key, and every key seen in the queue's range
    let mut lowest: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut trimmed = false;
    for (visited, entry) in table.iter()?.enumerate() {
        if visited > limit {
            return Ok(Swept::Incomplete);
        }
        let (key, value) = entry?;
        let seq = key.value();
        if seq >= target.head || !seen.insert(seq) {
            continue; // a damaged key, or a stale copy met a second time
        }
        if seq >= scan.next && !target.skip.contains(&seq) {
            lowest.insert(seq, value.value().to_vec());
            if lowest.len() > max {
                lowest.pop_last();
                trimmed = true;
            }
        }
    }
    let last = lowest.last_key_value().map(|(seq, _)| *seq);
    for (seq, raw) in lowest {
        scan.found(target, seq, &raw);
    }
    scan.next = match (trimmed, last) {
        (true, Some(last)) => scan.next.max(last + 1),
        _ => scan.next.max(target.head),
    };
    scan.unreachable = length.saturating_sub(seen.len() as u64);
    Ok(Swept::Whole)
}
