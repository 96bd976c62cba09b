//! A record is readable once its append is answered, and a reader that follows the head as
//! records are committed one by one finds each of them exactly once, in order: the rounds of
//! appends and acks are answered before their database commit, their records read from memory
//! meanwhile.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{ScratchDir, open, record};

const RECORDS: u64 = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_following_the_head_finds_every_record_once_in_order() {
    let dir = ScratchDir::new("reads-racing");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = std::thread::spawn({
        let queue = queue.clone();
        let done = done.clone();
        move || {
            let mut next = 0;
            let mut found = Vec::new();
            while next < RECORDS {
                let finished = done.load(Ordering::Acquire);
                let page = queue.read_page(next, 16).unwrap();
                let empty = page.records.is_empty();
                for (seq, bytes) in page.records {
                    assert_eq!(bytes, record(seq), "record {seq}");
                    found.push(seq);
                }
                next = page.next;
                assert!(
                    !(finished && empty && next < RECORDS),
                    "all appended, yet the reader stopped at {next}"
                );
            }
            found
        }
    });
    for i in 0..RECORDS {
        let seq = queue.append(record(i)).unwrap().await.unwrap();
        assert_eq!(seq, i);
        // Readable as soon as it is answered
        let read = queue.read(seq, 1).unwrap();
        assert_eq!(read, vec![(seq, record(seq))]);
        if i % 3 == 0 {
            queue.ack(seq);
        }
    }
    done.store(true, Ordering::Release);
    let found = reader.join().unwrap();
    // Acked records may be passed over; every other one is found, each once, in order
    let mut expected = 0;
    for seq in found.iter().copied().chain([RECORDS]) {
        while expected < seq {
            assert_eq!(expected % 3, 0, "record {expected} was passed over");
            expected += 1;
        }
        assert_eq!(seq, expected, "records in order, each once");
        expected += 1;
    }
}

#[tokio::test]
async fn an_acked_record_kept_in_memory_is_not_read_again_once_its_ack_is_committed() {
    let dir = ScratchDir::new("acked-kept");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    // Each round: the ack of the record before, and one append (a window of one)
    for i in 0..50 {
        let seq = queue.append(record(i)).unwrap().await.unwrap();
        assert_eq!(queue.read(0, 100).unwrap(), vec![(seq, record(seq))]);
        queue.ack(seq);
        assert_eq!(queue.read(0, 100).unwrap(), vec![]);
    }
    store.flush().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(queue.read(0, 100).unwrap(), vec![]);
    assert_eq!((queue.len(), queue.head()), (0, 50));
    assert_eq!(store.stats().acks_committed, 50);
}
