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

/// Rounds of ops touching every kind of row: queues declared, appended to, acked one by one and
/// in ranges, removed and declared again under the same name; key table entries put (with and
/// without expiry), put again, removed and expired; the rows of both.
fn history() -> Vec<Vec<Op<'static>>> {
    let row = |name, id, head, bytes| Op::QueueRow {
        name,
        id,
        head,
        bytes,
    };
    let append = |queue, seq, record| Op::Append { queue, seq, record };
    let put = |key, value, expires_at| Op::Put {
        table: 0,
        key,
        value,
        expires_at,
    };
    vec![
        vec![
            Op::DeclareQueue { name: "q", id: 0 },
            Op::DeclareTable { name: "t", id: 0 },
        ],
        vec![
            append(0, 0, b"a0"),
            append(0, 1, b"a1"),
            append(0, 2, b"a2"),
            row("q", 0, 3, 6),
        ],
        vec![put(b"k", b"v1", 50), put(b"j", b"w", u64::MAX)],
        vec![
            Op::DeleteRange {
                queue: 0,
                first: 0,
                last: 1,
            },
            append(0, 3, b"a3"),
            row("q", 0, 4, 4),
        ],
        vec![
            put(b"k", b"v2", 70),
            Op::Expire {
                table: 0,
                now_ms: 60,
                candidates: vec![(50, b"k".as_slice())],
            },
        ],
        vec![
            Op::Delete { queue: 0, seq: 2 },
            row("q", 0, 4, 2),
            Op::Remove {
                table: 0,
                key: b"j",
            },
        ],
        vec![
            Op::RemoveQueue { name: "q", id: 0 },
            Op::DeclareQueue { name: "q", id: 1 },
            append(1, 0, b"b0"),
            row("q", 1, 1, 2),
        ],
        vec![
            Op::Expire {
                table: 0,
                now_ms: 80,
                candidates: vec![(70, b"k".as_slice())],
            },
            Op::TableRow {
                name: "t",
                id: 0,
                bytes: 0,
            },
        ],
    ]
}

/// The rows of one table, as bytes.
type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// Every row of every table, as bytes.
fn dump(db: &Database) -> Vec<(String, Rows)> {
    use redb::{TableHandle, Value};
    let txn = db.begin_read().unwrap();
    let mut all = Vec::new();
    for handle in txn.list_tables().unwrap() {
        let name = handle.name().to_owned();
        let rows: Rows = if name == "queues" {
            let t = txn.open_table(schema::QUEUES).unwrap();
            rows_of(&t)
        } else if name == "tables" {
            let t = txn.open_table(schema::TABLES).unwrap();
            rows_of(&t)
        } else if name.starts_with("records/") {
            let t = txn.open_table(schema::records(&name)).unwrap();
            rows_of(&t)
        } else if name.starts_with("keys/") {
            let t = txn.open_table(schema::keys(&name)).unwrap();
            rows_of(&t)
        } else if name.starts_with("expiry/") {
            let t = txn.open_table(schema::expiry(&name)).unwrap();
            rows_of(&t)
        } else {
            continue;
        };
        all.push((name, rows));
        fn rows_of<K: redb::Key + 'static, V: Value + 'static>(
            t: &impl ReadableTable<K, V>,
        ) -> Rows {
            t.iter()
                .unwrap()
                .map(|e| {
                    let (k, v) = e.unwrap();
                    (
                        K::as_bytes(&k.value()).as_ref().to_vec(),
                        V::as_bytes(&v.value()).as_ref().to_vec(),
                    )
                })
                .collect()
        }
    }
    all.sort();
    all
}

fn apply_rounds(db: &Database, rounds: &[Vec<Op<'_>>]) {
    let txn = db.begin_write().unwrap();
    {
        let mut w = Writer::new(&txn, None).unwrap();
        for op in rounds.iter().flatten() {
            w.apply(op).unwrap();
        }
    }
    txn.commit().unwrap();
}

/// Between checkpoints the database's rounds are not durable and the round it holds is recorded
/// by checkpoints only: a handle closed in good order after a failure may leave the file with
/// rounds past the one it records, and the reopen replays them again. Every suffix of the
/// rounds, applied again to the state they led to, leaves that state as it was.
#[test]
fn rounds_replayed_again_onto_the_state_they_led_to_change_nothing() {
    let rounds = history();
    let once = database();
    apply_rounds(&once, &rounds);
    let expected = dump(&once);
    assert!(
        expected
            .iter()
            .any(|(name, rows)| name == "records/1" && rows.len() == 1)
    );
    for from in 0..rounds.len() {
        let twice = database();
        apply_rounds(&twice, &rounds);
        apply_rounds(&twice, &rounds[from..]);
        assert_eq!(dump(&twice), expected, "rounds {from}.. replayed again");
    }
}
