//! The inbound file adapter and a file truncated while it is read: the message is the whole
//! file or nothing (the file then goes to the error directory saying it changed while read).

#![cfg(feature = "file")]

use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eip_adapters::file::FileSource;
use eip_core::channel::PointToPoint;

mod support;
use support::{TempDir, names};

const SIZE: usize = 192 << 20;
const CUT: u64 = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_truncated_while_read_is_never_delivered_as_a_whole_file() {
    let dir = TempDir::new("torn");
    let watched = dir.join("in");
    fs::create_dir_all(&watched).unwrap();
    fs::write(dir.join("big"), vec![b'x'; SIZE]).unwrap();
    let claims = watched.join(".claimed");
    fs::create_dir_all(&claims).unwrap();

    // Truncates the file the moment it is claimed, while the adapter reads its 192 MiB.
    let stop = Arc::new(AtomicBool::new(false));
    let cutter = std::thread::spawn({
        let (claims, stop) = (claims.clone(), stop.clone());
        move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                if let Some(name) = names(&claims).into_iter().find(|n| n.ends_with(".big")) {
                    let file = fs::OpenOptions::new().write(true).open(claims.join(name));
                    return file.and_then(|f| f.set_len(CUT)).is_ok();
                }
                std::thread::yield_now();
            }
            false
        }
    });
    let channel = PointToPoint::new("files", 10).unwrap();
    let config = FileSource::builder(&watched)
        .max_size(256 << 20)
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    fs::rename(dir.join("big"), watched.join("big")).unwrap();

    let mut receiver = channel.receiver();
    let outcome = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if watched.join(".error/big.error").exists() {
                return None;
            }
            let delivery = tokio::time::timeout(Duration::from_millis(20), receiver.recv()).await;
            if let Ok(Some(delivery)) = delivery {
                let len = delivery.message().payload().len();
                delivery.ack();
                return Some(len);
            }
        }
    })
    .await
    .expect("delivered or refused within 20 s");
    stop.store(true, Ordering::Relaxed);
    let cut = cutter.join().unwrap();
    source.shutdown().await.unwrap();
    assert!(cut, "the file was truncated once claimed");
    eprintln!("delivered: {outcome:?} (None: refused as changed while read)");
    match outcome {
        // Cut before it was opened: the file as it then was, whole.
        Some(len) => assert!(
            len == SIZE || len as u64 == CUT,
            "a partial file delivered: {len} bytes"
        ),
        None => {
            let note = fs::read_to_string(watched.join(".error/big.error")).unwrap();
            assert!(note.contains("changed while read"), "{note}");
            assert!(note.contains(&format!("{SIZE} bytes at open")), "{note}");
        }
    }
}
