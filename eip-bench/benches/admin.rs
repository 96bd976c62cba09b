//! The admin server's answer time for a flow of 1,000 channels (issue 18): what an operator's
//! `eip channels`, the console's poll and a Prometheus scrape wait for; and what a runtime
//! change costs.
//!
//! The flow has 1,000 point-to-point channels, 500 routes (each from one channel to the next),
//! two publish-subscribe channels for joins and the dead letter channel; a message went
//! through every route first, so every counter has a value to show. The admin server runs in
//! the process on 127.0.0.1 (a free port, with a token, as changes need one) and one HTTP/1.1
//! client asks it, one request at a time on one kept-alive connection, as a script or the
//! console does.
//!
//! Each line compares one endpoint's answer with `GET /health/live` on the same server and
//! connection: the baseline is the cost of an HTTP round trip through the same stack, so the
//! ratio is what reading and writing the flow's 1,000 channels adds. Rounds alternate the two
//! and each side's figure is the median of its rounds; the line reads
//! `compare: admin GET PATH (1000 channels): eip X ns/msg, baseline Y ns/msg (GET /health/live,
//! same server), ratio R`, where a "msg" is one answer, then the answer's size.
//!
//! A runtime change is a join added (`POST /api/joins`, checked as a flow file's join, then
//! created on the bus) and removed again (`DELETE /api/joins/{id}`), one "msg" being the pair,
//! against two `GET /health/live`: on the flow above (changes kept in memory), and on the same
//! flow with a durable channel (changes kept in the data directory: each is on disk, fsync
//! included, before it is answered).
//!
//! Run: `cargo bench -p eip-bench --bench admin`; `cargo test -p eip-bench --benches` runs a
//! small version (20 channels, a few requests) that checks every answer.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_bench::{TempDir, measuring, median, print_compare, runtime};
use eip_core::message::Message;
use eip_dsl::admin::{AdminOptions, AdminServer};
use eip_dsl::compile::{Flow, RunningFlow, StoreOptions, compile, compile_with};
use eip_dsl::control::RuntimeChanges;
use eip_dsl::load::load_str;

/// Rounds of each comparison.
const ROUNDS: usize = 9;
const TOKEN: &str = "admin-bench";

/// The flow file of `channels` channels, every even one routed to the next, and two
/// publish-subscribe channels (`events`, the first one durable when `durable`).
fn flow(channels: usize, durable: bool) -> String {
    let mut yaml = String::from("channels:\n");
    for i in 0..channels {
        yaml.push_str(&format!("  c{i:04}: {{kind: point-to-point}}\n"));
    }
    yaml.push_str(&format!(
        "  events: {{kind: publish-subscribe, durable: {durable}}}\n  audit: {{kind: publish-subscribe}}\n"
    ));
    yaml.push_str("routes:\n");
    for i in (0..channels).step_by(2) {
        yaml.push_str(&format!(
            "  - name: r{i:04}\n    from: c{i:04}\n    to: c{:04}\n",
            i + 1
        ));
    }
    yaml
}

/// A flow compiled (on `data` when given), started, its admin server listening.
struct Served {
    flow: Flow,
    running: RunningFlow,
    server: AdminServer,
    base: String,
    client: reqwest::Client,
}

impl Served {
    async fn start(channels: usize, data: Option<&Path>) -> Served {
        let text = flow(channels, data.is_some());
        let plan = load_str(&text, "admin-bench.yaml", ".".as_ref())
            .unwrap_or_else(|e| panic!("{}", e.render()));
        let flow = match data {
            Some(dir) => compile_with(
                &plan,
                &StoreOptions {
                    data_dir: dir.to_owned(),
                    max_bytes: None,
                },
            ),
            None => compile(&plan),
        }
        .expect("the flow compiles");
        let (changes, _) = RuntimeChanges::open(flow.view())
            .await
            .expect("the runtime changes open");
        let options = AdminOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            token: Some(TOKEN.to_owned()),
        };
        let server = AdminServer::start(options, flow.view(), &plan, Arc::new(changes))
            .await
            .expect("the admin server starts");
        let running = flow.start(Arc::new(|_: &str, _: &Message| {}));
        for i in (0..channels).step_by(2) {
            let msg = Message::new(format!("{{\"n\": {i}}}"));
            flow.bus()
                .send(&format!("c{i:04}"), msg)
                .await
                .expect("the channel takes it");
        }
        Served {
            base: format!("http://{}", server.local_addr()),
            flow,
            running,
            server,
            client: reqwest::Client::new(),
        }
    }

    /// Sends `request` (with the token): the body, after checking the status is a success.
    async fn ask(&self, request: reqwest::RequestBuilder) -> bytes::Bytes {
        let answer = request
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("the server answers");
        let status = answer.status();
        let body = answer.bytes().await.expect("a body");
        assert!(status.is_success(), "{status}: {body:?}");
        body
    }

    async fn get(&self, path: &str) -> usize {
        let url = format!("{}{path}", self.base);
        self.ask(self.client.get(url)).await.len()
    }

    /// A join added and removed again.
    async fn change(&self) {
        let join = serde_json::json!({"from": "events", "to": "audit", "hops": 3});
        let added = self
            .ask(
                self.client
                    .post(format!("{}/api/joins", self.base))
                    .header("content-type", "application/json")
                    .body(join.to_string()),
            )
            .await;
        let added: serde_json::Value = serde_json::from_slice(&added).expect("JSON");
        let id = added["id"].as_u64().expect("the change's id");
        let url = format!("{}/api/joins/{id}", self.base);
        self.ask(self.client.delete(url)).await;
    }

    async fn stop(self) {
        drop(self.flow);
        self.running.stop(Duration::from_secs(5)).await;
        self.server.shutdown(Duration::from_secs(5)).await;
    }
}

/// The median time of one of `requests` calls of `run`, over the rounds, alternated with the
/// baseline `base`; printed as a compare line named `name`.
async fn compare<A, B, FA, FB>(name: &str, label: &str, requests: usize, mut run: A, mut base: B)
where
    A: FnMut() -> FA,
    B: FnMut() -> FB,
    FA: Future<Output = ()>,
    FB: Future<Output = ()>,
{
    let mut eip = Vec::with_capacity(ROUNDS);
    let mut baseline = Vec::with_capacity(ROUNDS);
    // A warm-up round for each, untimed.
    for _ in 0..requests {
        run().await;
        base().await;
    }
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..requests {
            run().await;
        }
        eip.push(start.elapsed().as_nanos() as f64 / requests as f64);
        let start = Instant::now();
        for _ in 0..requests {
            base().await;
        }
        baseline.push(start.elapsed().as_nanos() as f64 / requests as f64);
    }
    let (x, y) = (median(&mut eip), median(&mut baseline));
    print_compare(name, x, y, label);
}

fn main() {
    let bench = measuring();
    let (channels, requests) = if bench { (1000, 200) } else { (20, 2) };
    let rt = runtime();
    rt.block_on(async {
        let served = Served::start(channels, None).await;
        let health = || async {
            served.get("/health/live").await;
        };
        let one_channel = "/api/channels/c0001";
        for path in [
            "/api/flow",
            "/api/channels",
            one_channel,
            "/api/routes",
            "/metrics",
        ] {
            let size = served.get(path).await;
            if !bench {
                continue;
            }
            let name = format!("admin GET {path} ({channels} channels)");
            let label = "GET /health/live, same server";
            let get = || async {
                served.get(path).await;
            };
            compare(&name, label, requests, get, health).await;
            println!("detail: admin GET {path}: an answer of {size} bytes");
        }
        let two_health = || async {
            served.get("/health/live").await;
            served.get("/health/live").await;
        };
        let label = "two GET /health/live, same server";
        served.change().await;
        if bench {
            let name = format!("admin join added and removed, in memory ({channels} channels)");
            compare(&name, label, requests, || served.change(), two_health).await;
        }
        served.stop().await;

        let data = TempDir::new("admin");
        let served = Served::start(channels, Some(data.path())).await;
        let two_health = || async {
            served.get("/health/live").await;
            served.get("/health/live").await;
        };
        served.change().await;
        if bench {
            let name = format!("admin join added and removed, kept on disk ({channels} channels)");
            compare(&name, label, requests / 4, || served.change(), two_health).await;
        }
        served.stop().await;
    });
}
