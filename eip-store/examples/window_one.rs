//! One record at a time, as a durable channel with one message in flight does it: append, wait
//! for the commit, ack, append the next. Meant to be run under `strace` or `perf` to see what a
//! commit costs; prints the time per record and the store's counters.
//!
//! Run: `cargo run --release -p eip-store --example window_one [records] [dir]`, e.g.
//! `strace -f -c -e trace=pwrite64,fdatasync,fsync,ftruncate,fallocate target/release/examples/window_one 2000`.

use std::time::Instant;

use bytes::Bytes;
use eip_store::{DurableStore, StoreConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(2_000);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("eip-store-window-one"));
    let _ = std::fs::remove_dir_all(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let payload = Bytes::from(vec![b'x'; 1024]);
    runtime.block_on(async {
        let store = DurableStore::open(&dir, StoreConfig::default())?;
        let queue = store.queue("one")?;
        let before = store.stats();
        let started = Instant::now();
        for _ in 0..records {
            let seq = queue.append(payload.clone())?.await?;
            queue.ack(seq);
        }
        let elapsed = started.elapsed();
        let after = store.stats();
        let commits = after.commits - before.commits;
        let commit_nanos =
            after.commit_latency.total_nanos - before.commit_latency.total_nanos;
        println!(
            "{records} records one at a time: {:.1} µs per record, {commits} commits of {:.1} µs on average, {} checkpoints",
            elapsed.as_secs_f64() * 1e6 / records as f64,
            commit_nanos as f64 / 1e3 / commits.max(1) as f64,
            after.checkpoints - before.checkpoints
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
