//! The database inbound adapter (`SqlInbound`: polling, claims, competing pollers) against
//! real databases: PostgreSQL and MariaDB on this machine (as in CI), SQLite in a temporary
//! file; see `support/sql_db.rs` for how each test gets a database of its own.

#![cfg(feature = "sql")]

mod support {
    pub mod sql_db;
}

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use eip_adapters::sql::{Claim, SqlInbound, SqlInboundConfig};
use eip_core::channel::PointToPoint;
use serde_json::{Value, json};

use support::sql_db::{Admin, Kind, TestDb};

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

on_every_database!(
    inbound_sends_rows_as_json_and_marks_them_done,
    competing_pollers_never_take_the_same_row,
);
