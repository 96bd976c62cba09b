//! The write-ahead journal: what makes a round durable with one write and one `fdatasync`.
//!
//! A durable commit of redb costs more than the disk's floor: its pages (several per round,
//! written copy-on-write), its header and an fsync, and with quick repair a second phase. The
//! committer therefore makes a round durable in `journal`, a file of its own in the data
//! directory, and gives redb the round without an fsync:
//!
//! 1. It writes the round into a redb write transaction, and each change it makes (an [`Op`],
//!    with explicit values: the sequence number an append was given, the row a queue was left
//!    with) is encoded into the round's journal record as it is applied ([`apply`]).
//! 2. It writes the record at the journal's end (one `pwrite`) and, if the round holds anything
//!    but acks, `fdatasync`s the journal. Only then is the transaction committed, with
//!    `Durability::None` (no write to the file: redb keeps the pages in memory), and only then
//!    are the tickets answered (a round of only appends and acks is answered before its commit,
//!    its records read from memory until the commit: `committer::publish`). A ticket thus
//!    resolves once its record is on disk in the journal. Acks alone are written without the `fdatasync`; the next durable record makes
//!    them durable with it (they are lazy, as before: a lost ack is a redelivery).
//! 3. Every so often the committer makes a *checkpoint*: a durable redb commit with quick
//!    repair (the allocator state saved, two phases), then resets the journal. A checkpoint
//!    comes when the journal passes [`StoreConfig::journal_bytes`](crate::StoreConfig), when
//!    the store has been idle for a moment, at close and after any failure. Every durable redb
//!    commit is such a checkpoint, so an open after a crash never needs redb's full repair.
//! 4. Each checkpoint records the number of the last round applied in the store's metadata (the
//!    rounds between checkpoints do not: they are not durable). An open
//!    reads it (the round `R` of the last checkpoint, after a crash), then replays every intact
//!    record of a round after `R`, in order, through the same [`apply`] the committer used,
//!    in one checkpoint commit; then it resets the journal.
//!
//! ## The file
//!
//! A header (the first [`HEADER_LEN`] bytes: a magic string, the journal's version, the
//! generation `first` and a CRC-32C) then records, each aligned to [`ALIGN`] bytes: a magic
//! number, the body's length, `first`, the round, flags (durable or lazy) and a CRC-32C over
//! all of that and the body. A reset writes a new header whose `first` is the next round and
//! `fdatasync`s it: records left from before carry another `first` and are never read as
//! records of the new generation, and a record of a round the file holds already (a crash
//! between a checkpoint and its reset) is skipped, so replaying twice changes nothing. Records
//! are written over the file's old bytes: the file keeps its size between resets, so an
//! `fdatasync` writes the record's blocks and no size metadata. It grows in zero-filled steps
//! of up to [`GROW`] bytes (a step costs one extra write and the metadata once); a round larger than
//! what is left makes it grow past `journal_bytes`, and a reset shrinks it back.
//!
//! ## What a crash costs
//!
//! An open after a crash reads the journal (at most about `journal_bytes`), opens redb at its
//! last checkpoint without a repair, and applies the journal's rounds: time in proportion to
//! the traffic since the last checkpoint, not to the data waiting. Reading stops at the first
//! record that is not intact ([`scan`]): a torn tail is normal and costs nothing that was
//! acknowledged. A damaged record followed by intact durable ones is damage: the rounds from
//! there on are not replayed (their order and completeness can not be trusted), the store opens
//! with what came before, and the loss is logged and reported
//! ([`DurableStore::journal_damage`](crate::DurableStore::journal_damage)).
//!
//! Between checkpoints redb can not reuse the pages freed since the last durable commit, so the
//! database file may grow by about what the journal holds; `journal_bytes` bounds that too.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::StoreError;

pub(crate) mod apply;
pub(crate) mod op;
mod replay;
pub(crate) mod scan;

pub(crate) use op::Op;
pub(crate) use replay::{Recovered, recover, replay};

/// The name of the journal in the data directory.
pub(crate) const JOURNAL_FILE: &str = "journal";
/// The bytes before the first record: the header, alone in its block.
pub(crate) const HEADER_LEN: u64 = 4096;
/// Records start at multiples of this.
pub(crate) const ALIGN: usize = 8;
/// The bytes of a record's header.
pub(crate) const RECORD_HEADER: usize = 32;
/// The first bytes of every record.
pub(crate) const RECORD_MAGIC: [u8; 4] = *b"EJR1";
/// A record's flag: it was fdatasynced (its round holds more than acks).
pub(crate) const DURABLE: u32 = 1;
/// The most the file grows at a time, zero-filled.
pub(crate) const GROW: u64 = 1 << 20;
/// The least the file grows at a time.
pub(crate) const MIN_GROW: u64 = 64 << 10;

/// Where a journal was found damaged on open, and what that cost.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournalDamage {
    /// The journal file.
    pub file: PathBuf,
    /// Where in it reading stopped.
    pub offset: u64,
    /// The round that was expected there (0 if not even that is known).
    pub round: u64,
    /// What was found.
    pub reason: String,
    /// Intact durable records found after the damage and not replayed: rounds whose tickets
    /// had resolved and that are lost.
    pub later: u64,
}

impl std::fmt::Display for JournalDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the journal {} is damaged at byte {}: {}",
            self.file.display(),
            self.offset,
            self.reason
        )
    }
}

/// Why a record could not be made durable.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// Writing it failed: the records before it are as they were.
    Write(std::io::Error),
    /// It was written, then the fdatasync failed: what reached the disk since the last one is
    /// unknown, records before it included.
    Sync(std::io::Error),
}

/// The CRC-32C of a record: its header's first 28 bytes, then its body.
pub(crate) fn record_crc(head: &[u8], body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(head), body)
}

/// The journal's header.
pub(crate) mod header {
    /// What the header starts with.
    const MAGIC: &[u8; 16] = b"eip-store journa";
    /// The version of the journal's layout.
    const VERSION: u32 = 1;
    const LEN: usize = 36;

    /// The header of a generation starting at round `first`.
    pub(crate) fn encode(first: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&out).to_le_bytes());
        out
    }

    /// The generation a header names, if it is intact.
    pub(crate) fn decode(bytes: &[u8]) -> Option<u64> {
        let head = bytes.get(..LEN)?;
        let crc = u32::from_le_bytes(head[32..36].try_into().ok()?);
        if &head[..16] != MAGIC || crc32c::crc32c(&head[..32]) != crc {
            return None;
        }
        if u32::from_le_bytes(head[16..20].try_into().ok()?) != VERSION {
            return None;
        }
        Some(u64::from_le_bytes(head[24..32].try_into().ok()?))
    }
}

/// The open journal file, as the committer writes it.
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
    /// The generation: the round of the first record after the header.
    first: u64,
    /// Where the next record goes.
    end: u64,
    /// The bytes of the file: written (zeros or records) up to here.
    filled: u64,
    /// The size past which the committer makes a checkpoint; a reset shrinks the file to it.
    limit: u64,
    /// Whether records were written since the last fdatasync.
    unsynced: bool,
}

impl Journal {
    /// Opens the journal of `dir`, creating an empty one if there is none (a new store, or
    /// one of the format before the journal).
    pub(crate) fn open(dir: &Path, limit: u64) -> Result<Journal, StoreError> {
        let path = dir.join(JOURNAL_FILE);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if !path.exists() {
            create(dir, &path)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(StoreError::Foreign {
                file: path,
                reason: "it is not a regular file".into(),
            });
        }
        Ok(Journal {
            file,
            path,
            first: 0,
            end: HEADER_LEN,
            filled: meta.len(),
            limit: limit.max(2 * HEADER_LEN),
            unsynced: false,
        })
    }

    /// The open file, to read it back.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a new generation whose first record will be round `first`: a new header, made
    /// durable before any record of it is written. Everything the file held before is never
    /// read as a record again.
    pub(crate) fn reset(&mut self, first: u64) -> Result<(), StoreError> {
        let header = header::encode(first);
        self.file
            .write_all_at(&header, 0)
            .map_err(|source| self.io(source))?;
        if self.filled > self.limit + GROW {
            self.file
                .set_len(self.limit)
                .map_err(|source| self.io(source))?;
            self.filled = self.limit;
        }
        self.file.sync_data().map_err(|source| self.io(source))?;
        self.filled = self.filled.max(HEADER_LEN);
        self.first = first;
        self.end = HEADER_LEN;
        self.unsynced = false;
        Ok(())
    }

    /// Goes on with the generation `first` the file's header names, which holds no record yet.
    pub(crate) fn adopt(&mut self, first: u64) {
        self.first = first;
        self.end = HEADER_LEN;
        self.unsynced = false;
    }

    /// Clears `record` and leaves room for a record's header at its start.
    pub(crate) fn begin(record: &mut Vec<u8>) {
        record.clear();
        record.resize(RECORD_HEADER, 0);
    }

    /// Writes `record` (begun by [`begin`](Self::begin), then the ops) as round `round` at the
    /// journal's end; `durable`: fdatasyncs the journal after it.
    pub(crate) fn write(
        &mut self,
        record: &mut Vec<u8>,
        round: u64,
        durable: bool,
    ) -> Result<(), WriteError> {
        self.append(record, round, durable)
            .map_err(WriteError::Write)?;
        if durable {
            self.sync().map_err(WriteError::Sync)?;
        }
        Ok(())
    }

    fn append(
        &mut self,
        record: &mut Vec<u8>,
        round: u64,
        durable: bool,
    ) -> Result<(), std::io::Error> {
        let body = record.len().saturating_sub(RECORD_HEADER);
        let len = u32::try_from(body).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a round of 4 GiB or more does not fit a journal record",
            )
        })?;
        let mut head = [0u8; RECORD_HEADER];
        head[0..4].copy_from_slice(&RECORD_MAGIC);
        head[4..8].copy_from_slice(&len.to_le_bytes());
        head[8..16].copy_from_slice(&self.first.to_le_bytes());
        head[16..24].copy_from_slice(&round.to_le_bytes());
        let flags: u32 = if durable { DURABLE } else { 0 };
        head[24..28].copy_from_slice(&flags.to_le_bytes());
        let crc = record_crc(&head[..28], &record[RECORD_HEADER..]);
        head[28..32].copy_from_slice(&crc.to_le_bytes());
        record[..RECORD_HEADER].copy_from_slice(&head);
        record.resize(scan::padded(record.len() as u64) as usize, 0);
        let end = self.end + record.len() as u64;
        if end > self.filled {
            self.grow(end)?;
        }
        self.file.write_all_at(record, self.end)?;
        self.end = end;
        self.unsynced = true;
        Ok(())
    }

    /// Where the next record goes, and the generation: to [`rewind`](Self::rewind) to.
    pub(crate) fn position(&self) -> (u64, u64) {
        (self.end, self.first)
    }

    /// Takes back every record written since `position` (if the journal was not reset since):
    /// the next record is written over them. For a round that failed: its record, whole or
    /// not, is never followed by another and so is never replayed after the next one is written.
    pub(crate) fn rewind(&mut self, (end, first): (u64, u64)) {
        if first == self.first && (HEADER_LEN..=self.end).contains(&end) {
            self.end = end;
        }
    }

    /// Makes every record written so far durable.
    pub(crate) fn sync(&mut self) -> Result<(), std::io::Error> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Whether records were written since the last fdatasync.
    pub(crate) fn unsynced(&self) -> bool {
        self.unsynced
    }

    /// Whether the journal has passed the size at which a checkpoint is due.
    pub(crate) fn is_full(&self) -> bool {
        self.end >= self.limit
    }

    /// Whether it holds records since its last reset.
    pub(crate) fn is_empty(&self) -> bool {
        self.end == HEADER_LEN
    }

    /// Zero-fills the file up to at least `end`: by its own size (a small store's journal stays
    /// small), at least [`MIN_GROW`] and at most [`GROW`] at a time, and not past the limit
    /// unless `end` is.
    fn grow(&mut self, end: u64) -> Result<(), std::io::Error> {
        let step = self.filled.clamp(MIN_GROW, GROW);
        let target = end.max(self.filled + step).min(end.max(self.limit));
        let zeros = vec![0u8; usize::try_from(GROW).unwrap_or(1 << 20)];
        let mut at = self.filled;
        while at < target {
            let len = (target - at).min(GROW) as usize;
            self.file.write_all_at(&zeros[..len], at)?;
            at += len as u64;
        }
        self.filled = target;
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// Creates an empty journal `path` whole: written under another name, synced, renamed, and the
/// directory synced, so a crash never leaves a journal that is half made.
fn create(dir: &Path, path: &Path) -> Result<(), StoreError> {
    let new = dir.join(format!("{JOURNAL_FILE}.new"));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    let file = File::create(&new).map_err(io(&new))?;
    let mut block = header::encode(0);
    block.resize(HEADER_LEN as usize, 0);
    file.write_all_at(&block, 0).map_err(io(&new))?;
    file.sync_all().map_err(io(&new))?;
    std::fs::rename(&new, path).map_err(io(path))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}
