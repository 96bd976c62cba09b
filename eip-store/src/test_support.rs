//! What the store's unit tests share: a scratch directory, a runtime, a record.

use std::path::PathBuf;

use bytes::Bytes;

/// A record whose content says which one it is.
pub(crate) fn record(i: u64) -> Bytes {
    Bytes::from(format!("record {i}"))
}

/// An empty directory `eip-store-<label>-<pid>` under the system's temp dir.
pub(crate) fn scratch_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eip-store-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A current-thread runtime with a clock, to drive the store.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}
