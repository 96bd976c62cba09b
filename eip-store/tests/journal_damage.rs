//! The write-ahead journal's ends and damage: a torn tail is cut at the last intact record and
//! the store opens with every round before it; a record damaged in the middle stops the replay
//! there and is reported, with the journal kept beside it; `check` sees the journal's rounds;
//! a store of the format before the journal opens and is brought to the current format.

mod common;

use std::path::Path;

use bytes::Bytes;
use common::{ScratchDir, child_dir, open, read_all, record, run_child};
use eip_store::{DurableStore, StoreConfig};

const RECORD_MAGIC: &[u8; 4] = b"EJR1";
const HEADER_LEN: usize = 4096;

/// Run as a child: declares queue `q`, appends 20 records one at a time (each its own durable
/// round), prints how many resolved, then aborts with the rounds only in the journal.
#[test]
fn child_appending_one_at_a_time_then_crashing() {
    let Some(dir) = child_dir() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = open(&dir);
        let queue = store.queue("q").unwrap();
        let mut resolved = 0;
        for i in 0..20 {
            queue.append(record(i)).unwrap().await.unwrap();
            resolved += 1;
        }
        println!("CHILD: resolved {resolved}");
        std::process::abort()
    })
}

/// A crashed store whose journal holds the declaration of `q` and its 20 appends, one round
/// each; answers the offsets of the journal's records, in order.
fn crashed_store(dir: &Path) -> Vec<usize> {
    let output = run_child("child_appending_one_at_a_time_then_crashing", dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("CHILD: resolved 20"), "{stdout}");
    let journal = std::fs::read(dir.join("journal")).unwrap();
    let mut offsets = Vec::new();
    let mut at = HEADER_LEN;
    while journal.get(at..at + 4) == Some(RECORD_MAGIC) {
        offsets.push(at);
        let len = u32::from_le_bytes(journal[at + 4..at + 8].try_into().unwrap()) as usize;
        at += (32 + len).div_ceil(8) * 8;
    }
    // The declaration, then one round per append; a loaded machine may have left the child
    // idle long enough for a checkpoint, which started the journal over
    assert!(
        (2..=21).contains(&offsets.len()),
        "the journal holds the rounds since the last checkpoint: {}",
        offsets.len()
    );
    offsets
}

/// The record appended by the journal's `index`th record, of `count`: the last rounds were
/// the appends of records 0..20.
fn appended_by(index: usize, count: usize) -> u64 {
    (20 + index - count) as u64
}

/// Overwrites `len` bytes of the journal of `dir` at `at` with a pattern.
fn scribble(dir: &Path, at: usize, len: usize) {
    let path = dir.join("journal");
    let mut journal = std::fs::read(&path).unwrap();
    journal[at..at + len].iter_mut().for_each(|b| *b ^= 0x5A);
    std::fs::write(&path, journal).unwrap();
}

#[test]
fn a_crash_with_rounds_only_in_the_journal_loses_none_of_them() {
    let scratch = ScratchDir::new("journal-tail");
    crashed_store(scratch.path());
    let store = open(scratch.path());
    assert!(
        !store.repaired_on_open(),
        "the last durable commit was a checkpoint"
    );
    assert_eq!(store.journal_damage(), None);
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..20).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
}

#[test]
fn a_torn_tail_is_cut_at_the_last_intact_record_and_the_store_opens() {
    let scratch = ScratchDir::new("journal-torn");
    let offsets = crashed_store(scratch.path());
    let last = *offsets.last().unwrap();
    // The last record's body half written: its checksum fails
    scribble(scratch.path(), last + 40, 8);
    let store = open(scratch.path());
    assert_eq!(store.journal_damage(), None, "a torn tail is no damage");
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..19).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    // Sequence numbers go on from the last intact round
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let seq = runtime
        .block_on(queue.append(Bytes::from_static(b"next")).unwrap())
        .unwrap();
    assert_eq!(seq, 19);
    drop((queue, store));

    // A tail cut off short (the file truncated in the last record's header) is the same
    let scratch = ScratchDir::new("journal-truncated");
    let offsets = crashed_store(scratch.path());
    let journal = scratch.path().join("journal");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap();
    file.set_len(*offsets.last().unwrap() as u64 + 10).unwrap();
    drop(file);
    let store = open(scratch.path());
    assert_eq!(store.journal_damage(), None);
    let queue = store.queue("q").unwrap();
    assert_eq!(queue.len(), 19);
    assert_eq!(queue.head(), 19);
}

#[test]
fn a_record_damaged_in_the_middle_stops_the_replay_there_and_is_reported() {
    let scratch = ScratchDir::new("journal-middle");
    let offsets = crashed_store(scratch.path());
    let count = offsets.len();
    let damaged = count / 2;
    let first_lost = appended_by(damaged, count);
    let later = (count - 1 - damaged) as u64;
    scribble(scratch.path(), offsets[damaged] + 40, 4);

    // `check` sees what an open would: the rounds before the damage, and the damage
    let check = eip_store::check(scratch.path()).unwrap();
    let damage = check
        .journal_damage
        .clone()
        .expect("the check reports the damage");
    assert_eq!(damage.later, later, "{damage}");
    assert!(!check.is_clean());
    assert_eq!(check.journal_rounds, damaged as u64);
    assert_eq!(check.queues[0].intact, first_lost);

    let store = open(scratch.path());
    let damage = store
        .journal_damage()
        .expect("the damage is reported")
        .clone();
    assert_eq!(damage.offset, offsets[damaged] as u64);
    assert_eq!(
        damage.later, later,
        "the intact rounds after it are counted"
    );
    assert!(
        damage.to_string().contains("journal"),
        "the report names the journal: {damage}"
    );
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..first_lost).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    // The journal as it was is kept for inspection
    let kept = std::fs::read_dir(scratch.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("journal.damaged.")
        });
    assert!(kept, "the damaged journal is kept beside the store");
    drop((queue, store));

    // Reported once: the journal was started over
    let store = open(scratch.path());
    assert_eq!(store.journal_damage(), None);
    assert_eq!(store.queue("q").unwrap().len(), first_lost);
}

#[test]
fn check_and_salvage_of_a_crashed_store_see_the_rounds_in_its_journal() {
    let scratch = ScratchDir::new("journal-check");
    let count = crashed_store(scratch.path()).len();
    let before = std::fs::read(scratch.path().join("store.redb")).unwrap();
    let check = eip_store::check(scratch.path()).unwrap();
    assert!(check.is_clean(), "{check:?}");
    assert_eq!(check.journal_rounds, count as u64);
    assert_eq!(check.queues[0].intact, 20);
    assert_eq!(
        std::fs::read(scratch.path().join("store.redb")).unwrap(),
        before,
        "check changes nothing"
    );
    let into = ScratchDir::new("journal-salvaged");
    eip_store::salvage(scratch.path(), into.path()).unwrap();
    let store = open(into.path());
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..20).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
}

#[test]
fn a_store_of_the_format_before_the_journal_opens_and_is_brought_up_to_date() {
    let scratch = ScratchDir::new("journal-old-format");
    {
        let store = open(scratch.path());
        let queue = store.queue("q").unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for i in 0..5 {
            runtime.block_on(queue.append(record(i)).unwrap()).unwrap();
        }
    }
    // What a store of format 1 is: no journal, no round in the metadata, format 1
    let file = scratch.path().join("store.redb");
    {
        let db = redb::Database::open(&file).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("eip-store");
            let mut meta = txn.open_table(meta).unwrap();
            meta.insert("format", 1).unwrap();
            meta.remove("round").unwrap();
        }
        txn.commit().unwrap();
    }
    std::fs::remove_file(scratch.path().join("journal")).unwrap();
    std::fs::write(scratch.path().join("FORMAT"), "eip-store 1\n").unwrap();

    let store = DurableStore::open(scratch.path(), StoreConfig::default()).unwrap();
    assert_eq!(store.journal_damage(), None);
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..5).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    assert!(scratch.path().join("journal").exists());
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("FORMAT")).unwrap(),
        "eip-store 2\n"
    );
}

#[test]
fn a_damaged_journal_header_is_reported_and_its_records_still_read() {
    let scratch = ScratchDir::new("journal-header");
    crashed_store(scratch.path());
    // The generation field of the header: its checksum fails
    scribble(scratch.path(), 24, 4);
    let store = open(scratch.path());
    let damage = store
        .journal_damage()
        .expect("the damage is reported")
        .clone();
    assert_eq!(damage.offset, 0, "{damage}");
    assert_eq!(damage.later, 0, "nothing was lost: {damage}");
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..20).map(|i| (i, record(i))).collect::<Vec<_>>(),
        "the first record says which generation the records are of"
    );
}
