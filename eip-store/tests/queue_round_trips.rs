//! Appends, reads, acks and reopens: what a queue holds before and after a restart.

mod common;

use bytes::Bytes;
use common::{ScratchDir, open, read_all, record};
use eip_store::StoreError;

#[tokio::test]
async fn appended_records_are_read_in_order_with_growing_seqs() {
    let dir = ScratchDir::new("order");
    let store = open(dir.path());
    let queue = store.queue("orders").unwrap();
    for i in 0..10 {
        assert_eq!(queue.append(record(i)).unwrap().await.unwrap(), i);
    }
    assert_eq!(queue.head(), 10);
    assert_eq!(queue.len(), 10);
    let read = queue.read(3, 4).unwrap();
    assert_eq!(read, (3..7).map(|i| (i, record(i))).collect::<Vec<_>>());
}

#[tokio::test]
async fn committed_records_and_seqs_survive_reopen() {
    let dir = ScratchDir::new("reopen");
    {
        let store = open(dir.path());
        let queue = store.queue("orders").unwrap();
        for i in 0..5 {
            queue.append(record(i)).unwrap().await.unwrap();
        }
    }
    let store = open(dir.path());
    let queue = store.queue("orders").unwrap();
    assert_eq!(queue.head(), 5);
    assert_eq!(queue.len(), 5);
    assert_eq!(
        read_all(&queue),
        (0..5).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    assert_eq!(queue.append(record(5)).unwrap().await.unwrap(), 5);
}

#[tokio::test]
async fn records_acked_before_close_are_not_read_after_reopen() {
    let dir = ScratchDir::new("acked");
    {
        let store = open(dir.path());
        let queue = store.queue("orders").unwrap();
        for i in 0..6 {
            queue.append(record(i)).unwrap().await.unwrap();
        }
        queue.ack(0);
        queue.ack(3);
        assert_eq!(queue.len(), 4);
        let seqs: Vec<u64> = read_all(&queue).into_iter().map(|(s, _)| s).collect();
        assert_eq!(
            seqs,
            [1, 2, 4, 5],
            "an acked record is not read, even before its commit"
        );
        // Dropping the store (no flush) commits the lazy acks
    }
    let store = open(dir.path());
    let queue = store.queue("orders").unwrap();
    let seqs: Vec<u64> = read_all(&queue).into_iter().map(|(s, _)| s).collect();
    assert_eq!(seqs, [1, 2, 4, 5]);
    assert_eq!(queue.len(), 4);
    assert_eq!(store.used_bytes(), 4 * record(0).len() as u64);
}

#[tokio::test]
async fn seqs_keep_growing_after_every_record_is_acked_and_the_store_reopens() {
    let dir = ScratchDir::new("seqs");
    {
        let store = open(dir.path());
        let queue = store.queue("q").unwrap();
        for i in 0..3 {
            let seq = queue.append(record(i)).unwrap().await.unwrap();
            queue.ack(seq);
        }
        store.flush().await.unwrap();
        assert_eq!(store.stats().acks_committed, 3);
    }
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    assert_eq!((queue.len(), queue.head()), (0, 3));
    assert_eq!(store.used_bytes(), 0);
    assert_eq!(queue.append(record(3)).unwrap().await.unwrap(), 3);
}

#[tokio::test]
async fn lazy_acks_are_committed_by_a_timer_without_flush() {
    let dir = ScratchDir::new("ack-timer");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let seq = queue.append(record(0)).unwrap().await.unwrap();
    let before = store.stats().commits;
    queue.ack(seq);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while store.stats().acks_committed == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the ack timer committed the ack"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert_eq!(store.stats().commits, before + 1);
    assert_eq!(store.used_bytes(), 0);
}

#[tokio::test]
async fn a_dropped_ticket_still_gets_its_record_written() {
    let dir = ScratchDir::new("dropped-ticket");
    {
        let store = open(dir.path());
        let queue = store.queue("q").unwrap();
        drop(queue.append(record(7)).unwrap());
        queue.committed(0).await;
        assert_eq!(queue.read(0, 10).unwrap(), vec![(0, record(7))]);
        drop(queue.append(record(8)).unwrap());
        // Dropped with the store before any poll: the close writes it
    }
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    assert_eq!(read_all(&queue), vec![(0, record(7)), (1, record(8))]);
}

#[tokio::test]
async fn duplicate_and_unknown_acks_change_nothing() {
    let dir = ScratchDir::new("dup-acks");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    for i in 0..3 {
        queue.append(record(i)).unwrap().await.unwrap();
    }
    queue.ack(1);
    queue.ack(1);
    queue.ack(99);
    assert_eq!(queue.len(), 2);
    store.flush().await.unwrap();
    queue.ack(1);
    store.flush().await.unwrap();
    assert_eq!(queue.len(), 2);
    assert_eq!(read_all(&queue).len(), 2);
}

#[tokio::test]
async fn queues_are_independent_and_listed_sorted() {
    let dir = ScratchDir::new("names");
    let store = open(dir.path());
    let b = store.queue("b").unwrap();
    let a = store.queue("a").unwrap();
    a.append(record(1)).unwrap().await.unwrap();
    b.append(record(2)).unwrap().await.unwrap();
    assert_eq!(store.queue_names(), ["a", "b"]);
    assert_eq!(a.read(0, 10).unwrap(), vec![(0, record(1))]);
    assert_eq!(b.read(0, 10).unwrap(), vec![(0, record(2))]);
    drop((a, b, store));
    let store = open(dir.path());
    assert_eq!(store.queue_names(), ["a", "b"]);
}

#[tokio::test]
async fn a_removed_queue_loses_its_records_and_refuses_appends() {
    let dir = ScratchDir::new("remove");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let other = store.queue("other").unwrap();
    for i in 0..4 {
        queue.append(record(i)).unwrap().await.unwrap();
    }
    other.append(record(9)).unwrap().await.unwrap();
    assert_eq!(store.remove_queue("q").await.unwrap(), 4);
    assert_eq!(store.queue_names(), ["other"]);
    assert_eq!(store.used_bytes(), record(9).len() as u64);
    assert!(matches!(
        queue.append(record(5)),
        Err(StoreError::QueueRemoved { name, .. }) if name == "q"
    ));
    assert_eq!(store.remove_queue("q").await.unwrap(), 0);
    drop(queue);
    drop((other, store));
    let store = open(dir.path());
    assert_eq!(store.queue_names(), ["other"]);
    let again = store.queue("q").unwrap();
    assert_eq!((again.len(), again.head()), (0, 0));
    assert!(again.read(0, 10).unwrap().is_empty());
}

#[tokio::test]
async fn committed_waits_for_the_commit_of_a_seq() {
    let dir = ScratchDir::new("committed");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let waiter = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.committed(1).await })
    };
    let _ = queue
        .append(Bytes::from_static(b"0"))
        .unwrap()
        .await
        .unwrap();
    assert!(!waiter.is_finished());
    let _ = queue
        .append(Bytes::from_static(b"1"))
        .unwrap()
        .await
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(2), waiter)
        .await
        .expect("committed(1) returned")
        .unwrap();
}

/// Waits up to 5 s for `done`, sleeping 2 ms between looks.
async fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn an_ack_is_committed_no_later_than_the_next_append() {
    let dir = ScratchDir::new("ack-rides");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let seq = queue.append(record(0)).unwrap().await.unwrap();
    queue.ack(seq);
    queue.append(record(1)).unwrap().await.unwrap();
    assert_eq!(store.stats().acks_committed, 1);
    assert_eq!(read_all(&queue), vec![(1, record(1))]);
}

#[tokio::test]
async fn an_ack_wakes_a_committer_asleep_after_its_idle_checkpoint() {
    let dir = ScratchDir::new("ack-wakes");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    for i in 0..2 {
        queue.append(record(i)).unwrap().await.unwrap();
    }
    let checkpoints = store.stats().checkpoints;
    wait_for("an idle checkpoint", || {
        store.stats().checkpoints > checkpoints
    })
    .await;
    // Nothing is due now: the committer sleeps without a deadline, and the ack must wake it
    queue.ack(0);
    wait_for("the ack committed by its timer", || {
        store.stats().acks_committed == 1
    })
    .await;
    queue.ack(1);
    wait_for("the second ack committed by its timer", || {
        store.stats().acks_committed == 2
    })
    .await;
    assert_eq!(store.used_bytes(), 0);
    drop(queue);
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.queue("q").unwrap().len(), 0);
}
