//! Reading a journal file back: its header, its intact records in order, and where it stops.
//!
//! A record is intact when its magic number, length and CRC-32C hold, it belongs to the
//! journal's current generation (its `first` is the header's) and its round is the one after
//! the record before it (the header's `first` for the first record). Reading stops at the first
//! record that is not: after a crash that is normal (the tail the crash cut off, or bytes of an
//! older generation, or zeros). Whether it is *damage* is told by what follows: records are
//! written in order and each durable one is fdatasynced with everything before it, so an intact
//! durable record of this generation found further on proves that the one where reading
//! stopped was once complete on the disk. Then the records from there on can not be trusted to
//! be complete or in order; they are not replayed, and the stop is reported as
//! [`JournalDamage`]. A lazy record (acks only, written without fdatasync) after a hole is not
//! such proof: the page cache may write it back before an earlier one, and losing it is a
//! redelivery at worst.

use std::path::Path;

use super::{ALIGN, HEADER_LEN, JournalDamage, RECORD_HEADER, RECORD_MAGIC, header, record_crc};

/// A record as found: its round and its body.
#[derive(Debug)]
pub(crate) struct Found<'a> {
    pub(crate) round: u64,
    pub(crate) offset: u64,
    pub(crate) body: &'a [u8],
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub(crate) struct Scan<'a> {
    /// The generation the header names (0 if it could not be read).
    pub(crate) first: u64,
    /// The intact records, in order.
    pub(crate) records: Vec<Found<'a>>,
    /// Where reading stopped, and why, when that is damage.
    pub(crate) damage: Option<JournalDamage>,
}

/// The fields of a record's header.
struct RecordHeader {
    len: usize,
    first: u64,
    round: u64,
    durable: bool,
}

/// Reads the journal `bytes` (the whole file `file`).
pub(crate) fn scan<'a>(bytes: &'a [u8], file: &Path) -> Scan<'a> {
    let mut scan = Scan::default();
    let first = match header::decode(bytes) {
        Some(first) => first,
        None if bytes.iter().take(HEADER_LEN as usize).all(|b| *b == 0) => return scan,
        // A damaged header: the first record says which generation it is
        None => match record_at(bytes, HEADER_LEN as usize) {
            Some(r) if r.first == r.round => {
                scan.damage = Some(JournalDamage {
                    file: file.to_path_buf(),
                    offset: 0,
                    round: r.first,
                    reason: "its header fails its checksum; its records were read".into(),
                    later: 0,
                });
                r.first
            }
            _ => {
                scan.damage = Some(JournalDamage {
                    file: file.to_path_buf(),
                    offset: 0,
                    round: 0,
                    reason: "its header fails its checksum and no record of it can be read".into(),
                    later: 0,
                });
                return scan;
            }
        },
    };
    scan.first = first;
    let mut at = HEADER_LEN as usize;
    let mut round = first;
    while let Some(r) = record_at(bytes, at).filter(|r| r.first == first && r.round == round) {
        let body = &bytes[at + RECORD_HEADER..at + RECORD_HEADER + r.len];
        scan.records.push(Found {
            round,
            offset: at as u64,
            body,
        });
        at += padded(RECORD_HEADER + r.len);
        round += 1;
    }
    let later = durable_after(bytes, at, first, round);
    if later > 0 {
        scan.damage = Some(JournalDamage {
            file: file.to_path_buf(),
            offset: at as u64,
            round,
            reason: format!(
                "record {round} is damaged or missing while {later} durable records after it are intact: \
                 they were not replayed"
            ),
            later,
        });
    }
    scan
}

/// How many intact durable records of generation `first`, of round `round` or later, lie at or
/// after `from`.
fn durable_after(bytes: &[u8], from: usize, first: u64, round: u64) -> u64 {
    let mut count = 0;
    let mut at = from;
    while at + RECORD_HEADER <= bytes.len() {
        if bytes[at..at + 4] == RECORD_MAGIC
            && let Some(r) = record_at(bytes, at)
            && r.first == first
            && r.round >= round
        {
            count += u64::from(r.durable);
            at += padded(RECORD_HEADER + r.len);
            continue;
        }
        at += ALIGN;
    }
    count
}

/// The record at `at`, if its header and checksum hold.
fn record_at(bytes: &[u8], at: usize) -> Option<RecordHeader> {
    let head: &[u8; RECORD_HEADER] = bytes.get(at..at + RECORD_HEADER)?.try_into().ok()?;
    if head[0..4] != RECORD_MAGIC {
        return None;
    }
    let field = |range: std::ops::Range<usize>| -> Option<u64> {
        let mut buf = [0u8; 8];
        buf[..range.len()].copy_from_slice(head.get(range)?);
        Some(u64::from_le_bytes(buf))
    };
    let len = usize::try_from(field(4..8)?).ok()?;
    let first = field(8..16)?;
    let round = field(16..24)?;
    let flags = field(24..28)?;
    let crc = u32::try_from(field(28..32)?).ok()?;
    let body = bytes.get(at + RECORD_HEADER..at.checked_add(RECORD_HEADER)?.checked_add(len)?)?;
    (record_crc(&head[..28], body) == crc).then_some(RecordHeader {
        len,
        first,
        round,
        durable: flags & u64::from(super::DURABLE) != 0,
    })
}

/// `len` rounded up to the records' alignment.
pub(crate) fn padded(len: usize) -> usize {
    len.div_ceil(ALIGN) * ALIGN
}
