//! The database outbound adapter (`SqlOutbound`) against real databases: PostgreSQL and
//! MariaDB on this machine (as in CI), SQLite in a temporary file; see `support/sql_db.rs`
//! for how each test gets a database of its own.

#![cfg(feature = "sql")]

mod support {
    pub mod sql_db;
}

use std::time::Duration;

use eip_adapters::sql::{Connection, SqlError, SqlOutbound, SqlOutboundConfig};
use eip_core::Message;
use serde_json::json;
use tower::{Service, ServiceExt};

use support::sql_db::{Kind, MARIADB_SERVER, PG_SERVER, TestDb};

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

on_every_database!(
    outbound_binds_json_paths_and_headers_with_their_types,
    injection_text_in_payloads_is_stored_literally,
    an_explicit_batch_is_written_all_or_nothing,
    a_bad_row_of_a_multi_row_batch_fails_alone,
    injection_text_is_stored_literally_through_a_multi_row_insert,
    a_batch_past_the_parameter_limit_is_split_into_statements,
);
