//! Group commit: concurrent appenders share commits; a lone appender gets one per record.

mod common;

use common::{ScratchDir, open, record};

#[tokio::test]
async fn a_lone_appender_gets_one_commit_per_record() {
    let dir = ScratchDir::new("lone");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let before = store.stats().commits;
    for i in 0..20 {
        queue.append(record(i)).unwrap().await.unwrap();
    }
    assert_eq!(store.stats().commits - before, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appenders_share_commits() {
    let dir = ScratchDir::new("group");
    let store = open(dir.path());
    let queue = store.queue("q").unwrap();
    let before = store.stats().commits;
    let appenders = 256;
    let rounds = 4;
    let tasks: Vec<_> = (0..appenders)
        .map(|a| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for r in 0..rounds {
                    queue.append(record(a * 100 + r)).unwrap().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let records = appenders * rounds;
    let commits = store.stats().commits - before;
    assert_eq!(queue.len(), records);
    assert_eq!(store.stats().records_committed, records);
    assert!(
        commits * 16 <= records,
        "{records} records from {appenders} appenders took {commits} commits"
    );
}
