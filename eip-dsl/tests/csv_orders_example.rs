//! The CSV orders example (`examples/flows/csv-orders.yaml`) under `eip run`, against
//! PostgreSQL and RabbitMQ on this machine: the example's input file is dropped into its
//! directory; the good rows reach the database and the exchange (a queue the test binds),
//! the bad ones the rejected file with their line and reason, and the file is moved to `.done`.
//! The exchange's name is made unique to the run, and the queue and exchange are removed
//! afterwards, whatever the outcome.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::FutureExt;
use lapin::options::{
    BasicGetOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use serde_json::Value;
use tokio::time::Instant;

mod support {
    pub mod postgres;
    pub mod scratch;
}

use support::postgres::TestDatabase;
use support::scratch::Scratch;

/// How long the run may take, start to clean-up.
const LIMIT: Duration = Duration::from_secs(60);

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows")
}

fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// `eip run` as a child, killed (SIGKILL) when dropped if it has not ended.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `done` gives something, up to the deadline.
async fn eventually<T>(
    what: &str,
    deadline: Instant,
    mut done: impl AsyncFnMut() -> Option<T>,
) -> T {
    loop {
        if let Some(found) = done().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_files_become_rows_messages_and_rejected_lines() {
    let exchange = format!("csv-orders-test-{}", std::process::id());
    let connection =
        lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
            .await
            .unwrap_or_else(|e| panic!("RabbitMQ at {} is needed: {e}", amqp_url()));
    let queue = format!("{exchange}.check");
    let outcome = std::panic::AssertUnwindSafe(TestDatabase::create("eip_csv_orders").await.run(
        |name, _, pool| {
            let (connection, exchange, queue) = (&connection, exchange.clone(), queue.clone());
            async move {
                tokio::time::timeout(
                    LIMIT,
                    run_example(&name, &pool, connection, &exchange, &queue),
                )
                .await
                .expect("the example ran within its limit");
            }
        },
    ))
    .catch_unwind()
    .await;
    let channel = connection.create_channel().await.expect("an AMQP channel");
    let _ = channel
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await;
    let _ = channel
        .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
        .await;
    let _ = connection.close(0, "done".into()).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn run_example(
    database: &str,
    db: &sqlx::PgPool,
    connection: &lapin::Connection,
    exchange: &str,
    queue: &str,
) {
    let scratch = Scratch::new("csv-orders");
    let text = std::fs::read_to_string(examples().join("csv-orders.yaml")).unwrap();
    let text = text.replace("exchange: csv-orders", &format!("exchange: {exchange}"));
    std::fs::write(scratch.0.join("csv-orders.yaml"), text).unwrap();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_eip"))
            .args(["run", "csv-orders.yaml", "--stats-interval", "0"])
            .current_dir(&scratch.0)
            .env("ORDERS_DB", database)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("eip run starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    // The flow declares the exchange when it starts; the test's queue is bound to it then. A
    // bind to an exchange not there yet closes its AMQP channel: each try takes a new one.
    let amqp = eventually("the exchange", deadline, async || {
        let amqp = connection.create_channel().await.ok()?;
        amqp.queue_declare(
            queue.into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .ok()?;
        amqp.queue_bind(
            queue.into(),
            exchange.into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .ok()?;
        Some(amqp)
    })
    .await;
    let input = scratch.0.join("csv-orders-in");
    std::fs::create_dir_all(&input).unwrap();
    let written = input.join("orders.csv.part");
    std::fs::copy(examples().join("csv-orders.input.csv"), &written).unwrap();
    std::fs::rename(&written, input.join("orders.csv")).unwrap();

    let rows: Vec<(i64, String, i32, String)> = eventually("three rows", deadline, async || {
        let rows: Vec<(i64, String, i32, String)> =
            sqlx::query_as("SELECT id, sku, quantity, customer FROM csv_orders ORDER BY id")
                .fetch_all(db)
                .await
                .ok()?;
        (rows.len() == 3).then_some(rows)
    })
    .await;
    assert_eq!(
        rows,
        [
            (1, "A-1".into(), 3, "acme".into()),
            (2, "B-2".into(), 500, "o'hara, ltd".into()),
            (5, "E-5".into(), 7, "umbrella\ncorp".into()),
        ]
    );
    let mut published = Vec::new();
    while published.len() < 3 {
        let got = eventually("a published order", deadline, async || {
            amqp.basic_get(queue.into(), BasicGetOptions { no_ack: true })
                .await
                .ok()?
        })
        .await;
        let order: Value = serde_json::from_slice(&got.delivery.data).unwrap();
        published.push(order["id"].as_i64().unwrap());
    }
    published.sort_unstable();
    assert_eq!(published, [1, 2, 5]);

    let rejected_file = scratch.0.join("csv-orders-rejected/rejected.jsonl");
    let rejected: Vec<Value> = eventually("two rejected rows", deadline, async || {
        let text = std::fs::read_to_string(&rejected_file).ok()?;
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (lines.len() == 2).then_some(lines)
    })
    .await;
    let by_line = |n: u64| {
        rejected
            .iter()
            .find(|r| r["headers"]["line"] == n)
            .unwrap_or_else(|| panic!("no rejected line {n}: {rejected:?}"))
    };
    let short = by_line(4);
    assert_eq!(short["death"]["reason"], "invalid");
    assert_eq!(
        short["death"]["error"],
        "line 4: expected 4 fields, found 2"
    );
    assert_eq!(short["headers"]["file-name"], "orders.csv");
    assert_eq!(short["payload"], "3,C-3", "the row as it was read");
    let many = by_line(5);
    assert_eq!(many["death"]["reason"], "invalid");
    assert!(
        many["death"]["error"].as_str().unwrap().contains("many"),
        "the jq error names the value: {many}"
    );
    assert_eq!(many["payload"]["quantity"], "many");

    eventually("the file moved to .done", deadline, async || {
        input.join(".done/orders.csv").exists().then_some(())
    })
    .await;

    let stopped = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = child.0.wait().unwrap();
    let mut stderr = String::new();
    if let Some(mut err) = child.0.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    assert!(status.success(), "eip run exited with {status}:\n{stderr}");
}
