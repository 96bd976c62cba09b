//! The byte limit: a full store refuses or makes appends wait, acks free room, nothing accepted is
//! lost.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{ScratchDir, read_all};
use eip_store::{DurableStore, StoreConfig, StoreError};

fn kib(i: u8) -> Bytes {
    Bytes::from(vec![i; 1024])
}

fn limited(dir: &std::path::Path, full_timeout: Duration) -> DurableStore {
    let config = StoreConfig {
        max_bytes: Some(4 * 1024),
        full_timeout,
        ..StoreConfig::default()
    };
    DurableStore::open(dir, config).unwrap()
}

#[tokio::test]
async fn a_full_store_makes_appends_wait_until_acks_free_room() {
    let dir = ScratchDir::new("full-waits");
    let store = limited(dir.path(), Duration::from_secs(10));
    let queue = store.queue("q").unwrap();
    for i in 0..4 {
        queue.append(kib(i)).unwrap().await.unwrap();
    }
    assert_eq!(store.used_bytes(), 4096);
    assert!(matches!(queue.append(kib(4)), Err(StoreError::Full { .. })));
    let waiting = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.append_waiting(kib(4)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "the append waits while the store is full"
    );
    queue.ack(0);
    assert_eq!(waiting.await.unwrap().unwrap(), 4);
    // Full again: writable() waits for the next ack
    let writable = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.writable().await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!writable.is_finished());
    queue.ack(1);
    tokio::time::timeout(Duration::from_secs(2), writable)
        .await
        .expect("writable() returned once room was freed")
        .unwrap();
    let seqs: Vec<u64> = read_all(&queue).into_iter().map(|(s, _)| s).collect();
    assert_eq!(seqs, [2, 3, 4]);
}

#[tokio::test]
async fn a_full_store_times_out_with_an_error_naming_dir_and_limit_and_loses_nothing() {
    let dir = ScratchDir::new("full-times-out");
    let store = limited(dir.path(), Duration::from_millis(100));
    let queue = store.queue("q").unwrap();
    for i in 0..4 {
        queue.append_waiting(kib(i)).await.unwrap();
    }
    let started = std::time::Instant::now();
    let error = queue.append_waiting(kib(4)).await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(100));
    match &error {
        StoreError::Full { dir: d, max_bytes } => {
            assert_eq!(d, dir.path());
            assert_eq!(*max_bytes, 4096);
        }
        other => panic!("expected Full, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );
    assert!(message.contains("4096"), "{message}");
    drop((queue, store));
    let store = limited(dir.path(), Duration::ZERO);
    let queue = store.queue("q").unwrap();
    assert_eq!(
        read_all(&queue),
        (0..4).map(|i| (i as u64, kib(i))).collect::<Vec<_>>()
    );
    assert_eq!(
        store.used_bytes(),
        4096,
        "the live bytes are rebuilt at open"
    );
    assert!(matches!(queue.append(kib(9)), Err(StoreError::Full { .. })));
}

#[tokio::test]
async fn a_record_larger_than_the_limit_is_refused_at_once() {
    let dir = ScratchDir::new("too-large");
    let store = limited(dir.path(), Duration::from_secs(10));
    let queue = store.queue("q").unwrap();
    let error = queue
        .append_waiting(Bytes::from(vec![0; 5000]))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        StoreError::RecordTooLarge {
            len: 5000,
            max_bytes: 4096,
            ..
        }
    ));
    assert_eq!(store.used_bytes(), 0);
}
