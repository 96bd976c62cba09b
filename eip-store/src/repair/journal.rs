//! What `check` and `salvage` make of the journal: the rounds the database lacks are replayed
//! into a copy of it, so both see what an open would see, and the store is left as it was.

use std::path::Path;

use redb::{ReadableDatabase, TableError};

use super::{Readable, repaired_copy};
use crate::journal::scan::Reader;
use crate::journal::{self, JournalDamage};
use crate::schema::{META, ROUND_KEY};
use crate::{StoreError, quiet};

/// What the journal added to the database read.
#[derive(Debug, Default)]
pub(super) struct JournalRead {
    /// Rounds replayed from the journal.
    pub(super) rounds: u64,
    /// Damage met in the journal.
    pub(super) damage: Option<JournalDamage>,
}

/// `db` (the database `file` as read) with the rounds of the journal of `dir` it lacks: itself
/// if it lacks none, else a copy with them replayed.
pub(super) fn with_journal(
    db: Readable,
    dir: &Path,
    file: &Path,
) -> Result<(Readable, JournalRead), StoreError> {
    let path = dir.join(journal::JOURNAL_FILE);
    let journal_file = match std::fs::File::open(&path) {
        Ok(journal_file) => journal_file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((db, JournalRead::default()));
        }
        Err(source) => return Err(StoreError::Io { path, source }),
    };
    let held = held_round(&db, file)?;
    let mut reader = Reader::open(&journal_file, &path)?;
    let mut pending = false;
    while let Some(record) = reader.next()? {
        pending |= record.round > held;
    }
    let mut read = JournalRead {
        rounds: 0,
        damage: reader.finish()?,
    };
    if !pending {
        return Ok((db, read));
    }
    let db = match db {
        Readable::File(db) => {
            drop(db);
            repaired_copy(file)?
        }
        copy => copy,
    };
    let Readable::Copy { db: copy, .. } = &db else {
        return Err(StoreError::Damaged {
            file: file.to_path_buf(),
            reason: "no copy of it could be made to replay its journal into".into(),
        });
    };
    let mut reader = Reader::open(&journal_file, &path)?;
    let replayed = quiet::catch(|| journal::replay(copy, &mut reader, u64::MAX, true, file, &path))
        .unwrap_or_else(|detail| Err(StoreError::from_panic(file, detail)))?;
    read.rounds = replayed.records;
    read.damage = read.damage.or(replayed.damage);
    Ok((db, read))
}

/// The last round the database holds (0 for a store of the format before the journal).
fn held_round(db: &Readable, file: &Path) -> Result<u64, StoreError> {
    let txn = quiet::catch(|| match db {
        Readable::File(db) => db.begin_read(),
        Readable::Copy { db, .. } => db.begin_read(),
    })
    .map_err(|detail| StoreError::from_panic(file, detail))?
    .map_err(|e| StoreError::from_redb(file, e))?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(StoreError::from_redb(file, e)),
    };
    let round = redb::ReadableTable::get(&meta, ROUND_KEY)
        .map_err(|e| StoreError::from_redb(file, e))?
        .map_or(0, |v| v.value());
    Ok(round)
}
