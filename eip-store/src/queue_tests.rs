//! Reads of records durable in the journal whose round has not committed into the database yet
//! (`unstored`): found in memory, in order, after those the database holds.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::test_support::{record, runtime, scratch_dir};
use crate::{DurableStore, QueueLog, StoreConfig};

fn page(queue: &QueueLog, from: u64, max: usize) -> (Vec<u64>, u64) {
    let page = queue.read_page(from, max).unwrap();
    (
        page.records.iter().map(|(seq, _)| *seq).collect(),
        page.next,
    )
}

#[test]
fn reads_find_records_the_database_does_not_hold_yet_after_those_it_does() {
    let dir = scratch_dir("unstored");
    let runtime = runtime();
    let store = DurableStore::open(&dir, StoreConfig::default()).unwrap();
    let queue = store.queue("q").unwrap();
    runtime.block_on(async {
        for i in 0..2 {
            queue.append(record(i)).unwrap().await.unwrap();
        }
    });
    // The last round's commit follows its answer: wait until the database holds both
    let state = &queue.state;
    let deadline = Instant::now() + Duration::from_secs(5);
    while state.unstored.stored() < 2 {
        assert!(Instant::now() < deadline, "the database holds the records");
        std::thread::sleep(Duration::from_millis(1));
    }
    // A round published and not yet committed: records 2 and 3 in memory only
    state.unstored.add(2, record(2));
    state.unstored.add(3, record(3));
    state.head.store(4, Ordering::Release);

    assert_eq!(
        queue.read(0, 10).unwrap(),
        (0..4).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    assert_eq!(page(&queue, 0, 1), (vec![0], 1));
    assert_eq!(page(&queue, 0, 3), (vec![0, 1, 2], 3));
    assert_eq!(page(&queue, 2, 10), (vec![2, 3], 4));
    assert_eq!(page(&queue, 3, 1), (vec![3], 4));
    assert_eq!(page(&queue, 4, 10), (vec![], 4));
    // An ack not yet committed hides a record in memory as one in the file
    state.acked().insert(2);
    state.acked().insert(0);
    assert_eq!(page(&queue, 0, 10), (vec![1, 3], 4));
    drop((queue, store));
    std::fs::remove_dir_all(&dir).unwrap();
}
