//! The admin server's answer time for a flow of 1,000 channels (issue 18): what an operator's
//! `eip channels`, the console's poll and a Prometheus scrape wait for.
//!
//! The flow has 1,000 point-to-point channels, 500 routes (each from one channel to the next)
//! and the dead letter channel; a message went through every route first, so every counter
//! has a value to show. The admin server runs in the process on 127.0.0.1 (a free port) and one
//! HTTP/1.1 client asks it, one request at a time on one kept-alive connection, as a script or
//! the console does.
//!
//! Each line compares one endpoint's answer with `GET /health/live` on the same server and
//! connection: the baseline is the cost of an HTTP round trip through the same stack, so the
//! ratio is what reading and writing the flow's 1,000 channels adds. Rounds alternate the two
//! and each side's figure is the median of its rounds; the line reads
//! `compare: admin GET PATH (1000 channels): eip X ns/msg, baseline Y ns/msg (GET /health/live,
//! same server), ratio R`, where a "msg" is one answer, then the answer's size.
//!
//! Run: `cargo bench -p eip-bench --bench admin`; `cargo test -p eip-bench --benches` runs a
//! small version (20 channels, a few requests) that checks every answer is a 200.

use std::sync::Arc;
use std::time::Instant;

use eip_bench::{measuring, median, print_compare, runtime};
use eip_core::message::Message;
use eip_dsl::admin::{AdminOptions, AdminServer};
use eip_dsl::compile::compile;
use eip_dsl::control::RuntimeChanges;
use eip_dsl::load::load_str;

/// Rounds of each comparison.
const ROUNDS: usize = 9;

/// The flow file of `channels` channels, every even one routed to the next.
fn flow(channels: usize) -> String {
    let mut yaml = String::from("channels:\n");
    for i in 0..channels {
        yaml.push_str(&format!("  c{i:04}: {{kind: point-to-point}}\n"));
    }
    yaml.push_str("routes:\n");
    for i in (0..channels).step_by(2) {
        yaml.push_str(&format!(
            "  - name: r{i:04}\n    from: c{i:04}\n    to: c{:04}\n",
            i + 1
        ));
    }
    yaml
}

fn main() {
    let bench = measuring();
    let (channels, requests) = if bench { (1000, 200) } else { (20, 3) };
    let rt = runtime();
    rt.block_on(async {
        let plan = load_str(&flow(channels), "admin-bench.yaml", ".".as_ref())
            .unwrap_or_else(|e| panic!("{}", e.render()));
        let flow = compile(&plan).expect("the flow compiles");
        let (changes, _) = RuntimeChanges::open(flow.view())
            .await
            .expect("the runtime changes open");
        let options = AdminOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            token: None,
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
        let base = format!("http://{}", server.local_addr());
        let client = reqwest::Client::new();
        let get = |path: String| {
            let client = client.clone();
            let url = format!("{base}{path}");
            async move {
                let answer = client.get(&url).send().await.expect("the server answers");
                let status = answer.status();
                let body = answer.bytes().await.expect("a body");
                assert!(status.is_success(), "{url}: {status}");
                body.len()
            }
        };
        // Each side: `requests` answers, the time of one.
        let time = |path: &'static str| {
            let get = &get;
            async move {
                let start = Instant::now();
                for _ in 0..requests {
                    get(path.to_owned()).await;
                }
                start.elapsed().as_nanos() as f64 / requests as f64
            }
        };
        let one_channel: &'static str = "/api/channels/c0500";
        for path in [
            "/api/flow",
            "/api/channels",
            one_channel,
            "/api/routes",
            "/metrics",
        ] {
            let size = get(path.to_owned()).await;
            if !bench {
                continue;
            }
            // Warm the connection and the server's paths before the first round.
            time(path).await;
            time("/health/live").await;
            let mut eip = Vec::with_capacity(ROUNDS);
            let mut baseline = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                eip.push(time(path).await);
                baseline.push(time("/health/live").await);
            }
            let (x, y) = (median(&mut eip), median(&mut baseline));
            print_compare(
                &format!("admin GET {path} ({channels} channels)"),
                x,
                y,
                "GET /health/live, same server",
            );
            println!(
                "detail: admin GET {path}: {:.0} µs an answer of {size} bytes",
                x / 1000.0
            );
        }
        running.stop(std::time::Duration::from_secs(5)).await;
        server.shutdown(std::time::Duration::from_secs(5)).await;
    });
}
