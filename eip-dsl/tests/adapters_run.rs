//! Flows with adapters, running: files in and out through a flow file; a missing environment
//! variable refused at start, by name; `eip route` through an inbound adapter; and the orders
//! example end to end (`eip run`, HTTP posts, rows in a PostgreSQL database of the test's own,
//! files in a directory, the invalid order printed).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_dsl::compile::{Flow, Output, RunningFlow, compile};
use eip_dsl::load::load_str;

mod support {
    pub mod postgres;
    pub mod scratch;
}

use support::postgres::TestDatabase;
use support::scratch::Scratch;

/// The flow `text` (paths relative to `dir`), compiled.
fn compiled(text: &str, dir: &Path) -> Flow {
    let plan = load_str(text, "flow.yaml", dir).unwrap_or_else(|e| panic!("{}", e.render()));
    compile(&plan).expect("the flow compiles")
}

/// `flow` running with its adapters, `output` taking what reaches its outputs.
async fn run(flow: &Flow, output: Output) -> RunningFlow {
    let adapters = flow.connect_adapters().await.expect("the adapters connect");
    let mut running = flow.start(output);
    running.attach(adapters);
    running
}

/// The files of `dir`, sorted; hidden ones (a writer's temporary files) left out.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Waits up to 10 s for `done` to hold.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Puts a whole file into a watched directory at once: written under a dot name (which the
/// adapter skips), then renamed into place, so the adapter never takes it half written.
fn place(path: &std::path::Path, contents: impl AsRef<[u8]>) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name");
    let partial = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&partial, contents).expect("a file written");
    std::fs::rename(&partial, path).expect("a file put in place");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_move_from_a_watched_directory_through_a_router_to_two_directories() {
    let scratch = Scratch::new("files");
    std::fs::create_dir_all(scratch.0.join("in")).expect("the inbox");
    let flow = "
channels:
  incoming: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
routes:
  - from: incoming
    choice:
      - {when: '$.n >= 10', to: big}
    otherwise: small
adapters:
  inbox: {kind: file-in, to: incoming, dir: in, glob: '*.json', poll-interval: 50ms}
  big-out: {kind: file-out, from: big, dir: out/big, name: '{header.file-name}'}
  small-out: {kind: file-out, from: small, dir: out/small, append: all.jsonl}
";
    let flow = compiled(flow, &scratch.0);
    let running = run(
        &flow,
        Arc::new(|channel: &str, _: &eip_core::Message| {
            panic!("nothing is an output, yet {channel} printed")
        }),
    )
    .await;
    for n in [1, 5, 10, 20, 30] {
        let name = format!("{n:02}.json");
        place(&scratch.0.join("in").join(name), format!(r#"{{"n":{n}}}"#));
    }
    let big = scratch.0.join("out/big");
    let small = scratch.0.join("out/small/all.jsonl");
    eventually("three big files", || files_in(&big).len() == 3).await;
    eventually("two small lines", || {
        std::fs::read_to_string(&small).is_ok_and(|t| t.lines().count() == 2)
    })
    .await;
    assert_eq!(files_in(&big), ["10.json", "20.json", "30.json"]);
    assert_eq!(
        std::fs::read_to_string(big.join("20.json")).expect("a big file"),
        r#"{"n":20}"#
    );
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    assert!(
        files_in(&scratch.0.join("in")).is_empty(),
        "every file taken"
    );
}

#[tokio::test]
async fn a_missing_environment_variable_is_named_when_the_adapters_start() {
    let scratch = Scratch::new("env");
    let flow = "
channels:
  orders: {kind: point-to-point}
adapters:
  api: {kind: http-in, to: orders, listen: '127.0.0.1:0', path: /orders,
        bearer-token-env: EIP_TEST_TOKEN_THAT_IS_NOT_SET}
";
    let flow = compiled(flow, &scratch.0);
    let error = flow
        .connect_adapters()
        .await
        .expect_err("the token variable is not set");
    let text = error.to_string();
    assert!(text.starts_with("adapter `api`: "), "{text}");
    assert!(text.contains("EIP_TEST_TOKEN_THAT_IS_NOT_SET"), "{text}");

    let flow = "
channels:
  orders: {kind: point-to-point}
adapters:
  db: {kind: sql-out, from: orders, url: 'sqlite:${EIP_TEST_DB_THAT_IS_NOT_SET}',
       statement: 'INSERT INTO t (a) VALUES (:$.a)'}
";
    let flow = compiled(flow, &scratch.0);
    let error = flow
        .connect_adapters()
        .await
        .expect_err("the URL's variable is not set");
    let text = error.to_string();
    assert!(text.starts_with("adapter `db`: "), "{text}");
    assert!(text.contains("EIP_TEST_DB_THAT_IS_NOT_SET"), "{text}");
}

fn eip() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eip"))
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows")
}

#[test]
fn eip_route_follows_a_message_from_an_inbound_adapter_to_the_outbound_ones() {
    let mut child = eip()
        .args(["route", examples().join("orders.yaml").to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("eip route starts");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        for line in [
            r#"{"to": "orders-in", "payload": {"sku": "A", "quantity": 500, "customer": "c"}}"#,
            r#"{"to": "orders-in", "payload": {"sku": "A", "quantity": 5, "customer": "c"}}"#,
            r#"{"to": "orders-in", "payload": {"sku": "A"}}"#,
        ] {
            writeln!(stdin, "{line}").expect("a line written");
        }
    }
    let output = child.wait_with_output().expect("eip route ends");
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON answer"))
        .collect();
    assert_eq!(
        lines[0]["stored"],
        serde_json::json!(["orders", "orders.bulk"])
    );
    assert_eq!(lines[0]["adapters"], serde_json::json!(["bulk-orders-db"]));
    assert_eq!(
        lines[1]["adapters"],
        serde_json::json!(["regular-orders-dir"])
    );
    assert_eq!(lines[2]["invalid"]["channel"], "orders.invalid");
    assert!(lines[2].get("adapters").is_none(), "{}", lines[2]);
}

/// `eip run` as a child, killed (SIGKILL) when dropped if it has not ended.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orders_example_takes_http_posts_into_postgresql_and_a_directory() {
    TestDatabase::create("eip_orders")
        .await
        .run(|name, _, pool| async move {
            // No table yet: the example's `setup` makes it.
            run_orders_example(&name, &pool)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        })
        .await;
}

async fn run_orders_example(database: &str, db: &sqlx::PgPool) -> Result<(), String> {
    // The example as written, but on a free port and in a scratch directory.
    let scratch = Scratch::new("orders");
    let text =
        std::fs::read_to_string(examples().join("orders.yaml")).map_err(|e| e.to_string())?;
    let text = text.replace("listen: 127.0.0.1:8080", "listen: 127.0.0.1:0");
    std::fs::write(scratch.0.join("orders.yaml"), text).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(scratch.0.join("schemas")).map_err(|e| e.to_string())?;
    std::fs::copy(
        examples().join("schemas/order.json"),
        scratch.0.join("schemas/order.json"),
    )
    .map_err(|e| e.to_string())?;
    let mut child = Running(
        eip()
            .args([
                "run",
                "orders.yaml",
                "--data-dir",
                "data",
                "--stats-interval",
                "0",
            ])
            .current_dir(&scratch.0)
            .env("ORDERS_DB", database)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("eip run: {e}"))?,
    );
    // The address the HTTP adapter took, from eip's start-up lines.
    let stderr = child.0.stderr.take().ok_or("stderr")?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| format!("eip run said no address:\n{}", seen.join("\n")))?;
        if let Some(rest) = line.strip_prefix("[eip] adapter orders-in (http-in): POST ") {
            break rest.split(' ').next().unwrap_or_default().to_owned();
        }
        seen.push(line);
    };
    let client = reqwest::Client::new();
    let post = |body: &'static str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let mut ids = Vec::new();
    for body in [
        r#"{"sku": "A-1", "quantity": 3, "customer": "acme"}"#,
        r#"{"sku": "B-2", "quantity": 500, "customer": "o'hara; DROP TABLE bulk_orders; --"}"#,
        r#"{"sku": "C-3", "quantity": 7, "customer": "initech"}"#,
        r#"{"sku": "D-4"}"#,
    ] {
        let answer = post(body).await.map_err(|e| format!("POST: {e}"))?;
        if answer.status() != 202 {
            return Err(format!("POST answered {}", answer.status()));
        }
        let body = answer.bytes().await.map_err(|e| e.to_string())?;
        let json: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        ids.push(json["id"].as_str().unwrap_or_default().to_owned());
    }
    let out = scratch.0.join("orders-out");
    eventually("two order files", || files_in(&out).len() == 2).await;
    assert_eq!(
        files_in(&out),
        [format!("{}.json", ids[0]), format!("{}.json", ids[2])]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows: Vec<(String, i32, String)> = loop {
        let rows = sqlx::query_as("SELECT sku, quantity, customer FROM bulk_orders")
            .fetch_all(db)
            .await
            .map_err(|e| e.to_string())?;
        if !rows.is_empty() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        rows,
        [(
            "B-2".to_owned(),
            500,
            "o'hara; DROP TABLE bulk_orders; --".to_owned()
        )],
        "the bulk order, its text stored as written"
    );
    // SIGINT: eip drains and exits; the invalid order was printed on its way out.
    let stopped = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    assert!(stopped.success());
    let mut stdout = String::new();
    if let Some(mut out) = child.0.stdout.take() {
        use std::io::Read;
        out.read_to_string(&mut stdout).map_err(|e| e.to_string())?;
    }
    let status = child.0.wait().map_err(|e| e.to_string())?;
    assert!(status.success(), "eip run exited with {status}");
    let printed: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{e}: {l}")))
        .collect::<Result<_, _>>()?;
    assert_eq!(printed.len(), 1, "{stdout}");
    assert_eq!(printed[0]["channel"], "orders.invalid");
    assert_eq!(printed[0]["id"], ids[3].as_str());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_adapter_s_timeout_fails_each_attempt_and_its_redelivery_policy_gives_up() {
    // A server that takes connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a listener");
    let address = listener.local_addr().expect("its address");
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting = accepted.clone();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            counting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(socket);
        }
    });
    let scratch = Scratch::new("timeout");
    let flow = format!(
        "
channels:
  shipments: {{kind: point-to-point}}
adapters:
  notify:
    kind: http-out
    from: shipments
    url: 'http://{address}/shipments/{{id}}'
    timeout: 100ms
    redelivery: {{max-attempts: 3, initial-backoff: 10ms}}
"
    );
    let flow = compiled(&flow, &scratch.0);
    let dead = Arc::new(std::sync::Mutex::new(Vec::<eip_core::Message>::new()));
    let seen = dead.clone();
    let output: Output = Arc::new(move |channel: &str, msg: &eip_core::Message| {
        assert_eq!(channel, "dead-letters");
        seen.lock().expect("not poisoned").push(msg.clone());
    });
    let running = run(&flow, output).await;
    let started = Instant::now();
    flow.bus()
        .publish("shipments", eip_core::Message::new(b"{}".to_vec()))
        .await
        .expect("sent");
    eventually("the dead letter", || {
        !dead.lock().expect("not poisoned").is_empty()
    })
    .await;
    let elapsed = started.elapsed();
    let death = dead.lock().expect("not poisoned")[0]
        .death()
        .expect("a readable death header")
        .expect("a death record");
    assert_eq!(death.reason.to_string(), "max-redeliveries");
    assert!(
        death.error.as_deref().unwrap_or("").contains("timed out"),
        "{death:?}"
    );
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "one connection per attempt"
    );
    assert!(
        elapsed >= Duration::from_millis(300),
        "three attempts of 100 ms: {elapsed:?}"
    );
    running.stop(Duration::from_secs(1)).await;
    silent.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_adapter_s_rate_limit_spaces_its_calls() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A server answering 200 to each request, one request per connection.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a listener");
    let address = listener.local_addr().expect("its address");
    let answered = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let times = answered.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let times = times.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                times.lock().expect("not poisoned").push(Instant::now());
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    let scratch = Scratch::new("rate");
    let flow = format!(
        "
channels:
  shipments: {{kind: point-to-point}}
adapters:
  notify:
    kind: http-out
    from: shipments
    url: 'http://{address}/shipments'
    concurrency: 4
    rate-limit: {{requests: 2, per: 200ms}}
"
    );
    let flow = compiled(&flow, &scratch.0);
    let output: Output =
        Arc::new(|channel: &str, _: &eip_core::Message| panic!("nothing reaches {channel}"));
    let running = run(&flow, output).await;
    // From before the first send: a late first arrival (a connection set up on a loaded
    // machine) must not shorten what is measured.
    let start = Instant::now();
    for _ in 0..6 {
        flow.bus()
            .publish("shipments", eip_core::Message::new(b"{}".to_vec()))
            .await
            .expect("sent");
    }
    eventually("six answers", || {
        answered.lock().expect("not poisoned").len() == 6
    })
    .await;
    let times = answered.lock().expect("not poisoned").clone();
    let spread = times[5].duration_since(start);
    assert!(
        spread >= Duration::from_millis(380),
        "two calls per 200 ms: six take two periods at least, took {spread:?}"
    );
    let left = running.stop(Duration::from_secs(2)).await;
    assert!(left.is_empty(), "{left:?}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_lines_file_s_malformed_line_goes_to_the_invalid_message_channel_with_its_reason() {
    let scratch = Scratch::new("lines");
    std::fs::create_dir_all(scratch.0.join("in")).expect("the inbox");
    std::fs::write(
        scratch.0.join("reading.json"),
        r#"{"type": "object", "required": ["celsius"]}"#,
    )
    .expect("the schema");
    let flow = compiled(
        "
channels:
  readings: {kind: point-to-point, datatype: reading.json, invalid: readings.invalid}
  readings.invalid: {kind: point-to-point}
adapters:
  inbox: {kind: file-in, to: readings, dir: in, mode: json-lines, poll-interval: 50ms}
",
        &scratch.0,
    );
    let seen = Arc::new(std::sync::Mutex::new(
        Vec::<(String, eip_core::Message)>::new(),
    ));
    let outputs = seen.clone();
    let output: Output = Arc::new(move |channel: &str, msg: &eip_core::Message| {
        outputs
            .lock()
            .expect("not poisoned")
            .push((channel.to_owned(), msg.clone()));
    });
    let running = run(&flow, output).await;
    place(
        &scratch.0.join("in/day.jsonl"),
        "{\"celsius\": 21}\n{\"celsius\": \nnot json at all\n{\"kelvin\": 300}\n",
    );
    eventually("four lines out", || {
        seen.lock().expect("not poisoned").len() == 4
    })
    .await;
    let seen = seen.lock().expect("not poisoned").clone();
    let channels: Vec<&str> = {
        let mut c: Vec<&str> = seen.iter().map(|(c, _)| c.as_str()).collect();
        c.sort_unstable();
        c
    };
    assert_eq!(
        channels,
        [
            "readings",
            "readings.invalid",
            "readings.invalid",
            "readings.invalid"
        ]
    );
    for (channel, msg) in &seen {
        if channel == "readings.invalid" {
            let death = msg
                .death()
                .expect("a readable death header")
                .expect("a death record");
            assert_eq!(death.reason.to_string(), "invalid");
            assert!(death.error.is_some_and(|e| !e.is_empty()), "a reason");
        }
    }
    let left = running.stop(Duration::from_secs(2)).await;
    assert!(left.is_empty(), "{left:?}");
}
