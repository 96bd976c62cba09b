//! Checking a store for damage, and salvaging what it holds into a new store.
//!
//! Both read every record of every queue the way a durable channel does ([`scan`](crate::scan):
//! intact records, records that fail their checksum, sequence numbers on pages that can not be
//! read), and neither changes the store they read: the database is opened read-only, or, when
//! it was not closed cleanly and redb would have to repair it first, a copy of it is repaired
//! in the temporary directory and read instead. Both take the directory's lock, so they refuse a
//! store that a running flow has open ([`StoreError::InUse`]).
//!
//! Both read the write-ahead journal too: if the store was not closed cleanly, the rounds the
//! database file lacks are replayed into a copy of it, and the copy is read (a check reports how
//! many, and damage in the journal). Nothing accepted is thus missed, and nothing is changed.
//!
//! - [`check`] answers, per queue: how many records the queue says it holds, how many are
//!   intact, which ones are damaged, which sequence numbers can not be read; per key table the
//!   same for its entries; and what the quarantine already holds.
//! - [`salvage`] writes a new store in another directory: every queue under its name and id,
//!   with its head (so sequence numbers go on growing), every intact record under its own
//!   sequence number, every damaged one into the new store's quarantine along with what the old
//!   quarantine held; and every key table under its name and id with its intact entries
//!   (`tables`: a damaged entry is named by the check, not copied). The old directory stays as it was; swapping the new one in is the user's
//!   move, made while no flow runs.

use std::fs::File;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use redb::{Database, DatabaseError, ReadOnlyDatabase, ReadTransaction, ReadableDatabase};

use crate::quarantine::{self, QuarantinedRecord};
use crate::scan::{self, Scan, Target};
use crate::schema::{self, QUARANTINE, QUEUES};
use crate::table::{Raw, TableState};
use crate::{StoreError, frame, layout, quiet};

mod journal;
mod tables;

pub use tables::TableCheck;

/// How many records a check or salvage reads at a time.
const PAGE: usize = 1024;

/// What [`check`] found in a store, or what [`salvage`] copied out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreCheck {
    /// The database file read.
    pub file: PathBuf,
    /// Every queue, by name.
    pub queues: Vec<QueueCheck>,
    /// What the quarantine held already: records set aside by earlier reads.
    pub quarantined: Vec<QuarantinedRecord>,
    /// Every key table, by name.
    pub tables: Vec<TableCheck>,
    /// Rounds of the write-ahead journal the database file lacked (the store was not closed
    /// cleanly): they were replayed into a copy of it, which was read instead.
    pub journal_rounds: u64,
    /// Damage found in the journal: rounds from there on were not read.
    pub journal_damage: Option<crate::JournalDamage>,
}

impl StoreCheck {
    /// Whether nothing is damaged: every record of every queue is intact. Records the
    /// quarantine held already do not count: they were dealt with.
    pub fn is_clean(&self) -> bool {
        self.queues.iter().all(QueueCheck::is_clean)
            && self.tables.iter().all(TableCheck::is_clean)
            && self.journal_damage.is_none()
    }
}

/// What [`check`] found in one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueCheck {
    /// The queue's name.
    pub name: String,
    /// The sequence number its next record will have.
    pub head: u64,
    /// How many records the queue's table says it holds (`None` if not even that can be read).
    pub records: Option<u64>,
    /// How many records are intact.
    pub intact: u64,
    /// The sequence numbers of the records that fail their checksum.
    pub damaged: Vec<u64>,
    /// Sequence numbers on pages that can not be read: any record there is lost.
    pub unreadable: Vec<RangeInclusive<u64>>,
    /// Records the queue's table counts but no read found, intact, damaged or unreadable: the
    /// damage removed them from a page's list of entries.
    pub missing: u64,
}

impl QueueCheck {
    /// Whether every record of the queue is intact.
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty() && self.unreadable.is_empty() && self.missing == 0
    }
}

/// Reads every record of the store in `dir` and says what is damaged, changing nothing.
///
/// Fails, naming the file, when the store can not be read at all: not a store
/// ([`StoreError::Foreign`]), a format this build does not read
/// ([`StoreError::UnsupportedFormat`]), its list of queues unreadable ([`StoreError::Damaged`]),
/// open elsewhere ([`StoreError::InUse`]).
pub fn check(dir: impl AsRef<Path>) -> Result<StoreCheck, StoreError> {
    let source = Source::open(dir.as_ref())?;
    source.read(|_, _| Ok(()), |_, _| Ok(()))
}

/// Copies every intact record of the store in `dir` into a new store in `into` (which must not
/// hold a store yet), the damaged ones into its quarantine; leaves `dir` as it was. Answers what
/// it found, as [`check`] does.
pub fn salvage(dir: impl AsRef<Path>, into: impl AsRef<Path>) -> Result<StoreCheck, StoreError> {
    let source = Source::open(dir.as_ref())?;
    let into = into.as_ref();
    let file = into.join(layout::DATABASE_FILE);
    if file.exists() || into.join(layout::FORMAT_FILE).exists() {
        return Err(StoreError::Io {
            path: into.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a salvage writes a new store: this directory holds one already",
            ),
        });
    }
    let _lock = layout::patiently(|| layout::lock(into))?;
    let redb_error = |e: redb::Error| StoreError::from_redb(&file, e);
    let db = Database::create(&file).map_err(|e| redb_error(e.into()))?;
    crate::open::initialise(&db, &file)?;
    let txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
    let found = {
        let mut queues = txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
        let mut aside = txn
            .open_table(QUARANTINE)
            .map_err(|e| redb_error(e.into()))?;
        let found = source.read(
            |queue, page| {
                let mut records = txn
                    .open_table(schema::records(&schema::records_table_name(queue.id)))
                    .map_err(|e| redb_error(e.into()))?;
                for (seq, payload) in &page.records {
                    let framed = frame::encode(queue.id, *seq, payload);
                    records
                        .insert(*seq, framed.as_slice())
                        .map_err(|e| redb_error(e.into()))?;
                }
                for damaged in &page.damaged {
                    let reason = format!(
                        "record {} of queue {:?} fails its checksum (found by salvage)",
                        damaged.seq, queue.name
                    );
                    let at = quarantine::now_ms();
                    aside
                        .insert(
                            (queue.name.as_str(), damaged.seq),
                            (damaged.bytes.as_ref(), reason.as_str(), at),
                        )
                        .map_err(|e| redb_error(e.into()))?;
                }
                Ok(())
            },
            |table, intact| tables::write(&txn, table, intact).map_err(redb_error),
        )?;
        for queue in &source.queues()? {
            let bytes = live_bytes(&txn, queue.id).map_err(redb_error)?;
            queues
                .insert(queue.name.as_str(), (queue.id, queue.head, bytes))
                .map_err(|e| redb_error(e.into()))?;
        }
        for old in &found.quarantined {
            let at = old
                .at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            aside
                .insert(
                    (old.queue.as_str(), old.seq),
                    (old.bytes.as_ref(), old.reason.as_str(), at),
                )
                .map_err(|e| redb_error(e.into()))?;
        }
        found
    };
    txn.commit().map_err(|e| redb_error(e.into()))?;
    drop(db);
    layout::mark_initialised(into, None)?;
    Ok(found)
}

/// The payload bytes of every record written for queue `id` in the new store.
fn live_bytes(txn: &redb::WriteTransaction, id: u32) -> Result<u64, redb::Error> {
    let table = txn.open_table(schema::records(&schema::records_table_name(id)))?;
    let mut bytes = 0u64;
    for entry in redb::ReadableTable::iter(&table)? {
        let (_, value) = entry?;
        bytes = bytes.saturating_add(frame::payload_len(value.value()));
    }
    Ok(bytes)
}

/// One row of the `queues` table.
struct QueueRow {
    name: String,
    id: u32,
    head: u64,
}

/// A store opened for reading only, under its directory's lock.
struct Source {
    file: PathBuf,
    db: Readable,
    /// What the journal added to `db`.
    journal: journal::JournalRead,
    _lock: File,
}

/// The database as read: the file itself, or a repaired copy of it.
enum Readable {
    File(ReadOnlyDatabase),
    Copy {
        db: Database,
        /// Removed once the database is closed (fields drop in order).
        _file: TempCopy,
    },
}

impl Source {
    fn open(dir: &Path) -> Result<Source, StoreError> {
        layout::patiently(|| Source::open_once(dir))
    }

    fn open_once(dir: &Path) -> Result<Source, StoreError> {
        let file = dir.join(layout::DATABASE_FILE);
        if !file.is_file() {
            return Err(StoreError::Io {
                path: file,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "there is no store database here",
                ),
            });
        }
        let lock = layout::lock(dir)?;
        layout::check_format(dir)?;
        let file = layout::check_database_file(dir)?;
        let db = match quiet::catch(|| ReadOnlyDatabase::open(&file)) {
            Ok(Ok(db)) => Readable::File(db),
            // Not closed cleanly (or its allocator state is damaged): repair a copy instead
            Ok(Err(DatabaseError::RepairAborted)) | Ok(Err(DatabaseError::Storage(_))) | Err(_) => {
                repaired_copy(&file)?
            }
            Ok(Err(e)) => return Err(StoreError::from_redb(&file, e)),
        };
        let (db, journal) = journal::with_journal(db, dir, &file)?;
        let source = Source {
            file,
            db,
            journal,
            _lock: lock,
        };
        let txn = source.begin()?;
        crate::open::check_format_table(&txn, &source.file)?;
        Ok(source)
    }

    fn begin(&self) -> Result<ReadTransaction, StoreError> {
        let begun = quiet::catch(|| match &self.db {
            Readable::File(db) => db.begin_read(),
            Readable::Copy { db, .. } => db.begin_read(),
        });
        begun
            .map_err(|detail| StoreError::from_panic(&self.file, detail))?
            .map_err(|e| StoreError::from_redb(&self.file, e))
    }

    fn queues(&self) -> Result<Vec<QueueRow>, StoreError> {
        let txn = self.begin()?;
        let read = || -> Result<Vec<QueueRow>, redb::Error> {
            let table = txn.open_table(QUEUES)?;
            let mut rows = Vec::new();
            for row in redb::ReadableTable::iter(&table)? {
                let (name, value) = row?;
                let (id, head, _) = value.value();
                rows.push(QueueRow {
                    name: name.value().to_string(),
                    id,
                    head,
                });
            }
            Ok(rows)
        };
        quiet::catch(read)
            .map_err(|detail| StoreError::from_panic(&self.file, detail))?
            .map_err(|e| StoreError::from_redb(&self.file, e))
    }

    /// Reads every queue page by page, handing each page to `each`, then every key table,
    /// handing its intact entries to `each_table`.
    fn read(
        &self,
        mut each: impl FnMut(&QueueRow, &Scan) -> Result<(), StoreError>,
        mut each_table: impl FnMut(&TableState, &[Raw]) -> Result<(), StoreError>,
    ) -> Result<StoreCheck, StoreError> {
        let txn = self.begin()?;
        let mut queues = Vec::new();
        for row in self.queues()? {
            queues.push(self.read_queue(&txn, &row, &mut each)?);
        }
        let mut checks = Vec::new();
        for (table, check, intact) in tables::read(&txn, &self.file)? {
            each_table(&table, &intact)?;
            checks.push(check);
        }
        Ok(StoreCheck {
            file: self.file.clone(),
            queues,
            quarantined: quarantine::list(&txn, &self.file)?,
            tables: checks,
            journal_rounds: self.journal.rounds,
            journal_damage: self.journal.damage.clone(),
        })
    }

    fn read_queue(
        &self,
        txn: &ReadTransaction,
        row: &QueueRow,
        each: &mut impl FnMut(&QueueRow, &Scan) -> Result<(), StoreError>,
    ) -> Result<QueueCheck, StoreError> {
        let table = schema::records_table_name(row.id);
        let records = quiet::catch(|| {
            let table = txn.open_table(schema::records(&table)).ok()?;
            redb::ReadableTableMetadata::len(&table).ok()
        })
        .ok()
        .flatten();
        let mut check = QueueCheck {
            name: row.name.clone(),
            head: row.head,
            records,
            intact: 0,
            damaged: Vec::new(),
            unreadable: Vec::new(),
            missing: 0,
        };
        let skip = Default::default();
        let target = Target {
            file: &self.file,
            id: row.id,
            table: &table,
            head: row.head,
            skip: &skip,
        };
        let mut next = 0;
        loop {
            let page = scan::scan(txn, &target, next, PAGE)?;
            each(row, &page)?;
            check.intact += page.records.len() as u64;
            check.damaged.extend(page.damaged.iter().map(|d| d.seq));
            check.unreadable.extend(page.unreadable.iter().cloned());
            if page.next <= next || page.next >= row.head && page.records.len() < PAGE {
                let unreadable: u64 = check
                    .unreadable
                    .iter()
                    .map(|r| r.end() - r.start() + 1)
                    .sum();
                let found = check.intact + check.damaged.len() as u64 + unreadable;
                check.missing = check.records.unwrap_or(0).saturating_sub(found);
                break Ok(check);
            }
            next = page.next;
        }
    }
}

/// A copy of the database in the temporary directory, removed on drop.
struct TempCopy(PathBuf);

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Copies `file` into the temporary directory and opens the copy, letting redb repair it.
fn repaired_copy(file: &Path) -> Result<Readable, StoreError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let copy = TempCopy(
        std::env::temp_dir().join(format!("eip-store-repair-{}-{n}.redb", std::process::id())),
    );
    std::fs::copy(file, &copy.0).map_err(|source| StoreError::Io {
        path: copy.0.clone(),
        source,
    })?;
    let opened = quiet::catch(|| Database::create(&copy.0))
        .map_err(|detail| StoreError::from_panic(file, detail))?
        .map_err(|e| StoreError::from_redb(file, e))?;
    Ok(Readable::Copy {
        db: opened,
        _file: copy,
    })
}
