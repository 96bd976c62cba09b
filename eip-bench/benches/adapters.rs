//! The file, database and HTTP channel adapters against the raw code doing the same work, in
//! the same run (issue 9).
//!
//! - `file in`: 2 000 small files (100 bytes) per round through a [`FileSource`] into a
//!   point-to-point channel, a consumer acking each message, until every file is in the done
//!   directory; against a raw loop on a blocking thread (`read_dir`, read the file, one atomic
//!   rename to the done directory, hand the bytes to a tokio mpsc) and a consumer task.
//! - `sql out`: 5 000 rows per round into a PostgreSQL table through [`SqlOutbound`] driven by
//!   256 concurrent calls (its group commit, batches of at most 100); against a raw sqlx loop
//!   parsing the same JSON payloads and inserting them with the same batching (one transaction
//!   per 100 rows, one parameterized `INSERT` per row). The table (unique name) is created at
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

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use eip_adapters::file::FileSource;
use eip_adapters::http::{HttpInbound, HttpInboundConfig};
use eip_adapters::sql::{Connection, SqlOutbound, SqlOutboundConfig};
use eip_bench::{
    Filter, TempDir, alternating_medians, measuring, per_item, print_compare, runtime,
};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use sqlx::PgPool;
use tower::{Service, ServiceExt};

const CHANNEL_CAPACITY: usize = 1024;
const FILE_LEN: usize = 100;
const SQL_BATCH: usize = 100;
const SQL_CONCURRENCY: usize = 256;
const HTTP_CONNECTIONS: usize = 16;

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
        let files = if measuring { 2_000 } else { 100 };
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

    if filter.selects("sql out") {
        let rows = if measuring { 5_000 } else { 200 };
        match rt.block_on(pg_connect()) {
            Ok((url, pool)) => {
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
                let (eip_ns, raw_ns) = alternating_medians(
                    rounds,
                    |round| {
                        let ns = per_item(rt.block_on(sql_eip(&url, &pool, &table, rows)), rows);
                        eprintln!("  sql out round {round}: eip {ns:.0} ns/row");
                        ns
                    },
                    |round| {
                        let ns = per_item(rt.block_on(sql_raw(&pool, &table, rows)), rows);
                        eprintln!("  sql out round {round}: raw {ns:.0} ns/row");
                        ns
                    },
                );
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
                    "raw sqlx, one transaction per 100 rows",
                );
            }
            Err(error) => println!("sql out: PostgreSQL not reachable ({error}): skipped"),
        }
    }

    if filter.selects("http in") {
        let per_connection = if measuring { 500 } else { 20 };
        let requests = per_connection * HTTP_CONNECTIONS;
        let (eip_ns, raw_ns) = alternating_medians(
            rounds,
            |round| {
                let ns = per_item(rt.block_on(http_eip(per_connection)), requests);
                eprintln!("  http in round {round}: eip {ns:.0} ns/request");
                ns
            },
            |round| {
                let ns = per_item(rt.block_on(http_raw(per_connection)), requests);
                eprintln!("  http in round {round}: raw {ns:.0} ns/request");
                ns
            },
        );
        print_compare(
            "http in",
            eip_ns,
            raw_ns,
            "bare axum handler + tokio mpsc, 16 keep-alive connections",
        );
    }
    drop(rt);
    println!("run took {:.1} s", started.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// file in

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

// ---------------------------------------------------------------------------------------------
// sql out

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
async fn sql_eip(url: &str, admin: &PgPool, table: &str, rows: usize) -> Duration {
    truncate(admin, table).await;
    let config = SqlOutboundConfig::new(
        Connection::new(url).max_connections(1),
        format!("INSERT INTO {table} (n, item) VALUES (:$.n, :$.item)"),
    )
    .batch_size(SQL_BATCH);
    let outbound = SqlOutbound::connect(config)
        .await
        .expect("the outbound adapter connects");
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
    drop(outbound);
    check_rows(admin, table, rows).await;
    elapsed
}

/// The time to write the same rows with sqlx directly, parsing the same payloads, one
/// transaction per [`SQL_BATCH`] rows.
async fn sql_raw(pool: &PgPool, table: &str, rows: usize) -> Duration {
    truncate(pool, table).await;
    let messages: Vec<Message> = (0..rows).map(row_message).collect();
    let sql = format!("INSERT INTO {table} (n, item) VALUES ($1, $2)");
    let started = Instant::now();
    for batch in messages.chunks(SQL_BATCH) {
        let mut tx = pool.begin().await.expect("a transaction");
        for msg in batch {
            let value: serde_json::Value =
                serde_json::from_slice(msg.payload()).expect("a JSON payload");
            let n = value["n"].as_i64().expect("n");
            let item = value["item"].as_str().expect("item");
            sqlx::query(&sql)
                .bind(n)
                .bind(item)
                .execute(&mut *tx)
                .await
                .expect("a row inserted");
        }
        tx.commit().await.expect("committed");
    }
    let elapsed = started.elapsed();
    check_rows(pool, table, rows).await;
    elapsed
}

// ---------------------------------------------------------------------------------------------
// http in

const BODY: &str = r#"{"sku":7,"qty":3,"customer":"acme"}"#;

/// [`HTTP_CONNECTIONS`] tasks sharing one keep-alive client, each posting `per_connection`
/// requests one after the other, every answer checked to be 202.
async fn load(addr: SocketAddr, per_connection: usize) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(HTTP_CONNECTIONS)
        .build()
        .expect("a client");
    let url = format!("http://{addr}/orders");
    let tasks: Vec<_> = (0..HTTP_CONNECTIONS)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move {
                for _ in 0..per_connection {
                    let response = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(BODY)
                        .send()
                        .await
                        .expect("an answer");
                    assert_eq!(response.status(), 202);
                    response.bytes().await.expect("the answer's body");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a load task finishes");
    }
}

/// The time for the load through [`HttpInbound`] into a channel, until every request is
/// answered and every message acked.
async fn http_eip(per_connection: usize) -> Duration {
    let requests = per_connection * HTTP_CONNECTIONS;
    let channel = PointToPoint::new("orders", CHANNEL_CAPACITY).expect("channel builds");
    let config = HttpInboundConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), "/orders");
    let server = HttpInbound::new(config, channel.clone())
        .expect("inbound config")
        .bind()
        .await
        .expect("the server binds");
    let mut receiver = channel.receiver();
    let consumer = tokio::spawn(async move {
        for _ in 0..requests {
            let delivery = receiver.recv().await.expect("the channel stays open");
            assert_eq!(delivery.message().payload().len(), BODY.len());
            delivery.ack();
        }
    });
    let started = Instant::now();
    load(server.local_addr(), per_connection).await;
    consumer.await.expect("the consumer finishes");
    let elapsed = started.elapsed();
    server.shutdown().await;
    elapsed
}

/// The same through a bare axum handler and a tokio mpsc.
async fn http_raw(per_connection: usize) -> Duration {
    let requests = per_connection * HTTP_CONNECTIONS;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(CHANNEL_CAPACITY);
    let router = axum::Router::new().route(
        "/orders",
        axum::routing::post(move |headers: HeaderMap, body: bytes::Bytes| {
            let tx = tx.clone();
            async move {
                let mut msg = Message::builder(body);
                if let Some(kind) = headers.get("content-type").and_then(|v| v.to_str().ok()) {
                    msg = msg.content_type(kind);
                }
                let msg = msg.build();
                let id = msg.id().to_string();
                match tx.send(msg).await {
                    Ok(()) => (
                        StatusCode::ACCEPTED,
                        format!(r#"{{"id":"{id}","outcome":"accepted"}}"#),
                    ),
                    Err(_) => (StatusCode::SERVICE_UNAVAILABLE, String::new()),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the raw server binds");
    let addr = listener.local_addr().expect("its address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("the raw server runs");
    });
    let consumer = tokio::spawn(async move {
        for _ in 0..requests {
            let msg = rx.recv().await.expect("a message");
            assert_eq!(msg.payload().len(), BODY.len());
        }
    });
    let started = Instant::now();
    load(addr, per_connection).await;
    consumer.await.expect("the consumer finishes");
    let elapsed = started.elapsed();
    let _ = stop.send(());
    let _ = server.await;
    elapsed
}
