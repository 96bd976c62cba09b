//! Replaying the journal into the database: on open, after a reopen of the file, and into the
//! copy that `check` and `salvage` read.

use std::path::Path;

use redb::{Database, Durability, ReadableTable};

use super::JournalDamage;
use super::apply::Writer;
use super::op;
use super::scan::Reader;
use crate::StoreError;
use crate::schema::{FORMAT_KEY, FORMAT_VERSION, META, ROUND_KEY};

/// What a replay did.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    /// The last round the database holds now.
    pub(crate) round: u64,
    /// How many records it applied.
    pub(crate) records: u64,
    /// A record that passed its checksum and does not decode: replay stopped there.
    pub(crate) damage: Option<JournalDamage>,
}

/// Applies to `db` (the database `file`) every record `journal` reads of a round after the
/// one it holds and not after `upto`, in order, in one transaction, the format brought up to
/// this build's on the way. `durable`: commits it durably with quick repair, a checkpoint
/// holding everything the journal held; else without an fsync (the journal still holds the
/// rounds). Reads the journal to its end either way.
pub(crate) fn replay(
    db: &Database,
    journal: &mut Reader<'_>,
    upto: u64,
    durable: bool,
    file: &Path,
    path: &Path,
) -> Result<Replayed, StoreError> {
    let redb_error = |e: redb::Error| StoreError::from_redb(file, e);
    let mut txn = db.begin_write().map_err(|e| redb_error(e.into()))?;
    if durable {
        txn.set_durability(Durability::Immediate)
            .map_err(|e| redb_error(e.into()))?;
        txn.set_quick_repair(true);
    } else {
        txn.set_durability(Durability::None)
            .map_err(|e| redb_error(e.into()))?;
    }
    let mut replayed = Replayed::default();
    let (held, format) = {
        let meta = txn.open_table(META).map_err(|e| redb_error(e.into()))?;
        let held = meta
            .get(ROUND_KEY)
            .map_err(|e| redb_error(e.into()))?
            .map_or(0, |v| v.value());
        let format = meta
            .get(FORMAT_KEY)
            .map_err(|e| redb_error(e.into()))?
            .map(|v| v.value());
        (held, format)
    };
    replayed.round = held;
    {
        let mut writer = Writer::new(&txn, None).map_err(redb_error)?;
        while let Some(record) = journal.next()? {
            if record.round <= held || record.round > upto {
                continue;
            }
            let ops = match op::decode(record.body) {
                Ok(ops) => ops,
                Err(error) => {
                    replayed.damage = Some(JournalDamage {
                        file: path.to_path_buf(),
                        offset: record.offset,
                        round: record.round,
                        reason: format!(
                            "record {} passes its checksum but does not decode ({error}): it and \
                             the records after it were not replayed",
                            record.round
                        ),
                        later: 0,
                    });
                    break;
                }
            };
            for op in &ops {
                writer.apply(op).map_err(redb_error)?;
            }
            replayed.round = record.round;
            replayed.records += 1;
        }
        if replayed.records > 0 {
            writer.finish(replayed.round).map_err(redb_error)?;
        }
    }
    if replayed.records == 0 && format == Some(FORMAT_VERSION) {
        // Nothing to write: no commit, so a damaged file is left to the reads to work around
        txn.abort().map_err(|e| redb_error(e.into()))?;
        return Ok(replayed);
    }
    if format != Some(FORMAT_VERSION) {
        let mut meta = txn.open_table(META).map_err(|e| redb_error(e.into()))?;
        meta.insert(FORMAT_KEY, FORMAT_VERSION)
            .map_err(|e| redb_error(e.into()))?;
    }
    txn.commit().map_err(|e| redb_error(e.into()))?;
    Ok(replayed)
}

/// What [`recover`] did: the round the database holds, and damage met in the journal.
#[derive(Debug)]
pub(crate) struct Recovered {
    /// The last round the database holds.
    pub(crate) round: u64,
    /// The round of the journal's next record.
    pub(crate) next: u64,
    pub(crate) damage: Option<JournalDamage>,
}

/// On open: brings `db` (the database `file`) up to date with `journal`: replays its intact
/// records of rounds after the database's in one checkpoint commit, then resets the journal to
/// start after them. Damage met is logged, and the journal as it was is kept beside it
/// (`journal.damaged.<round>`) before the reset. The new generation starts past every round
/// the file may hold, so a record of a round that failed, left in the file, never reads as
/// one of the new generation.
pub(crate) fn recover(
    db: &Database,
    journal: &mut super::Journal,
    file: &Path,
) -> Result<Recovered, StoreError> {
    let path = journal.path().to_path_buf();
    let mut reader = Reader::open(journal.file(), &path)?;
    let replayed = replay(db, &mut reader, u64::MAX, true, file, &path)?;
    let written = reader.round_after();
    let first = reader.first;
    let damage = reader.finish()?.or(replayed.damage);
    if let Some(damage) = &damage {
        tracing::error!(%damage, later = damage.later, "eip-store: the journal is damaged; the store opens with the rounds before the damage");
        let copy = path.with_file_name(format!("{}.damaged.{}", super::JOURNAL_FILE, damage.round));
        if let Err(error) = std::fs::copy(&path, &copy) {
            tracing::error!(%error, copy = %copy.display(), "eip-store: the damaged journal could not be kept");
        }
    }
    if replayed.records > 0 {
        tracing::info!(
            records = replayed.records,
            round = replayed.round,
            "eip-store: replayed the journal"
        );
    }
    let next = written.max(replayed.round + 1);
    if written == first && first == next && damage.is_none() {
        // A generation with no record yet, after the database's round (a clean close, an
        // idle checkpoint): it goes on as it is, without a write
        journal.adopt(first);
    } else {
        journal.reset(next)?;
    }
    Ok(Recovered {
        round: replayed.round,
        next,
        damage,
    })
}
