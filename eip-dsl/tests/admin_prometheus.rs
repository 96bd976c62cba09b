//! A real Prometheus server scraping the admin server's `/metrics`: the `prometheus` binary
//! of Debian's package (the one `.ci/run` installs for promtool), started on 127.0.0.1 with a
//! scrape configuration naming the admin server and its bearer token, scraping every 100 ms;
//! the test then asks Prometheus' query API for a channel's counter and sees the value the flow
//! counted. Prometheus is stopped (SIGKILL, then waited for) whatever the outcome.

mod support {
    pub mod admin;
    pub mod scratch;
}

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::admin::{FLOW, serve};
use support::scratch::Scratch;

const TOKEN: &str = "prometheus-scrape-token";

/// Prometheus, killed and waited for when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1 (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// What Prometheus answers for the instant query `query`: the first result's value.
async fn query(client: &reqwest::Client, base: &str, query: &str) -> Option<f64> {
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let answer = client
        .get(format!("{base}/api/v1/query?query={encoded}"))
        .send()
        .await
        .ok()?;
    let body: Value = serde_json::from_str(&answer.text().await.ok()?).ok()?;
    body["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_server_scrapes_the_flows_counters() {
    let served = serve(FLOW, Some(TOKEN)).await;
    for total in [150, 20, 30] {
        served.send("orders", json!({"total": total})).await;
    }
    let dir = Scratch::new("prometheus");
    let target = served.base.trim_start_matches("http://");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, TOKEN).expect("the token file");
    let config = format!(
        "global:
  scrape_interval: 100ms
  scrape_timeout: 90ms
scrape_configs:
  - job_name: eip
    authorization:
      credentials_file: '{}'
    static_configs:
      - targets: ['{target}']
",
        token_file.display()
    );
    let config_file = dir.0.join("prometheus.yml");
    std::fs::write(&config_file, config).expect("the configuration");
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config_file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.0.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "the prometheus server could not be started ({e}): install Debian's \
                 `prometheus` package (`apt-get install -y prometheus`)"
            )
        });
    let _prometheus = Server(child);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let series = r#"eip_channel_in_total{job="eip",channel="orders"}"#;
    loop {
        if query(&client, &base, series).await == Some(3.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus did not see {series} = 3 within 60 s: {:?}",
            query(&client, &base, series).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let up = query(&client, &base, r#"up{job="eip"}"#).await;
    assert_eq!(up, Some(1.0), "the target is up");
    served.stop().await;
}
