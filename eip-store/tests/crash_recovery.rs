//! After a crash (here: a child process that aborts, with no destructor run), the store reopens
//! with every record whose ticket resolved, and every ack that was flushed.

mod common;

use common::{ScratchDir, block_on, child_dir, open, read_all, record, run_child};

/// Run as a child: appends 300 records concurrently, acks the first 100, flushes, acks 100..150
/// without flushing, prints how many tickets resolved, then aborts.
#[test]
fn child_appending_then_crashing() {
    let Some(dir) = child_dir() else { return };
    block_on(async {
        let store = open(&dir);
        let queue = store.queue("q").unwrap();
        let tickets: Vec<_> = (0..300).map(|i| queue.append(record(i)).unwrap()).collect();
        let mut resolved = 0;
        for ticket in tickets {
            ticket.await.unwrap();
            resolved += 1;
        }
        for seq in 0..100 {
            queue.ack(seq);
        }
        store.flush().await.unwrap();
        for seq in 100..150 {
            queue.ack(seq);
        }
        println!("CHILD: resolved {resolved}");
        // With the store open: dropping it first would close it cleanly, no crash at all
        std::process::abort()
    })
}

#[test]
fn records_whose_ticket_resolved_survive_a_crash_and_flushed_acks_too() {
    let dir = ScratchDir::new("crash");
    let output = run_child("child_appending_then_crashing", dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "the child aborted");
    assert!(stdout.contains("CHILD: resolved 300"), "{stdout}");

    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let records = read_all(&queue);
    // Flushed acks are durable; the later ones may or may not have been committed
    let first = records.first().map(|(s, _)| *s).unwrap();
    assert!(
        (100..=150).contains(&first),
        "first unacked record is {first}"
    );
    assert_eq!(
        records,
        (first..300).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    assert_eq!(queue.len(), 300 - first);
    assert_eq!(queue.head(), 300);
}

/// Run as a child: appends 50 records, acks the first, waits until the store has been idle long
/// enough to record a checkpoint after the ack's commit, prints that, then aborts.
#[test]
fn child_appending_then_idling_then_crashing() {
    let Some(dir) = child_dir() else { return };
    block_on(async {
        let store = open(&dir);
        let queue = store.queue("q").unwrap();
        for i in 0..50 {
            queue.append(record(i)).unwrap().await.unwrap();
        }
        queue.ack(0);
        let limit = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // The ack's own commit (without fsync) first: a checkpoint counted after it came later
        while store.stats().acks_committed == 0 {
            assert!(
                std::time::Instant::now() < limit,
                "the ack was not committed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let before = store.stats().checkpoints;
        while store.stats().checkpoints == before {
            assert!(
                std::time::Instant::now() < limit,
                "no checkpoint while idle"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        println!("CHILD: checkpointed");
        // With the store open: dropping it would close it cleanly
        std::process::abort()
    })
}

#[test]
fn a_crash_after_an_idle_checkpoint_needs_no_repair_and_loses_nothing() {
    let dir = ScratchDir::new("checkpoint");
    let output = run_child("child_appending_then_idling_then_crashing", dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "the child aborted");
    assert!(stdout.contains("CHILD: checkpointed"), "{stdout}");

    let store = open(dir.path());
    assert!(
        !store.repaired_on_open(),
        "the crash after a checkpoint needed a repair"
    );
    let queue = store.queue("q").unwrap();
    // The ack was made durable by the checkpoint, every record by its own commit
    assert_eq!(
        read_all(&queue),
        (1..50).map(|i| (i, record(i))).collect::<Vec<_>>()
    );
    assert_eq!(queue.head(), 50);
}
