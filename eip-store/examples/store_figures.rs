//! The store's figures on this machine: append latency alone and with 256 concurrent appenders,
//! and the time to reopen a store of many records (default 1 000 000 of 1 KiB).
//!
//! Run: `cargo run --release -p eip-store --example store_figures [records] [dir] [crash|idle]`
//!
//! With `crash` as third argument the program aborts once the records are committed, without
//! closing the store; run it again with `0` records and the same directory to time the reopen
//! after a crash (redb then repairs the file: it walks every page). With `1 [dir] idle` it opens
//! the store in `dir`, appends one record, waits for the store's idle checkpoint and aborts: the
//! next reopen then needs no repair.

use std::time::Instant;

use bytes::Bytes;
use eip_store::{DurableStore, StoreConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let records: u64 = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("eip-store-figures"));
    let mode = args.next().unwrap_or_default();
    let crash = mode == "crash";
    if records == 0 {
        return reopen(&dir, None);
    }
    if mode == "idle" {
        return idle_crash(&dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let payload = Bytes::from(vec![b'x'; 1024]);

    runtime.block_on(async {
        let store = DurableStore::open(&dir, StoreConfig::default())?;
        let queue = store.queue("latency")?;

        let n = 500;
        let started = Instant::now();
        for _ in 0..n {
            queue.append(payload.clone())?.await?;
        }
        let per = started.elapsed().as_secs_f64() / n as f64;
        println!("1 appender: {:.3} ms per 1 KiB append (one commit each)", per * 1e3);

        for appenders in [16u64, 256] {
            let rounds = 4096 / appenders;
            let before = store.stats().commits;
            let started = Instant::now();
            let tasks: Vec<_> = (0..appenders)
                .map(|_| {
                    let queue = queue.clone();
                    let payload = payload.clone();
                    tokio::spawn(async move {
                        for _ in 0..rounds {
                            queue.append(payload.clone())?.await?;
                        }
                        Ok::<_, eip_store::StoreError>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await??;
            }
            let elapsed = started.elapsed().as_secs_f64();
            let commits = store.stats().commits - before;
            let total = appenders * rounds;
            println!(
                "{appenders} concurrent appenders: {total} records in {commits} commits ({:.0} per commit), \
                 {:.3} ms per commit, {:.0} records/s",
                total as f64 / commits as f64,
                elapsed * 1e3 / commits as f64,
                total as f64 / elapsed
            );
        }
        store.remove_queue("latency").await?;

        let fill = store.queue("recovery")?;
        let started = Instant::now();
        let mut written = 0;
        while written < records {
            let batch = (records - written).min(4096);
            let tickets: Vec<_> = (0..batch)
                .map(|_| fill.append(payload.clone()))
                .collect::<Result<_, _>>()?;
            for ticket in tickets {
                ticket.await?;
            }
            written += batch;
        }
        println!(
            "filled {records} records of 1 KiB in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        if crash {
            println!("crashing with the store open");
            std::process::abort();
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    reopen(&dir, Some(records))
}

/// Opens the store in `dir` and reports how long that took.
fn reopen(dir: &std::path::Path, expected: Option<u64>) -> Result<(), Box<dyn std::error::Error>> {
    let size = std::fs::metadata(dir.join("store.redb"))?.len();
    let started = Instant::now();
    let store = DurableStore::open(dir, StoreConfig::default())?;
    let queue = store.queue("recovery")?;
    let elapsed = started.elapsed().as_secs_f64();
    let records = queue.len();
    assert!(expected.is_none_or(|e| e == records));
    println!(
        "recovery: {records} records in {elapsed:.4} s (file {:.0} MiB, used_bytes {} MiB)",
        size as f64 / (1 << 20) as f64,
        store.used_bytes() >> 20
    );
    let first = queue.read(0, 1)?;
    assert_eq!(first.len(), 1);
    drop((queue, store));
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines().filter(|l| l.starts_with("VmHWM")) {
            println!("peak RSS ({line})");
        }
    }
    if expected.is_some() {
        std::fs::remove_dir_all(dir)?;
    }
    Ok(())
}

/// Opens the store in `dir`, appends one record, waits for the idle checkpoint, then aborts
/// with the store open.
fn idle_crash(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let store = DurableStore::open(dir, StoreConfig::default())?;
        let queue = store.queue("recovery")?;
        let before = store.stats().checkpoints;
        queue.append(Bytes::from(vec![b'x'; 1024]))?.await?;
        let started = Instant::now();
        while store.stats().checkpoints == before {
            if started.elapsed().as_secs() > 30 {
                return Err("no checkpoint within 30 s".into());
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        println!(
            "checkpoint {:.0} ms after the append; crashing with the store open",
            started.elapsed().as_secs_f64() * 1e3
        );
        std::process::abort()
    })
}
