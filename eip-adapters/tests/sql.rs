//! The database adapter against real databases: PostgreSQL and MariaDB on this machine (as in
//! CI), SQLite in a temporary file.
//!
//! Each test makes a schema (PostgreSQL), a database (MariaDB) or a file (SQLite) of its own
//! with a unique name, and drops it at the end, even when the test fails. Host, port and user
//! come from `PGHOST`, `PGPORT`, `PGUSER` and `MYSQL_HOST`, `MYSQL_TCP_PORT`, `MYSQL_USER`
//! (defaults 127.0.0.1, 5432 / 3306, root). A database that is down fails the test with a
//! message naming it.
#![cfg(feature = "sql")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use eip_adapters::sql::{
    Claim, ClaimColumns, Connection, SqlError, SqlInbound, SqlInboundConfig, SqlOutbound,
    SqlOutboundConfig,
};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use serde_json::{Value, json};
use sqlx::{MySqlPool, PgPool, SqlitePool};
use tower::{Service, ServiceExt};

const PG_SERVER: &str = "postgres://${PGUSER:-root}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}";
const MARIADB_SERVER: &str =
    "mysql://${MYSQL_USER:-root}@${MYSQL_HOST:-127.0.0.1}:${MYSQL_TCP_PORT:-3306}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Postgres,
    MariaDb,
    Sqlite,
}

enum Admin {
    Postgres(PgPool),
    MariaDb(MySqlPool),
    Sqlite(SqlitePool),
}

/// A schema, database or file of the test's own, dropped at the end.
struct TestDb {
    kind: Kind,
    name: String,
    url: String,
    admin: Admin,
    file: Option<PathBuf>,
}

/// The environment's expansion of `${NAME:-default}`, as the adapter does it.
fn expand(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').unwrap();
        let (name, default) = rest[start + 2..end].split_once(":-").unwrap();
        out.push_str(&std::env::var(name).unwrap_or_else(|_| default.to_owned()));
        rest = &rest[end + 1..];
    }
    out + rest
}

impl TestDb {
    async fn new(kind: Kind, test: &str) -> TestDb {
        let name = format!(
            "eip_sql_{test}_{}",
            &eip_core::MessageId::new().to_string().replace('-', "")[..12]
        );
        let (url, admin, file) = match kind {
            Kind::Postgres => {
                let server = expand(PG_SERVER);
                let pool = PgPool::connect(&format!("{server}/test"))
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL at {server}/test is not reachable: {e}")
                    });
                sqlx::query(&format!("CREATE SCHEMA {name}"))
                    .execute(&pool)
                    .await
                    .unwrap();
                let url = format!("{PG_SERVER}/test?options=-c%20search_path%3D{name}");
                let admin = PgPool::connect(&expand(&url)).await.unwrap();
                (url, Admin::Postgres(admin), None)
            }
            Kind::MariaDb => {
                let server = expand(MARIADB_SERVER);
                let pool = MySqlPool::connect(&format!("{server}/test"))
                    .await
                    .unwrap_or_else(|e| panic!("MariaDB at {server}/test is not reachable: {e}"));
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&pool)
                    .await
                    .unwrap();
                let url = format!("{MARIADB_SERVER}/{name}");
                let admin = MySqlPool::connect(&expand(&url)).await.unwrap();
                (url, Admin::MariaDb(admin), None)
            }
            Kind::Sqlite => {
                let file = std::env::temp_dir().join(format!("{name}.db"));
                let url = format!("sqlite://{}?mode=rwc", file.display());
                let admin = SqlitePool::connect(&url).await.unwrap();
                sqlx::query("PRAGMA journal_mode = WAL")
                    .execute(&admin)
                    .await
                    .unwrap();
                (url, Admin::Sqlite(admin), Some(file))
            }
        };
        TestDb {
            kind,
            name,
            url,
            admin,
            file,
        }
    }

    fn connection(&self) -> Connection {
        Connection::new(self.url.clone())
    }

    async fn exec(&self, sql: &str) {
        match &self.admin {
            Admin::Postgres(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            Admin::MariaDb(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            Admin::Sqlite(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
        }
    }

    async fn count(&self, sql: &str) -> i64 {
        match &self.admin {
            Admin::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            Admin::MariaDb(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            Admin::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        }
    }

    async fn texts(&self, sql: &str) -> Vec<String> {
        match &self.admin {
            Admin::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
            Admin::MariaDb(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
            Admin::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
        }
    }

    /// The SQL type of an auto-numbered key.
    fn serial(&self) -> &'static str {
        match self.kind {
            Kind::Postgres => "SERIAL PRIMARY KEY",
            Kind::MariaDb => "INTEGER AUTO_INCREMENT PRIMARY KEY",
            Kind::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
        }
    }

    /// The claim this database uses.
    fn claim(&self, timeout: Duration) -> Claim {
        match self.kind {
            Kind::Sqlite => Claim::Column(ClaimColumns::new("orders", "id").timeout(timeout)),
            _ => Claim::SkipLocked,
        }
    }

    /// An `orders` table with `rows` rows to poll.
    async fn orders(&self, rows: usize) {
        self.exec(&format!(
            "CREATE TABLE orders (id {}, item VARCHAR(40) NOT NULL, qty INTEGER NOT NULL, \
             done INTEGER NOT NULL DEFAULT 0, claimed_by VARCHAR(200), claimed_at BIGINT)",
            self.serial()
        ))
        .await;
        for chunk in (0..rows).collect::<Vec<_>>().chunks(100) {
            let values: Vec<String> = chunk.iter().map(|i| format!("('item {i}', {i})")).collect();
            self.exec(&format!(
                "INSERT INTO orders (item, qty) VALUES {}",
                values.join(", ")
            ))
            .await;
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let (kind, name, file) = (self.kind, self.name.clone(), self.file.take());
        // Drop is not async: a thread of its own runs the clean-up on a runtime of its own.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                match kind {
                    Kind::Postgres => {
                        if let Ok(p) = PgPool::connect(&format!("{}/test", expand(PG_SERVER))).await
                        {
                            let _ = sqlx::query(&format!("DROP SCHEMA {name} CASCADE"))
                                .execute(&p)
                                .await;
                        }
                    }
                    Kind::MariaDb => {
                        if let Ok(p) =
                            MySqlPool::connect(&format!("{}/test", expand(MARIADB_SERVER))).await
                        {
                            let _ = sqlx::query(&format!("DROP DATABASE {name}"))
                                .execute(&p)
                                .await;
                        }
                    }
                    Kind::Sqlite => {
                        if let Some(file) = file {
                            for suffix in ["", "-wal", "-shm"] {
                                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
                            }
                        }
                    }
                }
            });
        })
        .join()
        .unwrap();
    }
}

// ---- outbound ----

async fn trades(db: &TestDb) {
    db.exec(&format!(
        "CREATE TABLE trades (id {}, symbol VARCHAR(200) NOT NULL, qty INTEGER NOT NULL, \
         price DOUBLE PRECISION, trader VARCHAR(40), active BOOLEAN, note VARCHAR(40), meta VARCHAR(200))",
        db.serial()
    ))
    .await;
}

const INSERT_TRADE: &str = "INSERT INTO trades (symbol, qty, price, trader, active, note, meta) \
     VALUES (:$.symbol, :$.quantity, :$.price, :header.trader, :$.active, :$.note, :$.meta)";

fn trade(symbol: &str, quantity: i64) -> Message {
    Message::builder(
        json!({"symbol": symbol, "quantity": quantity, "price": 12.5, "active": true,
               "note": null, "meta": {"a": 1}})
        .to_string(),
    )
    .header("trader", "ann")
    .build()
}

async fn outbound_binds_json_paths_and_headers_with_their_types(kind: Kind) {
    let db = TestDb::new(kind, "bind").await;
    trades(&db).await;
    let mut out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_TRADE))
        .await
        .unwrap();
    out.ready()
        .await
        .unwrap()
        .call(trade("ACME", 10))
        .await
        .unwrap();
    let found = db
        .count(
            "SELECT COUNT(*) FROM trades WHERE symbol = 'ACME' AND qty = 10 AND price = 12.5 \
             AND trader = 'ann' AND active = true AND note IS NULL AND meta = '{\"a\":1}'",
        )
        .await;
    assert_eq!(found, 1, "{kind:?}: the row holds each value with its type");
}

const INJECTIONS: [&str; 4] = [
    "x'); DROP TABLE trades; --",
    "' OR '1'='1",
    "\\'; DELETE FROM trades; #",
    "\"; :$.symbol ?; $1 /* */",
];

async fn injection_text_in_payloads_is_stored_literally(kind: Kind) {
    let db = TestDb::new(kind, "inject").await;
    trades(&db).await;
    let mut out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_TRADE))
        .await
        .unwrap();
    for text in INJECTIONS {
        out.ready()
            .await
            .unwrap()
            .call(trade(text, 1))
            .await
            .unwrap();
    }
    let stored = db.texts("SELECT symbol FROM trades ORDER BY id").await;
    assert_eq!(stored, INJECTIONS, "{kind:?}");
}

#[tokio::test]
async fn a_binding_that_finds_no_value_is_an_error_naming_the_parameter() {
    let db = TestDb::new(Kind::Sqlite, "missing").await;
    trades(&db).await;
    let mut out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_TRADE))
        .await
        .unwrap();
    let no_quantity = Message::builder(r#"{"symbol": "ACME"}"#)
        .header("trader", "ann")
        .build();
    let e = out
        .ready()
        .await
        .unwrap()
        .call(no_quantity)
        .await
        .unwrap_err();
    assert!(matches!(e, SqlError::MissingValue { .. }), "{e}");
    assert!(e.to_string().contains("`:$.quantity`"), "{e}");
    let no_header = Message::new(trade("ACME", 1).payload().clone());
    let e = out
        .ready()
        .await
        .unwrap()
        .call(no_header)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("`:header.trader`"), "{e}");
    assert_eq!(db.count("SELECT COUNT(*) FROM trades").await, 0);
}

#[tokio::test]
async fn concurrent_calls_are_written_in_shared_transactions_and_a_bad_one_fails_alone() {
    let db = TestDb::new(Kind::Postgres, "batch").await;
    trades(&db).await;
    db.exec("ALTER TABLE trades ADD CONSTRAINT positive CHECK (qty > 0)")
        .await;
    let out = SqlOutbound::connect(
        SqlOutboundConfig::new(db.connection().max_connections(2), INSERT_TRADE).batch_size(50),
    )
    .await
    .unwrap();
    let calls = (0..200).map(|i| {
        let mut out = out.clone();
        let qty = if i == 77 { -1 } else { i + 1 };
        async move { out.ready().await?.call(trade(&format!("S{i}"), qty)).await }
    });
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.is_ok(), i != 77, "call {i}: {r:?}");
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM trades").await, 199);
    // Rows written by one transaction share its id (xmin).
    let transactions = db
        .count("SELECT COUNT(DISTINCT xmin::text) FROM trades")
        .await;
    assert!(
        transactions < 100,
        "199 rows in {transactions} transactions"
    );
}

async fn an_explicit_batch_is_written_all_or_nothing(kind: Kind) {
    let db = TestDb::new(kind, "atomic").await;
    trades(&db).await;
    let out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_TRADE))
        .await
        .unwrap();
    let mut batch: Vec<Message> = (0..10).map(|i| trade(&format!("S{i}"), i)).collect();
    out.write_batch(&batch).await.unwrap();
    assert_eq!(db.count("SELECT COUNT(*) FROM trades").await, 10);
    // The last one violates NOT NULL: none of the batch is written.
    batch.push(
        Message::builder(r#"{"symbol": null, "quantity": 1, "price": 1, "active": false, "note": "", "meta": ""}"#)
            .header("trader", "bob")
            .build(),
    );
    let e = out.write_batch(&batch).await.unwrap_err();
    assert!(matches!(e, SqlError::Execute { .. }), "{kind:?}: {e}");
    assert_eq!(
        db.count("SELECT COUNT(*) FROM trades").await,
        10,
        "{kind:?}"
    );
}

// ---- multi-row INSERT ----

/// `numbers (n, item)`: `n` unique and not negative.
async fn numbers(db: &TestDb) {
    db.exec(
        "CREATE TABLE numbers (n BIGINT NOT NULL PRIMARY KEY, item VARCHAR(200) NOT NULL, \
         CHECK (n >= 0))",
    )
    .await;
}

const INSERT_NUMBER: &str = "INSERT INTO numbers (n, item) VALUES (:$.n, :$.item)";

fn number(n: i64, item: &str) -> Message {
    Message::builder(json!({"n": n, "item": item}).to_string()).build()
}

/// `calls` concurrent calls through `out`, all queued before the writer takes its first batch.
async fn call_all(out: &SqlOutbound, messages: Vec<Message>) -> Vec<Result<(), SqlError>> {
    let calls = messages.into_iter().map(|msg| {
        let mut out = out.clone();
        async move { out.ready().await?.call(msg).await }
    });
    futures::future::join_all(calls).await
}

async fn a_bad_row_of_a_multi_row_batch_fails_alone(kind: Kind) {
    let db = TestDb::new(kind, "multibad").await;
    numbers(&db).await;
    let out =
        SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_NUMBER).batch_size(50))
            .await
            .unwrap();
    assert!(out.is_multi_row());
    let bad = 77;
    let messages = (0..120)
        .map(|i| number(if i == bad { -1 } else { i }, &format!("item {i}")))
        .collect();
    let results = call_all(&out, messages).await;
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.is_ok(), i != bad as usize, "{kind:?} call {i}: {r:?}");
    }
    assert!(
        matches!(results[bad as usize], Err(SqlError::Execute { .. })),
        "{kind:?}"
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM numbers").await,
        119,
        "{kind:?}"
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM numbers WHERE n < 0").await,
        0,
        "{kind:?}"
    );
}

async fn injection_text_is_stored_literally_through_a_multi_row_insert(kind: Kind) {
    let db = TestDb::new(kind, "multiinject").await;
    numbers(&db).await;
    let out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_NUMBER))
        .await
        .unwrap();
    assert!(out.is_multi_row());
    // One batch of all of them, through the writer; then once more, as an explicit batch.
    let messages = INJECTIONS
        .iter()
        .enumerate()
        .map(|(i, text)| number(i as i64, text))
        .collect();
    assert!(call_all(&out, messages).await.iter().all(Result::is_ok));
    let again: Vec<Message> = INJECTIONS
        .iter()
        .enumerate()
        .map(|(i, text)| number(100 + i as i64, text))
        .collect();
    out.write_batch(&again).await.unwrap();
    let stored = db.texts("SELECT item FROM numbers ORDER BY n").await;
    let expected: Vec<&str> = INJECTIONS.iter().chain(&INJECTIONS).copied().collect();
    assert_eq!(stored, expected, "{kind:?}");
}

/// More rows than one statement may bind values for: 7 values a row, 10 000 rows is 70 000
/// values, past PostgreSQL's and MariaDB's 65 535 and SQLite's 32 766.
async fn a_batch_past_the_parameter_limit_is_split_into_statements(kind: Kind) {
    let db = TestDb::new(kind, "multisplit").await;
    trades(&db).await;
    let out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_TRADE))
        .await
        .unwrap();
    assert!(out.is_multi_row());
    let batch: Vec<Message> = (0..10_000).map(|i| trade(&format!("S{i}"), i)).collect();
    out.write_batch(&batch).await.unwrap();
    assert_eq!(
        db.count("SELECT COUNT(*) FROM trades").await,
        10_000,
        "{kind:?}"
    );
    // Each message's row, once: 10 000 different quantities 0..9 999, each with its symbol.
    for distinct in [
        "SELECT COUNT(DISTINCT qty) FROM trades WHERE qty BETWEEN 0 AND 9999",
        "SELECT COUNT(DISTINCT symbol) FROM trades",
    ] {
        assert_eq!(db.count(distinct).await, 10_000, "{kind:?}: {distinct}");
    }
    assert_eq!(
        db.count("SELECT COUNT(*) FROM trades WHERE symbol = 'S1234' AND qty = 1234")
            .await,
        1,
        "{kind:?}"
    );
}

#[tokio::test]
async fn a_multi_row_batch_is_one_transaction() {
    let db = TestDb::new(Kind::Postgres, "multitx").await;
    numbers(&db).await;
    let out = SqlOutbound::connect(SqlOutboundConfig::new(db.connection(), INSERT_NUMBER))
        .await
        .unwrap();
    let batch: Vec<Message> = (0..40_000).map(|i| number(i, "x")).collect();
    out.write_batch(&batch).await.unwrap();
    // 80 000 values: two statements, one transaction (rows share its id, xmin).
    assert_eq!(db.count("SELECT COUNT(*) FROM numbers").await, 40_000);
    assert_eq!(
        db.count("SELECT COUNT(DISTINCT xmin::text) FROM numbers")
            .await,
        1
    );
}

#[tokio::test]
async fn statements_other_than_a_plain_insert_run_once_per_message() {
    let db = TestDb::new(Kind::Sqlite, "notmulti").await;
    numbers(&db).await;
    let out = SqlOutbound::connect(SqlOutboundConfig::new(
        db.connection(),
        "INSERT INTO numbers (n, item) SELECT :$.n, :$.item",
    ))
    .await
    .unwrap();
    assert!(!out.is_multi_row());
    let results = call_all(&out, (0..10).map(|i| number(i, "x")).collect()).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(db.count("SELECT COUNT(*) FROM numbers").await, 10);
}

// ---- connections ----

#[tokio::test]
async fn a_bad_password_is_never_in_the_error() {
    let secret = "s3cret-Pa55word-never-shown";
    let url = format!(
        "{}/test",
        MARIADB_SERVER.replacen("@", &format!(":{secret}@"), 1)
    );
    let url = url.replacen("${MYSQL_USER:-root}", "${MYSQL_USER:-eip_no_such_user}", 1);
    let e = SqlOutbound::connect(SqlOutboundConfig::new(
        Connection::new(url).connect_timeout(Duration::from_secs(3)),
        "SELECT 1",
    ))
    .await
    .unwrap_err();
    let shown = format!("{e} / {e:?}");
    assert!(matches!(e, SqlError::Connect { .. }), "{shown}");
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains(":***@"), "{shown}");

    let e = SqlOutbound::connect(SqlOutboundConfig::new(
        Connection::new(format!("{PG_SERVER}/test")).password_env("EIP_SQL_TEST_NO_SUCH_VARIABLE"),
        "SELECT 1",
    ))
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("`EIP_SQL_TEST_NO_SUCH_VARIABLE`"),
        "{e}"
    );
}

// ---- inbound ----

fn inbound_config(db: &TestDb, claim_timeout: Duration) -> SqlInboundConfig {
    SqlInboundConfig::new(
        db.connection(),
        "SELECT id, item, qty FROM orders WHERE done = 0 ORDER BY id",
        "UPDATE orders SET done = 1 WHERE id = :id",
    )
    .claim(db.claim(claim_timeout))
    .interval(Duration::from_millis(20))
}

fn drain(receiver: &mut eip_core::Receiver) -> Vec<Value> {
    let mut got = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        got.push(delivery.message().json_value().unwrap().clone());
        delivery.ack();
    }
    got
}

async fn inbound_sends_rows_as_json_and_marks_them_done(kind: Kind) {
    let db = TestDb::new(kind, "poll").await;
    db.orders(5).await;
    let inbound = SqlInbound::connect(inbound_config(&db, Duration::from_secs(60)))
        .await
        .unwrap();
    let channel = PointToPoint::builder("orders").capacity(3).build().unwrap();
    let mut receiver = channel.receiver();
    let mut sender = channel.sender();
    // Capacity 3: a poll claims no more than the channel has room for.
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 3);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM orders WHERE done = 1").await,
        3
    );
    let mut got = drain(&mut receiver);
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 2);
    got.extend(drain(&mut receiver));
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 0);
    let expected: Vec<Value> = (0..5)
        .map(|i| json!({"id": i + 1, "item": format!("item {i}"), "qty": i}))
        .collect();
    assert_eq!(got, expected, "{kind:?}");
    assert_eq!(
        db.count("SELECT COUNT(*) FROM orders WHERE done = 1").await,
        5
    );
}

/// Two pollers on the same table, several runs: every row taken exactly once, by one of them.
async fn competing_pollers_never_take_the_same_row(kind: Kind) {
    const ROWS: usize = 150;
    for run in 0..3 {
        let db = TestDb::new(kind, "compete").await;
        db.orders(ROWS).await;
        let mut pollers = Vec::new();
        for _ in 0..2 {
            let inbound =
                SqlInbound::connect(inbound_config(&db, Duration::from_secs(60)).max_rows(4))
                    .await
                    .unwrap();
            let channel = PointToPoint::builder("orders")
                .capacity(1000)
                .build()
                .unwrap();
            let receiver = channel.receiver();
            pollers.push((inbound.spawn(channel.sender()), receiver));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while db.count("SELECT COUNT(*) FROM orders WHERE done = 1").await < ROWS as i64 {
            assert!(
                Instant::now() < deadline,
                "{kind:?} run {run}: not all rows taken in 10 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut taken_by: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (n, (handle, mut receiver)) in pollers.into_iter().enumerate() {
            handle.shutdown().await;
            let got = drain(&mut receiver);
            assert!(
                !got.is_empty(),
                "{kind:?} run {run}: poller {n} took no row"
            );
            for row in got {
                taken_by
                    .entry(row["id"].as_i64().unwrap())
                    .or_default()
                    .push(n);
            }
        }
        assert_eq!(taken_by.len(), ROWS, "{kind:?} run {run}: every row taken");
        let twice: Vec<_> = taken_by.iter().filter(|(_, by)| by.len() > 1).collect();
        assert!(
            twice.is_empty(),
            "{kind:?} run {run}: taken twice: {twice:?}"
        );
    }
}

#[tokio::test]
async fn a_claim_left_by_a_dead_poller_is_taken_again_after_the_claim_timeout() {
    let db = TestDb::new(Kind::Sqlite, "dead").await;
    db.orders(5).await;
    // A poller claimed rows 1 and 2 and died before marking them done.
    let now = eip_core::message::now_millis();
    db.exec(&format!(
        "UPDATE orders SET claimed_by = 'dead-poller', claimed_at = {now} WHERE id IN (1, 2)"
    ))
    .await;
    let timeout = Duration::from_millis(400);
    let inbound = SqlInbound::connect(inbound_config(&db, timeout))
        .await
        .unwrap();
    let channel = PointToPoint::builder("orders")
        .capacity(100)
        .build()
        .unwrap();
    let mut receiver = channel.receiver();
    let mut sender = channel.sender();
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 3);
    let ids = |rows: Vec<Value>| {
        rows.iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(drain(&mut receiver)), [3, 4, 5]);
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 0);
    tokio::time::sleep(timeout + Duration::from_millis(100)).await;
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 2);
    assert_eq!(ids(drain(&mut receiver)), [1, 2]);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM orders WHERE done = 1").await,
        5
    );
}

#[tokio::test]
async fn rows_locked_by_a_poller_that_dies_are_free_once_its_connection_closes() {
    let db = TestDb::new(Kind::Postgres, "lockdead").await;
    db.orders(5).await;
    let Admin::Postgres(admin) = &db.admin else {
        unreachable!()
    };
    // A "poller" holds rows 1 and 2 in its transaction.
    let mut dying = admin.begin().await.unwrap();
    sqlx::query("SELECT id FROM orders WHERE id IN (1, 2) FOR UPDATE")
        .execute(&mut *dying)
        .await
        .unwrap();
    let inbound = SqlInbound::connect(inbound_config(&db, Duration::from_secs(60)))
        .await
        .unwrap();
    let channel = PointToPoint::builder("orders")
        .capacity(100)
        .build()
        .unwrap();
    let mut receiver = channel.receiver();
    let mut sender = channel.sender();
    assert_eq!(
        inbound.poll_once(&mut sender).await.unwrap(),
        3,
        "locked rows skipped"
    );
    drop(dying); // rolled back, as when its process dies
    assert_eq!(inbound.poll_once(&mut sender).await.unwrap(), 2);
    assert_eq!(drain(&mut receiver).len(), 5);
}

#[tokio::test]
async fn sqlite_without_a_claim_column_is_refused() {
    let db = TestDb::new(Kind::Sqlite, "noclaim").await;
    let e = SqlInbound::connect(inbound_config(&db, Duration::ZERO).claim(Claim::SkipLocked))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Claim::Column"), "{e}");
}

/// One test per database for each of these: `NAME::postgres`, `NAME::mariadb`, `NAME::sqlite`.
macro_rules! on_every_database {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test]
            async fn postgres() {
                super::$test(super::Kind::Postgres).await;
            }

            #[tokio::test]
            async fn mariadb() {
                super::$test(super::Kind::MariaDb).await;
            }

            #[tokio::test]
            async fn sqlite() {
                super::$test(super::Kind::Sqlite).await;
            }
        }
    )*};
}

on_every_database!(
    outbound_binds_json_paths_and_headers_with_their_types,
    injection_text_in_payloads_is_stored_literally,
    an_explicit_batch_is_written_all_or_nothing,
    a_bad_row_of_a_multi_row_batch_fails_alone,
    injection_text_is_stored_literally_through_a_multi_row_insert,
    a_batch_past_the_parameter_limit_is_split_into_statements,
    inbound_sends_rows_as_json_and_marks_them_done,
    competing_pollers_never_take_the_same_row,
);
