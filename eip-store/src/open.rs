//! Opening the database file: created whole or not at all, its format checked, the journal
//! replayed into it, and every queue's and key table's state read from it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableError,
};

use crate::journal::{Journal, Recovered};
use crate::queue::QueueState;
use crate::schema::{self, FORMAT_KEY, FORMAT_VERSION, META, QUEUES};
use crate::table::TableState;
use crate::{StoreConfig, StoreError};

/// What [`open_database`] opened.
pub(crate) struct Opened {
    pub(crate) db: Database,
    pub(crate) queues: Vec<QueueState>,
    pub(crate) tables: Vec<TableState>,
    pub(crate) journal: Journal,
    pub(crate) recovered: Recovered,
}

/// Opens (or creates) the database, replays the journal into it, and reads every queue's state
/// from it; `repaired` is set if redb had to repair the file (a crash of a store whose last
/// durable commit was not a checkpoint: one of the format before the journal).
pub(crate) fn open_database(
    dir: &Path,
    file: &Path,
    config: &StoreConfig,
    found: Option<u64>,
    repaired: Arc<AtomicBool>,
) -> Result<Opened, StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let mut builder = Database::builder();
    builder.set_cache_size(config.cache_bytes);
    builder.set_repair_callback(move |_| repaired.store(true, Ordering::Relaxed));
    if is_absent_or_empty(file)? {
        create_database(&builder, file)?;
    }
    let db = crate::backend::open(&builder, file).map_err(|e| redb_error(e.into()))?;
    initialise(&db, file)?;
    let existed = dir.join(crate::journal::JOURNAL_FILE).exists();
    if !existed && found == Some(schema::FORMAT_VERSION) {
        tracing::error!(dir = %dir.display(), "eip-store: the store's journal is missing: rounds committed after its last checkpoint, if any, are lost");
    }
    let mut journal = Journal::open(dir, config.journal_bytes)?;
    let recovered = crate::journal::recover(&db, &mut journal, file)?;
    let txn = db.begin_read().map_err(|e| redb_error(e.into()))?;
    let queues = txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
    let mut states = Vec::new();
    for row in queues.iter().map_err(|e| redb_error(e.into()))? {
        let (name, value) = row.map_err(|e| redb_error(e.into()))?;
        let (id, head, bytes) = value.value();
        let name = name.value().to_string();
        let table = schema::records_table_name(id);
        let records = txn
            .open_table(schema::records(&table))
            .map_err(|e| match e {
                TableError::TableDoesNotExist(_) => StoreError::Damaged {
                    file: file.to_path_buf(),
                    reason: format!("queue {name:?} has lost its records table {table:?}"),
                },
                other => redb_error(other.into()),
            })?;
        let len = records.len().map_err(|e| redb_error(e.into()))?;
        // A damaged last page is left to the reads, which work around it
        let last = match crate::quiet::catch(|| records.last().map(|l| l.map(|(k, _)| k.value()))) {
            Ok(Ok(last)) => last,
            Ok(Err(e)) => {
                let e = redb::Error::from(e);
                if !crate::scan::is_damage(&e) {
                    return Err(redb_error(e));
                }
                None
            }
            Err(_) => None,
        };
        if let Some(seq) = last
            && seq >= head
        {
            return Err(StoreError::Damaged {
                file: file.to_path_buf(),
                reason: format!("queue {name:?} holds record {seq} at or past its head {head}"),
            });
        }
        states.push(QueueState::new(name, id, head, len, bytes));
    }
    drop(queues);
    let tables = crate::table::load(&txn, file)?;
    drop(txn);
    Ok(Opened {
        db,
        queues: states,
        tables,
        journal,
        recovered,
    })
}

/// The format version the database records, if it has the store's metadata table.
fn recorded_format(txn: &ReadTransaction, file: &Path) -> Result<Option<u64>, StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    match txn.open_table(META) {
        Ok(meta) => Ok(meta
            .get(FORMAT_KEY)
            .map_err(|e| redb_error(e.into()))?
            .map(|v| v.value())),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(redb_error(e.into())),
    }
}

fn unsupported(file: &Path, found: u64) -> StoreError {
    StoreError::UnsupportedFormat {
        file: file.to_path_buf(),
        found: found.to_string(),
        supported: FORMAT_VERSION,
    }
}

/// Checks that an existing database is a store of the format this build reads.
pub(crate) fn check_format_table(txn: &ReadTransaction, file: &Path) -> Result<(), StoreError> {
    match recorded_format(txn, file)? {
        Some(version) if schema::is_readable(version) => Ok(()),
        Some(other) => Err(unsupported(file, other)),
        None => Err(StoreError::Foreign {
            file: file.to_path_buf(),
            reason: "a redb database without eip-store's metadata table".into(),
        }),
    }
}

/// Creates the store's tables in a new database; refuses a redb database of another program.
/// Whether `file` is yet to be created: missing, or empty (the layout check has already refused
/// an empty file in a directory that held a store).
fn is_absent_or_empty(file: &Path) -> Result<bool, StoreError> {
    match std::fs::metadata(file) {
        Ok(meta) => Ok(meta.len() == 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(source) => Err(StoreError::Io {
            path: file.to_path_buf(),
            source,
        }),
    }
}

/// Creates the database `file` whole or not at all: it is made and initialised under a
/// temporary name next to it, then renamed into place. A process killed while the engine lays
/// out a new file (its header is written last) leaves only the temporary file, which the next
/// creation starts over; `file` itself is never a half-made database that no open can read.
fn create_database(builder: &redb::Builder, file: &Path) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    let new = file.with_extension("redb.new");
    match std::fs::remove_file(&new) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&new)(e)),
        _ => {}
    }
    let db = crate::backend::create_new(builder, &new)
        .map_err(|e| StoreError::from_redb(&new, redb::Error::from(e)))?;
    initialise(&db, &new)?;
    drop(db);
    std::fs::File::open(&new)
        .and_then(|f| f.sync_all())
        .map_err(io(&new))?;
    std::fs::rename(&new, file).map_err(io(file))?;
    // The new directory entry too, or a power loss could forget the rename
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

pub(crate) fn initialise(db: &Database, file: &Path) -> Result<(), StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let txn = db.begin_read().map_err(|e| redb_error(e.into()))?;
    match recorded_format(&txn, file)? {
        Some(version) if schema::is_readable(version) => return Ok(()),
        Some(other) => return Err(unsupported(file, other)),
        None => {}
    }
    let tables = txn.list_tables().map_err(|e| redb_error(e.into()))?.count();
    if tables > 0 {
        return Err(StoreError::Foreign {
            file: file.to_path_buf(),
            reason: "a redb database of another program".into(),
        });
    }
    drop(txn);
    let txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| redb_error(e.into()))?;
        meta.insert(FORMAT_KEY, FORMAT_VERSION)
            .map_err(|e| redb_error(e.into()))?;
        txn.open_table(QUEUES).map_err(|e| redb_error(e.into()))?;
    }
    txn.commit().map_err(|e| redb_error(e.into()))
}
