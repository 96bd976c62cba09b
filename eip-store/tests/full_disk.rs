//! A disk that fills up under the store: appends and batches fail while it is full (a batch
//! whole), and the store works again, without a restart, once room is made. (The storage engine latches a failed write:
//! without a reopen of the file, every later operation would fail until the process restarts.)
//!
//! The disk is a small tmpfs mounted for the test, which needs root (CI runs as root); a
//! machine where the mount is refused fails the test with the reason, it does not skip it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::read_all;
use eip_store::{DurableStore, StoreConfig, StoreError};

/// A tmpfs of `MIB` MiB mounted on a fresh directory; unmounted (and the directory removed)
/// when dropped, whatever the test's outcome.
struct SmallDisk(PathBuf);

const MIB: u64 = 4;

impl SmallDisk {
    fn mount() -> SmallDisk {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("eip-store-small-disk-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a mount point");
        let size = format!("size={MIB}m");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
            .arg(&dir)
            .output()
            .expect("the mount command runs");
        assert!(
            mounted.status.success(),
            "this test mounts a {MIB} MiB tmpfs on {} and needs root for it: {}",
            dir.display(),
            String::from_utf8_lossy(&mounted.stderr)
        );
        SmallDisk(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Fills what is left of the disk with `file`; answers how many bytes it took.
fn fill(file: &Path) -> u64 {
    use std::io::Write;
    let mut out = std::fs::File::create(file).expect("the filler file");
    let chunk = vec![0xAB; 4096];
    let mut written = 0;
    while out.write_all(&chunk).is_ok() {
        written += chunk.len() as u64;
    }
    written
}

fn record(i: u64) -> Bytes {
    Bytes::from(format!("{i:08}").repeat(2048)) // 16 KiB
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_met_a_full_disk_works_again_once_room_is_made() {
    let disk = SmallDisk::mount();
    let data = disk.path().join("data");
    let store = DurableStore::open(&data, StoreConfig::default()).expect("the store opens");
    let queue = store.queue("q").expect("the queue");
    let mut accepted = Vec::new();
    for i in 0..8 {
        let seq = queue
            .append(record(i))
            .expect("queued")
            .await
            .expect("room");
        accepted.push((seq, record(i)));
    }
    let filler = disk.path().join("filler");
    assert!(fill(&filler) > 0, "the filler takes the rest of the disk");

    // While the disk is full, appends fail (and nothing they carried counts as accepted)
    let mut failures = 0;
    for i in 8..200 {
        match queue.append(record(i)).expect("queued").await {
            Ok(seq) => accepted.push((seq, record(i))),
            Err(_) => failures += 1,
        }
        if failures >= 3 {
            break;
        }
    }
    assert!(failures >= 3, "a full disk fails appends");

    std::fs::remove_file(&filler).expect("room is made");
    let since = Instant::now();
    let mut last_error: Option<StoreError> = None;
    let mut recovered = None;
    let mut i = 1000;
    while since.elapsed() < Duration::from_secs(10) {
        match queue.append(record(i)).expect("queued").await {
            Ok(seq) => {
                accepted.push((seq, record(i)));
                recovered = Some(since.elapsed());
                break;
            }
            Err(error) => last_error = Some(error),
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        recovered.is_some(),
        "appends still fail 10 s after room was made: {last_error:?}"
    );
    for j in 0..8 {
        let seq = queue
            .append(record(2000 + j))
            .expect("queued")
            .await
            .expect("the store works again");
        accepted.push((seq, record(2000 + j)));
    }

    // Every accepted record is there, now and after a restart
    assert_eq!(read_all(&queue), accepted);
    drop((queue, store));
    let store = DurableStore::open(&data, StoreConfig::default()).expect("the store reopens");
    let queue = store.queue("q").expect("the queue");
    assert_eq!(read_all(&queue), accepted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_met_a_full_disk_changes_nothing_and_commits_once_room_is_made() {
    let disk = SmallDisk::mount();
    let data = disk.path().join("data");
    let store = DurableStore::open(&data, StoreConfig::default()).expect("the store opens");
    let input = store.queue("input").expect("the input");
    let group = store.queue("group").expect("the group");
    let seen = store.table("seen").expect("the table");
    input
        .append(record(0))
        .expect("queued")
        .await
        .expect("room");
    let filler = disk.path().join("filler");
    assert!(fill(&filler) > 0, "the filler takes the rest of the disk");

    let batch = |i: u64| {
        store
            .batch()
            .ack(&input, 0)
            .append(&group, record(i))
            .put(&seen, format!("k{i}"), record(i), None)
            .commit()
    };
    let (mut committed, mut failed) = (Vec::new(), Vec::new());
    for i in 1..200 {
        match batch(i).await {
            Ok(_) => committed.push(i),
            Err(_) => failed.push(i),
        }
        if failed.len() >= 3 {
            break;
        }
    }
    assert!(failed.len() >= 3, "a full disk fails batches");
    let check = |committed: &[u64], failed: &[u64]| {
        let appended: Vec<Bytes> = read_all(&group).into_iter().map(|(_, r)| r).collect();
        for i in committed {
            assert!(appended.contains(&record(*i)), "batch {i} appended");
            assert_eq!(
                seen.get(format!("k{i}").as_bytes()).unwrap(),
                Some(record(*i))
            );
        }
        for i in failed {
            assert!(
                !appended.contains(&record(*i)),
                "failed batch {i} appended nothing"
            );
            assert_eq!(seen.get(format!("k{i}").as_bytes()).unwrap(), None);
        }
        assert_eq!(appended.len(), committed.len());
    };
    check(&committed, &failed);
    if committed.is_empty() {
        assert_eq!(input.len(), 1, "the failed batches' ack was undone");
        assert_eq!(read_all(&input).len(), 1);
    }

    std::fs::remove_file(&filler).expect("room is made");
    let since = Instant::now();
    let mut i = 1000;
    let mut last_error = None;
    while since.elapsed() < Duration::from_secs(10) {
        match batch(i).await {
            Ok(_) => {
                committed.push(i);
                break;
            }
            Err(error) => {
                failed.push(i);
                last_error = Some(error);
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        committed.last(),
        Some(&(i)),
        "batches still fail 10 s after room was made: {last_error:?}"
    );
    check(&committed, &failed);
    assert_eq!(input.len(), 0, "acked by a committed batch");
}
