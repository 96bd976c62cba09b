//! Reading a journal file back: its header, its intact records in order, and where it stops.
//!
//! A record is intact when its magic number, length and CRC-32C hold, it belongs to the
//! journal's current generation (its `first` is the header's) and its round is the one after
//! the record before it (the header's `first` for the first record). Reading stops at the first
//! record that is not: after a crash that is normal (the tail the crash cut off, bytes of an
//! older generation, or zeros). Records are read one at a time, so an open holds one record in
//! memory, not the journal, and reads only the journal's rounds, not the older bytes behind them.
//!
//! Whether the stop is *damage* is told by what follows it ([`Reader::finish`]): records are
//! written in order and each durable one is fdatasynced with everything before it, so an intact
//! durable record of this generation found further on proves that the one where reading
//! stopped was once complete on the disk. Then the records from there on can not be trusted to
//! be complete or in order; they are not replayed, and the stop is reported as
//! [`JournalDamage`]. The search looks where the damaged record says it ends (if its header
//! is intact) or, if not, in the [`SEARCH`] bytes after it. Where reading stops at an intact
//! record of an older generation (the usual end, after a reset), there is nothing to search:
//! no write of this generation ever reached the disk there, so no later durable one did. A lazy record (acks only, written
//! without fdatasync) after a hole is no such proof: the page cache may write it back before
//! an earlier one, and losing it is a redelivery at worst.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{
    ALIGN, DURABLE, HEADER_LEN, JournalDamage, RECORD_HEADER, RECORD_MAGIC, header, record_crc,
};
use crate::StoreError;

/// How far past a damaged record whose own length can not be trusted the search for later
/// records looks.
pub(crate) const SEARCH: u64 = 1 << 20;

/// A record as found: its round, where it starts, and its body.
#[derive(Debug)]
pub(crate) struct Found<'a> {
    pub(crate) round: u64,
    pub(crate) offset: u64,
    pub(crate) body: &'a [u8],
}

/// The fields of a record's header.
struct RecordHeader {
    /// The bytes its checksum covers, before the checksum itself.
    covered: [u8; 28],
    len: u64,
    first: u64,
    round: u64,
    durable: bool,
    crc: u32,
}

impl RecordHeader {
    fn parse(head: &[u8; RECORD_HEADER]) -> Option<RecordHeader> {
        if head[0..4] != RECORD_MAGIC {
            return None;
        }
        let u32_at =
            |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let u64_at = |at: usize| u64::from(u32_at(at)) | (u64::from(u32_at(at + 4)) << 32);
        let mut covered = [0u8; 28];
        covered.copy_from_slice(&head[..28]);
        Some(RecordHeader {
            covered,
            len: u64::from(u32_at(4)),
            first: u64_at(8),
            round: u64_at(16),
            durable: u32_at(24) & DURABLE != 0,
            crc: u32_at(28),
        })
    }
}

/// Reads a journal file's records in order.
pub(crate) struct Reader<'f> {
    file: &'f File,
    path: &'f Path,
    len: u64,
    /// The generation the header names (0 if it could not be read).
    pub(crate) first: u64,
    /// Where the next record is read.
    at: u64,
    /// The round the next record must have.
    round: u64,
    buf: Vec<u8>,
    /// Damage found in the header; reading stops before the first record if nothing says which
    /// generation the records are of.
    damage: Option<JournalDamage>,
    stopped: bool,
}

impl<'f> Reader<'f> {
    /// Reads the header of the journal `file` (at `path`).
    pub(crate) fn open(file: &'f File, path: &'f Path) -> Result<Reader<'f>, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let len = file.metadata().map_err(io)?.len();
        let mut head = vec![0u8; usize::try_from(len.min(HEADER_LEN)).unwrap_or(0)];
        file.read_exact_at(&mut head, 0).map_err(io)?;
        let mut reader = Reader {
            file,
            path,
            len,
            first: 0,
            at: HEADER_LEN,
            round: 0,
            buf: Vec::new(),
            damage: None,
            stopped: false,
        };
        if let Some(first) = header::decode(&head) {
            reader.first = first;
            reader.round = first;
            return Ok(reader);
        }
        reader.stopped = true;
        if head.iter().all(|b| *b == 0) {
            return Ok(reader); // never written: no records
        }
        // A damaged header: the first record says which generation it is
        let generation = reader.header_at(HEADER_LEN).map_err(io)?;
        match generation {
            Some(r) if r.first == r.round && reader.intact(HEADER_LEN, &r).map_err(io)? => {
                reader.first = r.first;
                reader.round = r.first;
                reader.stopped = false;
                reader.damage = Some(reader.damage_at(
                    0,
                    r.first,
                    "its header fails its checksum; its records were read".into(),
                    0,
                ));
            }
            _ => {
                reader.damage = Some(reader.damage_at(
                    0,
                    0,
                    "its header fails its checksum and no record of it can be read".into(),
                    0,
                ));
            }
        }
        Ok(reader)
    }

    /// The next intact record, or `None` where reading stops.
    pub(crate) fn next(&mut self) -> Result<Option<Found<'_>>, StoreError> {
        if self.stopped {
            return Ok(None);
        }
        let at = self.at;
        let record = self.header_at(at).map_err(|e| self.io(e))?;
        let record = match record {
            Some(r) if r.first == self.first && r.round == self.round => r,
            _ => {
                self.stopped = true;
                return Ok(None);
            }
        };
        if !self.intact(at, &record).map_err(|e| self.io(e))? {
            self.stopped = true;
            return Ok(None);
        }
        self.at = at + padded(RECORD_HEADER as u64 + record.len);
        self.round += 1;
        Ok(Some(Found {
            round: record.round,
            offset: at,
            body: &self.buf,
        }))
    }

    /// The round after the last record read (the header's `first` before any).
    pub(crate) fn round_after(&self) -> u64 {
        self.round
    }

    /// After the last record: the damage found, if any (see the module's documentation).
    pub(crate) fn finish(mut self) -> Result<Option<JournalDamage>, StoreError> {
        while self.next()?.is_some() {}
        if self.damage.is_some() || self.first == 0 && self.at == HEADER_LEN {
            return Ok(self.damage);
        }
        let later = self.durable_after().map_err(|e| self.io(e))?;
        if later == 0 {
            return Ok(None);
        }
        let reason = format!(
            "record {} is damaged or missing while {later} durable records after it are intact: \
             they were not replayed",
            self.round
        );
        Ok(Some(self.damage_at(self.at, self.round, reason, later)))
    }

    /// How many intact durable records of this generation, of the expected round or later,
    /// follow where reading stopped.
    fn durable_after(&mut self) -> std::io::Result<u64> {
        let stop = self.at;
        let mut from = match self.header_at(stop)? {
            // Where the damaged record says it ends, if its header is intact
            Some(r) if r.first == self.first && r.round == self.round => {
                stop + padded(RECORD_HEADER as u64 + r.len)
            }
            // An intact record of an older generation: nothing of this one was ever made
            // durable here, so nothing after it was either (an fdatasync writes all before it)
            Some(r) if r.first != self.first && self.intact(stop, &r)? => return Ok(0),
            _ => stop + ALIGN as u64,
        };
        let end = self.len.min(from.saturating_add(SEARCH));
        let mut window = vec![0u8; usize::try_from(end.saturating_sub(from)).unwrap_or(0)];
        self.file.read_exact_at(&mut window, from)?;
        let mut found = None;
        let mut pos = 0;
        while pos + RECORD_HEADER <= window.len() {
            if window[pos..pos + 4] == RECORD_MAGIC {
                let at = from + pos as u64;
                if let Some(r) = self.header_at(at)?
                    && r.first == self.first
                    && r.round >= self.round
                    && self.intact(at, &r)?
                {
                    found = Some((at, r));
                    break;
                }
            }
            pos += ALIGN;
        }
        // Then the records that follow it, in order
        let mut count = 0;
        while let Some((at, r)) = found.take() {
            count += u64::from(r.durable);
            from = at + padded(RECORD_HEADER as u64 + r.len);
            if let Some(next) = self.header_at(from)?
                && next.first == self.first
                && next.round == r.round + 1
                && self.intact(from, &next)?
            {
                found = Some((from, next));
            }
        }
        Ok(count)
    }

    /// The header of a record at `at`, if one can be there (magic number and length).
    fn header_at(&self, at: u64) -> std::io::Result<Option<RecordHeader>> {
        if at.saturating_add(RECORD_HEADER as u64) > self.len {
            return Ok(None);
        }
        let mut head = [0u8; RECORD_HEADER];
        self.file.read_exact_at(&mut head, at)?;
        Ok(RecordHeader::parse(&head).filter(|r| {
            at.saturating_add(RECORD_HEADER as u64)
                .saturating_add(r.len)
                <= self.len
        }))
    }

    /// Whether the record `r` at `at` passes its checksum; its body is left in the buffer.
    fn intact(&mut self, at: u64, r: &RecordHeader) -> std::io::Result<bool> {
        self.buf.resize(usize::try_from(r.len).unwrap_or(0), 0);
        self.file
            .read_exact_at(&mut self.buf, at + RECORD_HEADER as u64)?;
        Ok(record_crc(&r.covered, &self.buf) == r.crc)
    }

    fn damage_at(&self, offset: u64, round: u64, reason: String, later: u64) -> JournalDamage {
        JournalDamage {
            file: self.path.to_path_buf(),
            offset,
            round,
            reason,
            later,
        }
    }

    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }
}

/// `len` rounded up to the records' alignment.
pub(crate) fn padded(len: u64) -> u64 {
    len.div_ceil(ALIGN as u64) * ALIGN as u64
}
