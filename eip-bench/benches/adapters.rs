//! The file, database and HTTP channel adapters against the raw code doing the same work, in
//! the same run (issue 9).
//!
//! - `file in`: 10 000 small files (100 bytes) per round through a [`FileSource`] into a
//!   point-to-point channel, a consumer acking each message, until every file is in the done
//!   directory; against a raw loop on a blocking thread (`read_dir`, read the file, one atomic
//!   rename to the done directory, hand the bytes to a tokio mpsc) and a consumer task. eip
//!   renames each file once more than the loop: the claim, which keeps two adapters from taking
//!   the same file (see `adapters/file.rs`).
//! - `sql out`: 5 000 rows per round into a PostgreSQL table through [`SqlOutbound`] driven by
//!   256 concurrent calls (its group commit, batches of at most 100, each one multi-row
//!   `INSERT`); against a raw sqlx loop parsing the same JSON payloads and writing them with the
//!   same batching and SQL (one transaction and one multi-row `INSERT` per 100 rows). One
//!   adapter and one pool are open before the first round. The table (unique name) is created at
//!   the start, truncated before each round and dropped at the end. PostgreSQL is
//!   `postgres://${PGUSER:-root}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}/test`; if it is not
//!   reachable, this comparison is skipped with a line saying so.
//! - `http in`: 16 concurrent keep-alive connections (one reqwest client, 16 tasks) × 500
//!   POSTs of a small JSON body per round, through [`HttpInbound`] into a channel and a
//!   consumer; against a bare axum handler on the same kind of server turning the body into a
//!   [`Message`], pushing it to a tokio mpsc and answering 202 with its id.
//!
//! Rounds alternate eip and baseline on a two-worker multi-thread runtime; the `compare:` lines
//! give medians in ns per file, row and request.
//!
//! Run: `cargo bench -p eip-bench --bench adapters` (well under a minute once built); add
//! `file`, `sql` or `http` to run only the comparisons so named. `cargo test -p eip-bench
//! --benches` runs a small version.

#[path = "adapters/file.rs"]
mod file;
#[path = "adapters/http.rs"]
mod http;
#[path = "adapters/sql.rs"]
mod sql;

use std::time::Instant;

use eip_bench::{Filter, measuring, runtime};

/// The capacity of the channel every eip side feeds, and of the baselines' tokio mpsc.
const CHANNEL_CAPACITY: usize = 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let measuring = measuring();
    let filter = Filter::from_args();
    let started = Instant::now();
    let rt = runtime();
    let rounds = if measuring { 5 } else { 1 };
    if filter.selects("file in") {
        file::compare(&rt, measuring, rounds);
    }
    if filter.selects("sql out") {
        sql::compare(&rt, measuring, rounds);
    }
    if filter.selects("http in") {
        http::compare(&rt, measuring, rounds);
    }
    drop(rt);
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}
