//! A database file that is not the store's, or is damaged, gives a clear error naming the file, or
//! opens and delivers every record the damage did not touch: never a panic, never a wrong record.

mod common;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use common::{ScratchDir, damage, open, record};
use eip_store::{DurableStore, StoreConfig, StoreError};

const RECORDS: u64 = 200;

fn database(dir: &Path) -> PathBuf {
    dir.join("store.redb")
}

/// A store holding `RECORDS` records of about 1 KiB in queue "q", closed cleanly.
fn store_with_records(dir: &Path) -> Vec<(u64, Bytes)> {
    let store = open(dir);
    let queue = store.queue("q").unwrap();
    let records: Vec<Bytes> = (0..RECORDS)
        .map(|i| Bytes::from([record(i).as_ref(), &[b'.'; 1000]].concat()))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tickets: Vec<_> = records
            .iter()
            .map(|r| queue.append(r.clone()).unwrap())
            .collect();
        for ticket in tickets {
            ticket.await.unwrap();
        }
    });
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .collect()
}

/// Opens `dir` and reads everything: Ok(records) or the first error, which must name `file`.
fn open_and_read(dir: &Path) -> Result<Vec<(u64, Bytes)>, StoreError> {
    let store = DurableStore::open(dir, StoreConfig::default())?;
    if !store.queue_names().contains(&"q".to_string()) {
        return Ok(Vec::new());
    }
    let queue = store.queue("q")?;
    damage::read_all(&queue)
}

fn assert_names_file(error: &StoreError, file: &Path) {
    let named = match error {
        StoreError::Damaged { file: f, .. } | StoreError::Foreign { file: f, .. } => f,
        StoreError::Io { path, .. } => path,
        other => panic!("expected Damaged, Foreign or Io, got {other:?}"),
    };
    assert_eq!(named, file, "{error}");
    assert!(
        error.to_string().contains(&file.display().to_string()),
        "{error}"
    );
}

#[test]
fn a_text_file_in_place_of_the_database_is_foreign() {
    let dir = ScratchDir::new("text");
    std::fs::create_dir_all(dir.path()).unwrap();
    std::fs::write(database(dir.path()), "just some notes, not a database\n").unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert_names_file(&error, &database(dir.path()));
}

#[test]
fn random_bytes_in_place_of_the_database_are_foreign() {
    let dir = ScratchDir::new("random");
    std::fs::create_dir_all(dir.path()).unwrap();
    std::fs::write(database(dir.path()), pseudo_random(1 << 16, 42)).unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert_names_file(&error, &database(dir.path()));
}

#[test]
fn a_redb_database_of_another_program_is_foreign() {
    let dir = ScratchDir::new("other-redb");
    std::fs::create_dir_all(dir.path()).unwrap();
    let db = redb::Database::create(database(dir.path())).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let table: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("settings");
        txn.open_table(table).unwrap().insert("a", "b").unwrap();
    }
    txn.commit().unwrap();
    drop(db);
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert_names_file(&error, &database(dir.path()));
}

#[test]
fn a_lost_or_emptied_database_is_damaged_not_a_new_store() {
    let dir = ScratchDir::new("lost");
    store_with_records(dir.path());
    std::fs::write(database(dir.path()), b"").unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error:?}");
    assert_names_file(&error, &database(dir.path()));
    std::fs::remove_file(database(dir.path())).unwrap();
    let error = DurableStore::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error:?}");
}

#[test]
fn a_truncated_database_is_damaged_or_opens_with_every_record() {
    let dir = ScratchDir::new("truncated");
    let committed = store_with_records(dir.path());
    let original = std::fs::read(database(dir.path())).unwrap();
    let len = original.len();
    let mut offsets = vec![
        1,
        5,
        9,
        100,
        512,
        4096,
        4096 + 17,
        8192,
        len / 4,
        len / 2,
        len - 4096,
        len - 1,
    ];
    offsets.retain(|&o| o < len);
    for offset in offsets {
        std::fs::write(database(dir.path()), &original[..offset]).unwrap();
        match open_and_read(dir.path()) {
            Ok(records) => assert_eq!(records, committed, "truncated at {offset} of {len}"),
            Err(error) => assert_names_file(&error, &database(dir.path())),
        }
    }
}

#[test]
fn a_database_with_overwritten_pages_is_refused_or_delivers_every_record_on_intact_pages() {
    let dir = ScratchDir::new("overwritten");
    let committed = store_with_records(dir.path());
    let original = std::fs::read(database(dir.path())).unwrap();
    let spans = damage::spans(&original, &committed);
    let len = original.len();
    for (i, at) in [64, 512, 4096, len / 3, len / 2, len - 4096]
        .into_iter()
        .enumerate()
    {
        let mut damaged = original.clone();
        let end = (at + 512).min(len);
        damaged[at..end].copy_from_slice(&pseudo_random(end - at, i as u64 + 1));
        std::fs::write(database(dir.path()), &damaged).unwrap();
        let hit = at / damage::PAGE..=(end - 1) / damage::PAGE;
        let on_intact_pages = committed.iter().zip(&spans).filter(|(_, span)| {
            let on = damage::pages(span);
            on.end() < hit.start() || hit.end() < on.start()
        });
        match open_and_read(dir.path()) {
            Ok(records) => {
                for (record, _) in on_intact_pages {
                    assert!(
                        records.contains(record),
                        "record {} (bytes {at}..{end} of {len} overwritten)",
                        record.0
                    );
                }
                assert!(
                    records.iter().all(|r| committed.contains(r)),
                    "no wrong bytes"
                );
            }
            Err(error) => assert_names_file(&error, &database(dir.path())),
        }
    }
}

/// Deterministic noise (xorshift), so a failure can be replayed.
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
