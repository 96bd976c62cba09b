//! `file in`: a [`FileSource`] against a raw read + rename loop.
//!
//! Both sides list the directory, read each file and move it to the done directory by one
//! rename, and hand its bytes to a channel with a consumer. eip does one rename more per file:
//! the claim (an atomic rename into `.claimed/`), which is what makes two adapters never take
//! one file and lets a crash between claim and settle leave the file to be taken again; the
//! raw loop has no such guarantee and does not pay for it. eip also builds a message with its
//! file headers and moves the file only after the channel accepted it. eip names each file
//! relative to directory handles it holds open (`renameat`, `openat`) and claims the next batch
//! while it reads one; the raw loop uses `std::fs` with full paths, one file after the other,
//! as plain code would.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use eip_adapters::file::FileSource;
use eip_bench::{TempDir, alternating_medians, per_item, print_compare};
use eip_core::channel::PointToPoint;

use crate::CHANNEL_CAPACITY;

/// The size of every spooled file.
const FILE_LEN: usize = 100;

/// Runs the `file in` comparison and prints its compare line.
pub fn compare(rt: &Runtime, measuring: bool, rounds: usize) {
    let files = if measuring { 10_000 } else { 100 };
    let (eip_ns, raw_ns) = alternating_medians(
        rounds,
        |round| {
            let ns = per_item(rt.block_on(file_eip(files)), files);
            eprintln!("  file in round {round}: eip {ns:.0} ns/file");
            ns
        },
        |round| {
            let ns = per_item(rt.block_on(file_raw(files)), files);
            eprintln!("  file in round {round}: raw {ns:.0} ns/file");
            ns
        },
    );
    print_compare(
        "file in",
        eip_ns,
        raw_ns,
        "raw read_dir + read + rename + tokio mpsc",
    );
}

/// A fresh directory holding `files` files of [`FILE_LEN`] bytes named `NNNNNN.msg`.
fn spool(files: usize) -> TempDir {
    let dir = TempDir::new("files");
    std::fs::create_dir_all(dir.path()).expect("the spool directory");
    for i in 0..files {
        let mut body = vec![b'x'; FILE_LEN];
        body[..8].copy_from_slice(&(i as u64).to_le_bytes());
        std::fs::write(dir.path().join(format!("{i:06}.msg")), body).expect("a spool file");
    }
    dir
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// The time from starting a [`FileSource`] on `files` files to every message acked and every
/// file in the done directory.
async fn file_eip(files: usize) -> Duration {
    let dir = spool(files);
    let done = dir.path().join(".done");
    let channel = PointToPoint::new("files", CHANNEL_CAPACITY).expect("channel builds");
    let config = FileSource::builder(dir.path())
        .glob("*.msg")
        .poll_interval(Duration::from_millis(10))
        .build()
        .expect("file source config");
    let mut receiver = channel.receiver();
    let started = Instant::now();
    let source = FileSource::new(config, channel.sender()).spawn();
    for _ in 0..files {
        let delivery = receiver.recv().await.expect("the channel stays open");
        assert_eq!(delivery.message().payload().len(), FILE_LEN);
        delivery.ack();
    }
    while count_files(&done) < files {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = started.elapsed();
    source.shutdown().await.expect("the file source stops");
    elapsed
}

/// The same with a raw loop on a blocking thread.
async fn file_raw(files: usize) -> Duration {
    let dir = spool(files);
    let path = dir.path().to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(CHANNEL_CAPACITY);
    let started = Instant::now();
    let reader = tokio::task::spawn_blocking(move || {
        let done = path.join(".done");
        std::fs::create_dir_all(&done).expect("the done directory");
        for entry in std::fs::read_dir(&path).expect("the spool lists") {
            let entry = entry.expect("an entry");
            let name = entry.file_name();
            let Some(text) = name.to_str() else { continue };
            if text.starts_with('.') || !text.ends_with(".msg") {
                continue;
            }
            if !entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                continue;
            }
            let bytes = std::fs::read(entry.path()).expect("a file reads");
            std::fs::rename(entry.path(), done.join(&name)).expect("a file moves to done");
            tx.blocking_send(bytes).expect("the consumer is there");
        }
    });
    for _ in 0..files {
        let bytes = rx.recv().await.expect("a file's bytes");
        assert_eq!(bytes.len(), FILE_LEN);
    }
    let elapsed = started.elapsed();
    reader.await.expect("the reader finishes");
    assert_eq!(count_files(&dir.path().join(".done")), files);
    elapsed
}
