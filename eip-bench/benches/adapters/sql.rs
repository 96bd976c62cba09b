//! `sql out`: an [`SqlOutbound`] against a raw sqlx loop with the same batching and the same
//! SQL.
//!
//! Both sides write 5 000 rows `{"n": i, "item": "item i"}` per round into the same PostgreSQL
//! table (`n BIGINT, item TEXT`), over one connection (opened once, before the first round, and
//! used by every round, so neither side's time holds a connect or a first prepare), 100 rows
//! per transaction:
//!
//! - eip: an [`SqlOutbound`] with `INSERT INTO t (n, item) VALUES (:$.n, :$.item)`, batch size
//!   100, called by 256 concurrent tasks (one `tokio::spawn` per message, a semaphore keeping
//!   256 in flight). Each call parses its payload and binds the two values; the adapter's writer
//!   writes what is queued (up to 100) as one transaction holding one multi-row
//!   `INSERT … VALUES ($1, $2), …, ($199, $200)`, and each call completes once it committed.
//! - raw: one loop, per 100 messages: parse each payload with `serde_json`, bind the two values
//!   into the same multi-row `INSERT` (built once), `begin`, `execute`, `commit`.

use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use eip_adapters::sql::{Connection, SqlOutbound, SqlOutboundConfig};
use eip_bench::{alternating_medians, per_item, print_compare};
use eip_core::Message;
use sqlx::PgPool;
use tower::{Service, ServiceExt};

/// Rows per transaction, for both sides.
const SQL_BATCH: usize = 100;
/// Calls in flight through the adapter.
const SQL_CONCURRENCY: usize = 256;

/// Runs the `sql out` comparison and prints its compare line, or a line saying it was
/// skipped when PostgreSQL is not reachable.
pub fn compare(rt: &Runtime, measuring: bool, rounds: usize) {
    let rows = if measuring { 5_000 } else { 200 };
    let (url, pool) = match rt.block_on(pg_connect()) {
        Ok(connected) => connected,
        Err(error) => {
            println!("sql out: PostgreSQL not reachable ({error}): skipped");
            return;
        }
    };
    let table = format!(
        "eip_bench_rows_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    rt.block_on(async {
        sqlx::query(&format!(
            "CREATE TABLE {table} (n BIGINT NOT NULL, item TEXT NOT NULL)"
        ))
        .execute(&pool)
        .await
    })
    .expect("the bench table is created");
    // One adapter for every round, as the baseline has one pool: both measure a connection
    // that is open and has its statements prepared.
    let config = SqlOutboundConfig::new(
        Connection::new(url).max_connections(1),
        format!("INSERT INTO {table} (n, item) VALUES (:$.n, :$.item)"),
    )
    .batch_size(SQL_BATCH);
    let outbound = rt
        .block_on(SqlOutbound::connect(config))
        .expect("the outbound adapter connects");
    let (eip_ns, raw_ns) = alternating_medians(
        rounds,
        |round| {
            let ns = per_item(rt.block_on(sql_eip(&outbound, &pool, &table, rows)), rows);
            eprintln!("  sql out round {round}: eip {ns:.0} ns/row");
            ns
        },
        |round| {
            let ns = per_item(rt.block_on(sql_raw(&pool, &table, rows)), rows);
            eprintln!("  sql out round {round}: raw {ns:.0} ns/row");
            ns
        },
    );
    drop(outbound);
    let _ = rt.block_on(async {
        sqlx::query(&format!("DROP TABLE {table}"))
            .execute(&pool)
            .await
    });
    rt.block_on(pool.close());
    print_compare(
        "sql out",
        eip_ns,
        raw_ns,
        "raw sqlx, one transaction and one multi-row INSERT per 100 rows",
    );
}

async fn pg_connect() -> Result<(String, PgPool), String> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let url = format!(
        "postgres://{}@{}:{}/test",
        env("PGUSER", "root"),
        env("PGHOST", "127.0.0.1"),
        env("PGPORT", "5432")
    );
    let options = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5));
    match tokio::time::timeout(Duration::from_secs(5), options.connect(&url)).await {
        Ok(Ok(pool)) => Ok((url, pool)),
        Ok(Err(error)) => Err(format!("{url}: {error}")),
        Err(_) => Err(format!("{url}: no answer within 5 s")),
    }
}

fn row_message(i: usize) -> Message {
    Message::new(format!(r#"{{"n":{i},"item":"item {i}"}}"#).into_bytes())
}

async fn truncate(pool: &PgPool, table: &str) {
    sqlx::query(&format!("TRUNCATE {table}"))
        .execute(pool)
        .await
        .expect("the bench table truncates");
}

async fn check_rows(pool: &PgPool, table: &str, rows: usize) {
    let count: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(pool)
        .await
        .expect("rows counted");
    assert_eq!(count as usize, rows, "every row written");
}

/// The time to write `rows` messages through [`SqlOutbound`], [`SQL_CONCURRENCY`] calls at a
/// time, each completing once its transaction committed.
async fn sql_eip(outbound: &SqlOutbound, admin: &PgPool, table: &str, rows: usize) -> Duration {
    truncate(admin, table).await;
    let messages: Vec<Message> = (0..rows).map(row_message).collect();
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(SQL_CONCURRENCY));
    let started = Instant::now();
    let mut calls = Vec::with_capacity(rows);
    for msg in messages {
        let permit = permits.clone().acquire_owned().await.expect("open");
        let mut outbound = outbound.clone();
        calls.push(tokio::spawn(async move {
            outbound
                .ready()
                .await
                .expect("ready")
                .call(msg)
                .await
                .expect("committed");
            drop(permit);
        }));
    }
    for call in calls {
        call.await.expect("a call finishes");
    }
    let elapsed = started.elapsed();
    check_rows(admin, table, rows).await;
    elapsed
}

/// `INSERT INTO table (n, item) VALUES ($1, $2), ($3, $4), …` for `rows` rows.
fn multi_row_insert(table: &str, rows: usize) -> String {
    let tuples: Vec<String> = (0..rows)
        .map(|r| format!("(${}, ${})", 2 * r + 1, 2 * r + 2))
        .collect();
    format!("INSERT INTO {table} (n, item) VALUES {}", tuples.join(", "))
}

/// The time to write the same rows with sqlx directly, parsing the same payloads, one
/// transaction and one multi-row `INSERT` per [`SQL_BATCH`] rows.
async fn sql_raw(pool: &PgPool, table: &str, rows: usize) -> Duration {
    truncate(pool, table).await;
    let messages: Vec<Message> = (0..rows).map(row_message).collect();
    let full = multi_row_insert(table, SQL_BATCH);
    let started = Instant::now();
    for batch in messages.chunks(SQL_BATCH) {
        let values: Vec<(i64, String)> = batch
            .iter()
            .map(|msg| {
                let value: serde_json::Value =
                    serde_json::from_slice(msg.payload()).expect("a JSON payload");
                let n = value["n"].as_i64().expect("n");
                let item = value["item"].as_str().expect("item").to_owned();
                (n, item)
            })
            .collect();
        let short;
        let sql = if batch.len() == SQL_BATCH {
            &full
        } else {
            short = multi_row_insert(table, batch.len());
            &short
        };
        let mut query = sqlx::query(sql);
        for (n, item) in &values {
            query = query.bind(*n).bind(item.as_str());
        }
        let mut tx = pool.begin().await.expect("a transaction");
        query.execute(&mut *tx).await.expect("rows inserted");
        tx.commit().await.expect("committed");
    }
    let elapsed = started.elapsed();
    check_rows(pool, table, rows).await;
    elapsed
}
