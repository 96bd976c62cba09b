//! Range deletes and appends written together, applied by the committer, and the same journal
//! record replayed give the same table.

use redb::backends::InMemoryBackend;
use redb::{Database, ReadableDatabase, ReadableTable};

use super::Writer;
use crate::journal::op::{Op, decode};
use crate::{frame, schema};

fn database() -> Database {
    Database::builder()
        .create_with_backend(InMemoryBackend::new())
        .unwrap()
}

/// The sequence numbers and payloads of queue 0.
fn records(db: &Database) -> Vec<(u64, Vec<u8>)> {
    let txn = db.begin_read().unwrap();
    let name = schema::records_table_name(0);
    let table = txn.open_table(schema::records(&name)).unwrap();
    table
        .iter()
        .unwrap()
        .map(|entry| {
            let (seq, frame) = entry.unwrap();
            (seq.value(), frame::payload_part(frame.value()).to_vec())
        })
        .collect()
}

/// Appends records 0..10 of 3 bytes each, then deletes 2..=5 and 4..=12 as ranges; answers
/// the journal record's body, the seqs each range found and the bytes each freed.
fn write(db: &Database) -> (Vec<u8>, Vec<(Vec<u64>, u64)>) {
    let mut body = Vec::new();
    let mut ranges = Vec::new();
    let txn = db.begin_write().unwrap();
    {
        let mut w = Writer::new(&txn, Some(&mut body)).unwrap();
        w.apply(&Op::DeclareQueue { name: "q", id: 0 }).unwrap();
        for seq in 0..10 {
            let record = format!("r{seq:02}");
            let op = Op::Append {
                queue: 0,
                seq,
                record: record.as_bytes(),
            };
            w.apply(&op).unwrap();
        }
        for (first, last) in [(2, 5), (4, 12)] {
            let mut found = Vec::new();
            let freed = w
                .apply_delete_range(0, first, last, |seq| found.push(seq))
                .unwrap();
            ranges.push((found, freed));
        }
    }
    txn.commit().unwrap();
    (body, ranges)
}

#[test]
fn a_range_delete_finds_what_is_there_and_replays_to_the_same_table() {
    let db = database();
    let (body, ranges) = write(&db);
    assert_eq!(
        ranges,
        vec![(vec![2, 3, 4, 5], 12), (vec![6, 7, 8, 9], 12)],
        "each range finds only the records still there, and frees their payloads"
    );
    let left = vec![(0, b"r00".to_vec()), (1, b"r01".to_vec())];
    assert_eq!(records(&db), left);

    let ops = decode(&body).unwrap();
    assert!(ops.contains(&Op::DeleteRange {
        queue: 0,
        first: 4,
        last: 12
    }));
    // Replayed into a fresh database, as an open after a crash does
    let replayed = database();
    let txn = replayed.begin_write().unwrap();
    {
        let mut w = Writer::new(&txn, None).unwrap();
        let applied: Vec<_> = ops.iter().map(|op| w.apply(op).unwrap()).collect();
        let ranges: Vec<_> = applied[11..].iter().map(|a| (a.count, a.freed)).collect();
        assert_eq!(ranges, vec![(4, 12), (4, 12)]);
    }
    txn.commit().unwrap();
    assert_eq!(records(&replayed), left);
}

#[test]
fn appends_written_together_are_journaled_one_by_one_and_overwrite_like_single_appends() {
    let db = database();
    let mut body = Vec::new();
    let txn = db.begin_write().unwrap();
    {
        let mut w = Writer::new(&txn, Some(&mut body)).unwrap();
        w.apply(&Op::DeclareQueue { name: "q", id: 0 }).unwrap();
        w.apply_appends(0, 0, &[b"a0", b"a1", b"a2", b"a3"])
            .unwrap();
        // Not past the last record (never from the committer): written over, as one by one
        w.apply_appends(0, 2, &[b"b2", b"b3", b"b4"]).unwrap();
        w.apply_appends(0, 5, &[b"c5"]).unwrap();
    }
    txn.commit().unwrap();
    let expected: Vec<(u64, Vec<u8>)> = [b"a0", b"a1", b"b2", b"b3", b"b4", b"c5"]
        .iter()
        .enumerate()
        .map(|(seq, r)| (seq as u64, r.to_vec()))
        .collect();
    assert_eq!(records(&db), expected);

    let ops = decode(&body).unwrap();
    assert_eq!(ops.len(), 1 + 4 + 3 + 1, "one Append op per record");
    assert_eq!(
        ops[5],
        Op::Append {
            queue: 0,
            seq: 2,
            record: b"b2"
        }
    );
    let replayed = database();
    let txn = replayed.begin_write().unwrap();
    {
        let mut w = Writer::new(&txn, None).unwrap();
        ops.iter().for_each(|op| {
            w.apply(op).unwrap();
        });
    }
    txn.commit().unwrap();
    assert_eq!(records(&replayed), expected);
}
