//! A reopen of a sound handle: the engine makes the rounds since the last checkpoint durable
//! as it closes, without the number of the last (only checkpoints record it), and the reopen
//! replays the journal's rounds again onto a file that holds them.

use bytes::Bytes;

use crate::test_support::{record, runtime, scratch_dir};
use crate::{DurableStore, QueueLog, StoreConfig};

fn read_all(queue: &QueueLog) -> Vec<(u64, Bytes)> {
    queue.read(0, 1000).unwrap()
}

fn expected() -> Vec<(u64, Bytes)> {
    (20..60)
        .filter(|seq| *seq != 30)
        .map(|seq| (seq, record(seq)))
        .collect()
}

#[test]
fn a_reopen_of_a_sound_handle_replays_rounds_the_file_holds_without_change() {
    let dir = scratch_dir("sound-reopen");
    let runtime = runtime();
    {
        let store = DurableStore::open(&dir, StoreConfig::default()).unwrap();
        let queue = store.queue("q").unwrap();
        runtime.block_on(async {
            for i in 0..50 {
                queue.append(record(i)).unwrap().await.unwrap();
            }
            (0..20).for_each(|seq| queue.ack(seq));
            queue.ack(30);
            store.flush().await.unwrap();
            for i in 50..60 {
                queue.append(record(i)).unwrap().await.unwrap();
            }
        });
        let (_, generation) = store.shared.database().unwrap();
        store.shared.heal(generation).unwrap();
        assert_ne!(store.shared.database().unwrap().1, generation, "reopened");
        assert_eq!(read_all(&queue), expected());
        assert_eq!((queue.len(), queue.head()), (39, 60));
        let seq = runtime.block_on(async { queue.append(record(60)).unwrap().await.unwrap() });
        assert_eq!(seq, 60);
    }
    let store = DurableStore::open(&dir, StoreConfig::default()).unwrap();
    let queue = store.queue("q").unwrap();
    let mut all = expected();
    all.push((60, record(60)));
    assert_eq!(read_all(&queue), all);
    assert_eq!(queue.len(), 40);
    drop((queue, store));
    std::fs::remove_dir_all(&dir).unwrap();
}
