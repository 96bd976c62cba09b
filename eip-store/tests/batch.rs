//! Atomic batches: every effect of a batch is committed in one commit, or none is; a batch that
//! can not be committed whole changes nothing, in the file or in memory.

mod common;

use bytes::Bytes;
use common::{ScratchDir, open, read_all, record};
use eip_store::{DurableStore, StoreConfig, StoreError};

fn b(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

#[tokio::test]
async fn a_batch_makes_its_ack_append_and_put_visible_together() {
    let dir = ScratchDir::new("batch-together");
    let store = open(dir.path());
    let input = store.queue("input").unwrap();
    let group = store.queue("group").unwrap();
    let seen = store.table("seen").unwrap();
    for i in 0..3 {
        input.append(record(i)).unwrap().await.unwrap();
    }
    group.append(b("earlier")).unwrap().await.unwrap();
    let seqs = store
        .batch()
        .ack(&input, 1)
        .append(&group, record(1))
        .put(&seen, b("id-1"), b(""), None)
        .append(&group, b("second"))
        .commit()
        .await
        .unwrap();
    assert_eq!(seqs, [1, 2], "the appends' sequence numbers, in order");
    assert_eq!(input.len(), 2);
    assert_eq!(
        read_all(&input),
        [(0, record(0)), (2, record(2))],
        "acked by the batch"
    );
    assert_eq!(
        read_all(&group),
        [(0, b("earlier")), (1, record(1)), (2, b("second"))]
    );
    assert_eq!(seen.get(b"id-1").unwrap(), Some(b("")));
    assert_eq!(store.stats().acks_committed, 1);
    drop((input, group, seen, store));

    let store = open(dir.path());
    assert_eq!(read_all(&store.queue("input").unwrap()).len(), 2);
    assert_eq!(read_all(&store.queue("group").unwrap()).len(), 3);
    assert_eq!(
        store.table("seen").unwrap().get(b"id-1").unwrap(),
        Some(b(""))
    );
}

#[tokio::test]
async fn a_batch_passing_max_bytes_fails_whole_and_changes_nothing() {
    let dir = ScratchDir::new("batch-full");
    let config = StoreConfig {
        max_bytes: Some(4096),
        ..StoreConfig::default()
    };
    let store = DurableStore::open(dir.path(), config).unwrap();
    let input = store.queue("input").unwrap();
    let group = store.queue("group").unwrap();
    let seen = store.table("seen").unwrap();
    input
        .append(Bytes::from(vec![0; 2000]))
        .unwrap()
        .await
        .unwrap();
    // 2000 held, 2000 freed by the ack, 4501 added: 4501 would be held
    let error = store
        .batch()
        .ack(&input, 0)
        .append(&group, Bytes::from(vec![1; 3000]))
        .put(&seen, b("k"), vec![2u8; 1500], None)
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Full {
                max_bytes: 4096,
                ..
            }
        ),
        "{error:?}"
    );
    let error = store
        .batch()
        .append(&group, Bytes::from(vec![1; 5000]))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::RecordTooLarge { .. }),
        "{error:?}"
    );
    assert_eq!(input.len(), 1, "the ack was undone");
    assert_eq!(input.read(0, 10).unwrap().len(), 1);
    assert_eq!(group.len(), 0);
    assert_eq!(seen.get(b"k").unwrap(), None);
    assert_eq!(store.used_bytes(), 2000);
    // 2000 held, 2000 freed, 2501 added: the ack's bytes make room for what the batch adds
    store
        .batch()
        .ack(&input, 0)
        .append(&group, Bytes::from(vec![1; 1000]))
        .put(&seen, b("k"), vec![2u8; 1500], None)
        .commit()
        .await
        .unwrap();
    store.flush().await.unwrap();
    assert_eq!(store.used_bytes(), 2501);
}

#[tokio::test]
async fn a_batch_on_a_removed_queue_or_another_store_fails_whole() {
    let dir = ScratchDir::new("batch-removed");
    let other_dir = ScratchDir::new("batch-other");
    let store = open(dir.path());
    let other = open(other_dir.path());
    let input = store.queue("input").unwrap();
    let gone = store.queue("gone").unwrap();
    let seen = store.table("seen").unwrap();
    input.append(record(0)).unwrap().await.unwrap();
    store.remove_queue("gone").await.unwrap();
    let error = store
        .batch()
        .ack(&input, 0)
        .put(&seen, b("k"), b("v"), None)
        .append(&gone, record(1))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::QueueRemoved { .. }),
        "{error:?}"
    );
    let foreign = other.queue("input").unwrap();
    let error = store
        .batch()
        .ack(&input, 0)
        .append(&foreign, record(1))
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::OtherStore { .. }), "{error:?}");
    assert_eq!(input.len(), 1);
    assert_eq!(read_all(&input), [(0, record(0))]);
    assert_eq!(seen.get(b"k").unwrap(), None);
    assert_eq!(foreign.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_share_commits_each_whole() {
    let dir = ScratchDir::new("batch-group");
    let store = open(dir.path());
    let input = store.queue("input").unwrap();
    let group = store.queue("group").unwrap();
    let seen = store.table("seen").unwrap();
    let count = 256;
    let mut fill = store.batch();
    for i in 0..count {
        fill = fill.append(&input, record(i));
    }
    fill.commit().await.unwrap();
    let before = store.stats().commits;
    let tasks: Vec<_> = (0..count)
        .map(|i| {
            let batch = store.batch().ack(&input, i).append(&group, record(i)).put(
                &seen,
                format!("k{i}"),
                b(""),
                None,
            );
            tokio::spawn(batch.commit())
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().len(), 1);
    }
    let commits = store.stats().commits - before;
    assert!(
        commits * 4 <= count,
        "{count} batches took {commits} commits"
    );
    assert_eq!(input.len(), 0);
    assert_eq!(group.len(), count);
    assert_eq!(seen.entries().unwrap().len(), count as usize);
}

mod crash {
    //! A child process commits batches in a loop and is killed with SIGKILL at random moments;
    //! after each kill the store must hold every batch whole or not at all, and every batch
    //! whose ticket resolved.

    use std::collections::{BTreeSet, HashMap};
    use std::io::{BufRead, Write};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::common::damage::Noise;
    use super::common::{ScratchDir, child_dir, open, read_all};
    use bytes::Bytes;
    use eip_store::DurableStore;

    /// Records of queue A, one per batch the child may commit.
    const RECORDS: u64 = 50_000;
    /// Batches the child keeps in flight at once, so that they share commits.
    const IN_FLIGHT: usize = 8;

    fn env_number(name: &str, default: u64) -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// Run as a child: for each record `s` of A not yet acked, one batch (ack `s` of A, append
    /// `b{s}` to B, put `k{s}` → `v{s}`); prints `CONFIRMED s` once its ticket resolved. Stops
    /// by itself after 30 s or when A is empty.
    #[test]
    fn child_committing_batches() {
        let Some(dir) = child_dir() else { return };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let started = Instant::now();
        runtime.block_on(async {
            let store = open(&dir);
            let a = store.queue("A").unwrap();
            let b = store.queue("B").unwrap();
            let keys = store.table("K").unwrap();
            let mut stdout = std::io::stdout().lock();
            let mut from = 0;
            while started.elapsed() < Duration::from_secs(30) {
                let page = a.read(from, IN_FLIGHT).unwrap();
                let Some(&(last, _)) = page.last() else { break };
                from = last + 1;
                let tickets: Vec<_> = page
                    .iter()
                    .map(|(s, _)| {
                        let ticket = store
                            .batch()
                            .ack(&a, *s)
                            .append(&b, Bytes::from(format!("b{s}")))
                            .put(&keys, format!("k{s}"), format!("v{s}"), None)
                            .commit();
                        (*s, ticket)
                    })
                    .collect();
                for (s, ticket) in tickets {
                    ticket.await.unwrap();
                    writeln!(stdout, "CONFIRMED {s}").unwrap();
                    stdout.flush().unwrap();
                }
            }
        });
    }

    /// A child process, killed and reaped when dropped (the test never leaves one running).
    struct Running {
        child: Child,
        reader: Option<std::thread::JoinHandle<()>>,
    }

    impl Running {
        fn start(dir: &Path, confirmed: Arc<Mutex<BTreeSet<u64>>>) -> Running {
            let exe = std::env::current_exe().unwrap();
            let mut child = Command::new(exe)
                .args([
                    "crash::child_committing_batches",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("EIP_STORE_CHILD_DIR", dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("the child starts");
            let stdout = child.stdout.take().unwrap();
            let reader = std::thread::spawn(move || {
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(s) = line.strip_prefix("CONFIRMED ") {
                        confirmed.lock().unwrap().insert(s.parse().unwrap());
                    }
                }
            });
            Running {
                child,
                reader: Some(reader),
            }
        }

        /// SIGKILL, then waits for the process and for its last output.
        fn kill(mut self) {
            self.stop();
        }

        fn stop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.stop();
        }
    }

    /// What the store holds of the batches: (committed whole, torn, confirmed yet absent).
    /// Panics if an append is there twice.
    fn verify(dir: &Path, confirmed: &BTreeSet<u64>) -> (u64, u64, u64) {
        let store: DurableStore = open(dir);
        let a = store.queue("A").unwrap();
        let b = store.queue("B").unwrap();
        let keys = store.table("K").unwrap();
        let unacked: BTreeSet<u64> = read_all(&a).into_iter().map(|(s, _)| s).collect();
        let mut appended: HashMap<u64, u32> = HashMap::new();
        for (_, record) in read_all(&b) {
            let s = std::str::from_utf8(&record[1..]).unwrap().parse().unwrap();
            *appended.entry(s).or_default() += 1;
        }
        let mut put: HashMap<u64, Bytes> = HashMap::new();
        for (key, value) in keys.entries().unwrap() {
            put.insert(
                std::str::from_utf8(&key[1..]).unwrap().parse().unwrap(),
                value,
            );
        }
        let (mut committed, mut torn, mut lost) = (0, 0, 0);
        for s in 0..RECORDS {
            let acked = !unacked.contains(&s);
            let in_b = appended.get(&s).copied().unwrap_or(0);
            let in_k = put
                .get(&s)
                .is_some_and(|v| v[..] == *format!("v{s}").as_bytes());
            assert!(in_b <= 1, "batch {s} appended {in_b} times");
            match (acked, in_b == 1, in_k) {
                (true, true, true) => committed += 1,
                (false, false, false) => {
                    if confirmed.contains(&s) {
                        lost += 1;
                    }
                }
                _ => torn += 1,
            }
        }
        (committed, torn, lost)
    }

    #[test]
    fn every_batch_is_whole_or_absent_after_sigkill() {
        let kills = env_number("EIP_STORE_CRASH_KILLS", 20);
        let seed = env_number(
            "EIP_STORE_CRASH_SEED",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64,
        );
        println!("crash test (batch): seed {seed} (EIP_STORE_CRASH_SEED), {kills} kills");
        let dir = ScratchDir::new("batch-crash");
        {
            let store = open(dir.path());
            let a = store.queue("A").unwrap();
            store.queue("B").unwrap();
            store.table("K").unwrap();
            let mut fill = store.batch();
            for s in 0..RECORDS {
                fill = fill.append(&a, Bytes::from(format!("a{s}")));
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            runtime.block_on(fill.commit()).unwrap();
        }
        let mut noise = Noise::new(seed);
        let confirmed = Arc::new(Mutex::new(BTreeSet::new()));
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut done, mut committed, mut torn, mut lost) = (0, 0, 0, 0);
        while done < kills && Instant::now() < deadline {
            let child = Running::start(dir.path(), confirmed.clone());
            // Some kills land while the store opens and recovers, most while it commits
            std::thread::sleep(Duration::from_millis(50 + noise.below(500) as u64));
            child.kill();
            done += 1;
            let seen = confirmed.lock().unwrap().clone();
            (committed, torn, lost) = verify(dir.path(), &seen);
            assert_eq!((torn, lost), (0, 0), "after kill {done}");
        }
        let confirmed = confirmed.lock().unwrap().len();
        println!(
            "crash test (batch): {done} kills, {confirmed} confirmed, {lost} lost, {torn} torn \
             ({committed} committed)"
        );
        assert!(
            confirmed > 0,
            "no batch resolved before any kill: the test proved nothing"
        );
        assert!(committed as usize >= confirmed);
    }
}

#[tokio::test]
async fn a_lazy_ack_after_a_batch_acked_the_record_changes_no_count() {
    let dir = ScratchDir::new("batch-then-lazy");
    let store = open(dir.path());
    let input = store.queue("input").unwrap();
    let seen = store.table("seen").unwrap();
    for i in 0..3 {
        input.append(record(i)).unwrap().await.unwrap();
    }
    for seq in 0..2 {
        store
            .batch()
            .ack(&input, seq)
            .put(&seen, b(&format!("k{seq}")), b(""), None)
            .commit()
            .await
            .unwrap();
        // The consumer's own ack comes after: it finds the record gone.
        input.ack(seq);
    }
    input.ack(2);
    store.flush().await.unwrap();
    assert_eq!(input.len(), 0);
    assert!(read_all(&input).is_empty());
}
