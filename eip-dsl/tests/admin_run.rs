//! `eip run --admin`: the example flow `examples/flows/admin.yaml` run by the `eip` binary
//! with its admin server on a free port, asked over HTTP for its channels and metrics as
//! orders come in on standard input.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support {
    pub mod admin;
    pub mod scratch;
}

use support::admin::metric;
use support::scratch::Scratch;

/// `eip run` of the example with `--admin 127.0.0.1:0`, its input a pipe.
struct Eip {
    child: Child,
    base: String,
}

impl Drop for Eip {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/admin.yaml")
}

/// Starts it and reads, from its standard error, the address its admin server took.
fn start(data: &Scratch) -> Eip {
    start_with(data, None).0
}

/// The same, with `token` as `EIP_ADMIN_TOKEN` if given; also what it printed before the
/// admin server's address.
fn start_with(data: &Scratch, token: Option<&str>) -> (Eip, Vec<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_eip"));
    command.env_remove("EIP_ADMIN_TOKEN");
    if let Some(token) = token {
        command.env("EIP_ADMIN_TOKEN", token);
    }
    let access = if token.is_some() {
        " (token required)"
    } else {
        " (loopback only)"
    };
    let mut child = command
        .arg("run")
        .arg(example())
        .args([
            "--admin",
            "127.0.0.1:0",
            "--quiet",
            "--input",
            "-",
            "--data-dir",
        ])
        .arg(&data.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip runs");
    let stderr = child.stderr.take().expect("its standard error");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let base = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("eip said no admin address: {seen:?}");
        };
        if let Some(rest) = line.strip_prefix("[eip] admin: ") {
            assert!(rest.ends_with(access), "{line}");
            break rest.trim_end_matches(access).to_owned();
        }
        seen.push(line);
    };
    // Keep reading its standard error so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Eip { child, base }, seen)
}

async fn get(client: &reqwest::Client, url: &str) -> String {
    let response = client
        .get(url)
        .send()
        .await
        .expect("the admin server answers");
    assert_eq!(response.status().as_u16(), 200, "{url}");
    response.text().await.expect("a body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eip_run_serves_channels_and_metrics_that_move_with_the_input() {
    let data = Scratch::new("admin-run");
    let mut eip = start(&data);
    let client = reqwest::Client::new();
    let channels: serde_json::Value =
        serde_json::from_str(&get(&client, &format!("{}/api/channels", eip.base)).await)
            .expect("JSON");
    let orders = channels
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "orders"))
        .cloned()
        .expect("orders is listed");
    assert_eq!(orders["store"], "durable");
    assert_eq!(orders["counters"]["in"], 0);

    let mut input = eip.child.stdin.take().expect("its input");
    for total in [250, 40, 7] {
        writeln!(
            input,
            r#"{{"to": "orders", "payload": {{"total": {total}}}}}"#
        )
        .expect("written");
    }
    input.flush().expect("flushed");

    let deadline = Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let text = get(&client, &format!("{}/metrics", eip.base)).await;
        if metric(&text, "eip_channel_in_total{channel=\"audit\"}") == Some(3.0) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the counters did not move:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        metric(&metrics, "eip_channel_out_total{channel=\"orders\"}"),
        Some(3.0)
    );
    assert_eq!(
        metric(&metrics, "eip_channel_in_total{channel=\"big\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&metrics, "eip_channel_in_total{channel=\"small\"}"),
        Some(2.0)
    );
    assert_eq!(
        metric(&metrics, "eip_route_handled_total{route=\"sort\"}"),
        Some(3.0)
    );
    assert!(
        metric(&metrics, "eip_store_commits_total").is_some_and(|n| n > 0.0),
        "the durable store's commits:\n{metrics}"
    );
    assert_eq!(
        metric(&metrics, "eip_store_commit_seconds_count"),
        metric(&metrics, "eip_store_commits_total"),
        "every commit timed:\n{metrics}"
    );
    assert_eq!(
        metric(&metrics, "eip_store_commit_seconds_bucket{le=\"+Inf\"}"),
        metric(&metrics, "eip_store_commits_total"),
    );
    let orders: serde_json::Value =
        serde_json::from_str(&get(&client, &format!("{}/api/channels/orders", eip.base)).await)
            .expect("JSON");
    assert_eq!(orders["counters"]["in"], 3);

    drop(input);
    let status = eip.child.wait().expect("eip ends once its input does");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_added_over_http_is_applied_again_after_a_restart() {
    let data = Scratch::new("admin-run-changes");
    let client = reqwest::Client::new();
    let (eip, _) = start_with(&data, Some("s3cret"));
    let made = client
        .post(format!("{}/api/joins", eip.base))
        .bearer_auth("s3cret")
        .header("content-type", "application/json")
        .body(r#"{"from": "shipped", "to": "small", "hops": 0}"#)
        .send()
        .await
        .expect("the admin server answers");
    assert_eq!(made.status().as_u16(), 201);
    drop(eip);

    let (eip, said) = start_with(&data, Some("s3cret"));
    assert!(
        said.iter()
            .any(|l| l == "[eip] runtime join 1 (shipped -> small (hops 0)) re-applied"),
        "{said:?}"
    );
    let changes: serde_json::Value = serde_json::from_str(
        &client
            .get(format!("{}/api/changes", eip.base))
            .bearer_auth("s3cret")
            .send()
            .await
            .expect("an answer")
            .text()
            .await
            .expect("a body"),
    )
    .expect("JSON");
    assert_eq!(changes["kept"], true);
    assert_eq!(changes["joins"][0]["to"], "small");
}

/// `eip ARGS --admin URL` with the token in its environment: exit success, stdout, stderr.
fn eip_cli(base: &str, token: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_eip"))
        .args(args)
        .args(["--admin", base])
        .env("EIP_ADMIN_TOKEN", token)
        .output()
        .expect("eip runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_eip_commands_ask_the_running_flow_s_admin_server() {
    let data = Scratch::new("admin-cli");
    let (eip, _) = start_with(&data, Some("s3cret"));

    let (ok, out, err) = eip_cli(
        &eip.base,
        "s3cret",
        &["joins", "add", "shipped", "small", "--hops", "0"],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "join 1 added: shipped -> small\n");

    let (ok, out, _) = eip_cli(&eip.base, "s3cret", &["joins", "list"]);
    assert!(ok);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("from") && lines[0].contains("filter"),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("shipped") && l.contains("small")),
        "{out}"
    );

    let (ok, out, err) = eip_cli(&eip.base, "s3cret", &["joins", "add", "shipped", "smal"]);
    assert!(!ok, "{out}");
    assert!(
        err.starts_with("error: 400: ") && err.contains("did you mean `small`?"),
        "{err}"
    );

    let (ok, out, _) = eip_cli(&eip.base, "s3cret", &["channels", "--json"]);
    assert!(ok);
    let channels: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(channels[0]["name"], "orders");
    let (ok, out, _) = eip_cli(&eip.base, "s3cret", &["channels"]);
    assert!(ok);
    assert!(
        out.lines()
            .next()
            .unwrap_or_default()
            .starts_with("channel  "),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("orders ") && l.contains("durable")),
        "{out}"
    );

    let (ok, out, _) = eip_cli(&eip.base, "s3cret", &["purge", "audit"]);
    assert!(ok);
    assert_eq!(out, "audit: 0 waiting messages purged\n");
    let (ok, out, _) = eip_cli(&eip.base, "s3cret", &["joins", "remove", "1"]);
    assert!(ok);
    assert_eq!(out, "join 1 removed: shipped -> small\n");

    let (ok, _, err) = eip_cli(&eip.base, "wrong", &["channels"]);
    assert!(!ok);
    assert_eq!(err, "error: 401: the token is not the admin server's\n");
}
