//! Measures redb itself on this disk, before the store is built on it: the time of one durable
//! commit holding 1 record of 1 KiB, and holding 256 such records.
//!
//! Run: `cargo run --release -p eip-store --example redb_commit_latency [dir]`

use std::time::Instant;

use redb::{Database, TableDefinition};

const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("eip-store-redb-latency"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Database::builder()
        .set_cache_size(32 << 20)
        .create(dir.join("bench.redb"))?;
    let payload = vec![7u8; 1024];
    let mut seq = 0u64;
    for per_commit in [1usize, 256] {
        let commits = if per_commit == 1 { 2000 } else { 200 };
        let started = Instant::now();
        for _ in 0..commits {
            let txn = db.begin_write()?;
            {
                let mut table = txn.open_table(RECORDS)?;
                for _ in 0..per_commit {
                    table.insert(seq, payload.as_slice())?;
                    seq += 1;
                }
            }
            txn.commit()?;
        }
        let per = started.elapsed() / commits as u32;
        println!(
            "{per_commit:>4} x 1 KiB per durable commit: {:.3} ms per commit, {:.0} records/s",
            per.as_secs_f64() * 1e3,
            per_commit as f64 / per.as_secs_f64()
        );
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
