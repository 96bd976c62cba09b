//! Acks of consecutive sequence numbers that share a round are deleted as one range
//! (`DeleteRange` in the journal): with holes, out of order, over several queues, the records
//! acked are gone, the others stay, and the counts agree; after a clean close and after a crash
//! (the range replayed from the journal) alike.

mod common;

use common::{ScratchDir, block_on, child_dir, open, read_all, record, run_child};
use eip_store::QueueLog;

/// The acks of queue `a`: a stretch, a lone one, a stretch given backwards, and a repeat.
fn acks_a() -> Vec<u64> {
    let mut acks: Vec<u64> = (0..40).collect();
    acks.push(45);
    acks.extend((50..60).rev());
    acks.push(55);
    acks
}

/// The acks of queue `b`: two stretches, the second first.
fn acks_b() -> Vec<u64> {
    (90..100).chain(10..20).collect()
}

/// Appends 100 records to each of `a` and `b`, then acks them interleaved, all without a wait
/// between them (so that they share rounds).
async fn fill_and_ack(a: &QueueLog, b: &QueueLog) {
    let tickets: Vec<_> = (0..100)
        .flat_map(|i| [a.append(record(i)).unwrap(), b.append(record(i)).unwrap()])
        .collect();
    for ticket in tickets {
        ticket.await.unwrap();
    }
    let (acks_a, acks_b) = (acks_a(), acks_b());
    for i in 0..acks_a.len().max(acks_b.len()) {
        if let Some(seq) = acks_a.get(i) {
            a.ack(*seq);
        }
        if let Some(seq) = acks_b.get(i) {
            b.ack(*seq);
        }
    }
}

/// What `queue` must hold once `acks` are committed.
fn expected(acks: &[u64]) -> Vec<(u64, bytes::Bytes)> {
    (0..100)
        .filter(|seq| !acks.contains(seq))
        .map(|seq| (seq, record(seq)))
        .collect()
}

fn check(a: &QueueLog, b: &QueueLog) {
    assert_eq!(read_all(a), expected(&acks_a()));
    assert_eq!(read_all(b), expected(&acks_b()));
    assert_eq!(a.len(), 49);
    assert_eq!(b.len(), 80);
    assert_eq!((a.head(), b.head()), (100, 100));
}

#[tokio::test]
async fn acks_in_stretches_delete_exactly_the_records_acked_and_count_each_once() {
    let dir = ScratchDir::new("range-acks");
    {
        let store = open(dir.path());
        let (a, b) = (store.queue("a").unwrap(), store.queue("b").unwrap());
        fill_and_ack(&a, &b).await;
        store.flush().await.unwrap();
        check(&a, &b);
        // 51 distinct acks of `a` (55 twice), 20 of `b`
        assert_eq!(store.stats().acks_committed, 71);
        // What is left is read and acked as before
        a.ack(40);
        a.ack(41);
        store.flush().await.unwrap();
        assert_eq!(a.len(), 47);
        assert_eq!(read_all(&a).first().map(|(seq, _)| *seq), Some(42));
        a.append(record(40)).unwrap().await.unwrap();
        a.append(record(41)).unwrap().await.unwrap();
    }
    let store = open(dir.path());
    let (a, b) = (store.queue("a").unwrap(), store.queue("b").unwrap());
    let mut left = expected(&acks_a());
    left.retain(|(seq, _)| *seq > 41);
    left.push((100, record(40)));
    left.push((101, record(41)));
    assert_eq!(read_all(&a), left);
    assert_eq!(a.len(), 49);
    assert_eq!(read_all(&b), expected(&acks_b()));
}

/// Run as a child: fills and acks as above, flushes (the acks' rounds are then durable in the
/// journal, not yet in a checkpoint), prints that, then aborts.
#[test]
fn child_acking_in_stretches_then_crashing() {
    let Some(dir) = child_dir() else { return };
    block_on(async {
        let store = open(&dir);
        let (a, b) = (store.queue("a").unwrap(), store.queue("b").unwrap());
        fill_and_ack(&a, &b).await;
        store.flush().await.unwrap();
        println!("CHILD: flushed, {} checkpoints", store.stats().checkpoints);
        std::process::abort()
    })
}

#[tokio::test]
async fn acks_in_stretches_survive_a_crash_through_the_journal() {
    let dir = ScratchDir::new("range-acks-crash");
    let output = run_child("child_acking_in_stretches_then_crashing", dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "the child aborted");
    assert!(stdout.contains("CHILD: flushed"), "{stdout}");
    let store = open(dir.path());
    let (a, b) = (store.queue("a").unwrap(), store.queue("b").unwrap());
    check(&a, &b);
    assert_eq!(store.journal_damage(), None);
    // The next append goes on after the head, and the records left can still be acked
    assert_eq!(a.append(record(100)).unwrap().await.unwrap(), 100);
}
