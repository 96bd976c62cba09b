//! Helpers shared by the store's tests: scratch directories and child processes.
#![allow(dead_code)]

pub mod damage;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use eip_store::{DurableStore, StoreConfig};

/// A fresh directory under the system's temp dir, removed on drop.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(label: &str) -> ScratchDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("eip-store-test-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        ScratchDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn open(dir: &Path) -> DurableStore {
    DurableStore::open(dir, StoreConfig::default()).expect("the store opens")
}

/// A record whose content says which one it is.
pub fn record(i: u64) -> Bytes {
    Bytes::from(format!("record {i:06}").into_bytes())
}

/// Every record of `queue` from the start, read in pages.
pub fn read_all(queue: &eip_store::QueueLog) -> Vec<(u64, Bytes)> {
    let mut all = Vec::new();
    let mut from = 0;
    loop {
        let page = queue.read(from, 100).expect("read");
        match page.last() {
            Some((seq, _)) => from = seq + 1,
            None => return all,
        }
        all.extend(page);
    }
}

/// Runs `future` to its end on a current-thread runtime with a clock (what a child test or a
/// synchronous test needs to drive the store).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

/// Runs this test binary again, running only `test`, with `EIP_STORE_CHILD_DIR` set to `dir`.
/// Returns the child's output.
pub fn run_child(test: &str, dir: &Path) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("EIP_STORE_CHILD_DIR", dir)
        .output()
        .expect("the child test process runs")
}

/// The directory a parent test handed to this process, if it is a child.
pub fn child_dir() -> Option<PathBuf> {
    std::env::var_os("EIP_STORE_CHILD_DIR").map(PathBuf::from)
}
