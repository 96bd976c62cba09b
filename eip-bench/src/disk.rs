//! The disk's own figures that durable benchmarks compare against: the cost of one small
//! synchronous write, and emptying the page cache before a cold measurement.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Appends `writes` records of `len` bytes to a new file in `dir`, each followed by
/// `fdatasync`, as a durable queue that wrote its records straight to a log would: the floor of
/// one message stored durably at a time on this file system. The time the loop took; the file
/// is removed.
pub fn append_and_sync(dir: &Path, writes: usize, len: usize) -> std::io::Result<Duration> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("fsync-floor.log");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let record = vec![b'x'; len];
    let started = Instant::now();
    for _ in 0..writes {
        file.write_all(&record)?;
        file.sync_data()?;
    }
    let elapsed = started.elapsed();
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(elapsed)
}

/// Writes every dirty page back and drops the machine's whole page cache (`sync`, then
/// `3` into `/proc/sys/vm/drop_caches`), so that what is read next comes from the disk. Needs
/// root on Linux; otherwise says why not.
pub fn drop_page_cache() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        std::fs::write("/proc/sys/vm/drop_caches", b"3")
            .map_err(|e| format!("writing /proc/sys/vm/drop_caches: {e}"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("dropping the page cache needs Linux".into())
    }
}
