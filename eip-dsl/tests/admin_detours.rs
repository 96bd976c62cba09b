//! Pausing adapters and bridges through the admin API (a Detour), and pauses kept across a
//! restart: a paused `http-in` answers 503 with Retry-After, a paused outbound adapter leaves
//! its channel's messages waiting, a paused timer fires nothing, a paused inbound bridge
//! (RabbitMQ on 127.0.0.1:5672) reads nothing from its broker; each takes up where it stopped
//! once resumed, and nothing is lost. A durable flow pauses again at start what was paused,
//! and drops the pause of what it no longer has.

mod support {
    pub mod admin;
    pub mod scratch;
}

use std::path::Path;
use std::time::Duration;

use eip_dsl::compile::{StoreOptions, compile_with};
use eip_dsl::control::{Detour, Reapplied, RuntimeChanges};
use serde_json::{Value, json};
use support::admin::{
    Served, amqp_url, answer, delete_queue_and_exchange, eventually, plan, serve,
};
use support::scratch::Scratch;

const TOKEN: &str = "detour-token";

/// POSTs `path` with the token: the status and the JSON body.
async fn post(served: &Served, path: &str) -> (u16, Value) {
    let request = served
        .client
        .post(format!("{}{path}", served.base))
        .bearer_auth(TOKEN);
    let (status, body) = answer(request).await;
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, json)
}

async fn counter(served: &Served, channel: &str, name: &str) -> u64 {
    let (_, info) = served.json(&format!("/api/channels/{channel}")).await;
    info["counters"][name].as_u64().unwrap_or(u64::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_http_in_answers_503_until_resumed() {
    let served = serve(
        "
channels:
  orders: {kind: point-to-point}
adapters:
  orders-in:
    kind: http-in
    to: orders
    listen: 127.0.0.1:0
    path: /orders
",
        Some(TOKEN),
    )
    .await;
    let (_, adapters) = served.json("/api/adapters").await;
    let endpoint = adapters[0]["endpoint"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let url = endpoint.trim_start_matches("POST ").to_owned();
    let client = reqwest::Client::new();
    let send = || client.post(&url).body(r#"{"n": 1}"#).send();

    let (status, info) = post(&served, "/api/adapters/orders-in/pause").await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["paused"], true, "{info}");
    let refused = send().await.expect("the server answers");
    assert_eq!(refused.status().as_u16(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let why = refused.text().await.unwrap_or_default();
    assert!(why.contains("the adapter is paused"), "{why}");
    assert_eq!(counter(&served, "orders", "in").await, 0);

    let (status, info) = post(&served, "/api/adapters/orders-in/resume").await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["paused"], false, "{info}");
    let taken = send().await.expect("the server answers");
    assert_eq!(taken.status().as_u16(), 202);
    assert_eq!(counter(&served, "orders", "in").await, 1);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_outbound_adapter_leaves_its_messages_waiting() {
    let out = Scratch::new("detour-file-out");
    let flow = format!(
        "
channels:
  files: {{kind: point-to-point}}
adapters:
  files-out:
    kind: file-out
    from: files
    dir: '{}'
",
        out.0.display()
    );
    let served = serve(&flow, Some(TOKEN)).await;
    let (status, _) = post(&served, "/api/adapters/files-out/pause").await;
    assert_eq!(status, 200);
    for i in 0..3 {
        served.send("files", json!({"n": i})).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counter(&served, "files", "waiting").await, 3);
    assert_eq!(written(&out.0), 0, "nothing written while paused");

    post(&served, "/api/adapters/files-out/resume").await;
    eventually("the three files written", || async { written(&out.0) == 3 }).await;
    assert_eq!(counter(&served, "files", "waiting").await, 0);
    served.stop().await;
}

fn written(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.flatten().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_timer_fires_nothing_until_resumed() {
    let served = serve(
        "
channels:
  ticks: {kind: point-to-point}
adapters:
  clock:
    kind: timer
    to: ticks
    interval: 20ms
",
        Some(TOKEN),
    )
    .await;
    eventually("the timer ticking", || async {
        counter(&served, "ticks", "in").await >= 2
    })
    .await;
    post(&served, "/api/adapters/clock/pause").await;
    // A tick under way when the pause came may still land.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let paused_at = counter(&served, "ticks", "in").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counter(&served, "ticks", "in").await, paused_at);
    post(&served, "/api/adapters/clock/resume").await;
    eventually("the timer ticking again", || async {
        counter(&served, "ticks", "in").await > paused_at
    })
    .await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_inbound_bridge_leaves_its_messages_with_the_broker() {
    let url = amqp_url();
    let tag = format!("{}-{}", std::process::id(), eip_core::MessageId::new());
    let flow = format!(
        "
channels:
  alerts: {{kind: point-to-point}}
  audit: {{kind: point-to-point}}
bridges:
  to-rabbit:
    kind: rabbitmq-out
    from: alerts
    url: '{url}'
    exchange: eip-test-detour-{tag}
    declare-exchange: topic
    durable: false
  from-rabbit:
    kind: rabbitmq-in
    to: audit
    url: '{url}'
    queue: eip-test-detour-{tag}
    exchange: eip-test-detour-{tag}
    binding-keys: ['#']
"
    );
    let served = serve(&flow, Some(TOKEN)).await;
    let (status, info) = post(&served, "/api/adapters/from-rabbit/pause").await;
    assert_eq!(status, 200, "{info}");
    for i in 0..5 {
        served.send("alerts", json!({"n": i})).await;
    }
    eventually("the five published", || async {
        counter(&served, "alerts", "out").await == 5
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counter(&served, "audit", "in").await, 0, "read nothing");
    post(&served, "/api/adapters/from-rabbit/resume").await;
    eventually("the five read after the resume", || async {
        counter(&served, "audit", "in").await == 5
    })
    .await;
    served.stop().await;
    delete_queue_and_exchange(&format!("eip-test-detour-{tag}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_what_does_not_exist_is_a_404_with_the_closest_name() {
    let served = serve(
        "
channels:
  ticks: {kind: point-to-point}
adapters:
  clock:
    kind: timer
    to: ticks
    interval: 1s
",
        Some(TOKEN),
    )
    .await;
    let (status, body) = post(&served, "/api/adapters/clok/pause").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "unknown adapter or bridge `clok`");
    assert_eq!(body["closest"], "clock");
    served.stop().await;
}

const DURABLE: &str = "
channels:
  jobs: {kind: point-to-point, durable: true}
  done: {kind: point-to-point}
routes:
  - name: work
    from: jobs
    to: done
adapters:
  clock:
    kind: timer
    to: jobs
    interval: 1h
";

#[tokio::test]
async fn pauses_are_kept_across_a_restart_and_dropped_when_their_target_is_gone() {
    let data = Scratch::new("detour-kept");
    let store = StoreOptions {
        data_dir: data.0.clone(),
        max_bytes: None,
    };
    {
        let flow = compile_with(&plan(DURABLE), &store).expect("compiles");
        let (changes, _) = RuntimeChanges::open(flow.view()).await.expect("opens");
        assert!(
            changes
                .pause(&Detour::Route("work".into()))
                .await
                .expect("paused")
        );
        assert!(
            changes
                .pause(&Detour::Adapter("clock".into()))
                .await
                .expect("paused")
        );
        assert!(
            !changes
                .pause(&Detour::Adapter("clock".into()))
                .await
                .expect("again")
        );
    }
    {
        let flow = compile_with(&plan(DURABLE), &store).expect("compiles");
        let (changes, reapplied) = RuntimeChanges::open(flow.view()).await.expect("opens");
        let mut said: Vec<String> = reapplied.iter().map(ToString::to_string).collect();
        said.sort();
        assert_eq!(
            said,
            ["adapter clock paused again", "route work paused again"]
        );
        assert!(flow.routes()[0].is_paused());
        assert!(flow.view().detours().is_paused("clock"));
        // Resumed, it is forgotten: the next start runs it.
        assert!(
            changes
                .resume(&Detour::Adapter("clock".into()))
                .await
                .expect("resumed")
        );
    }
    let renamed = DURABLE.replace("name: work", "name: labour");
    let flow = compile_with(&plan(&renamed), &store).expect("compiles");
    let (_, reapplied) = RuntimeChanges::open(flow.view()).await.expect("opens");
    assert_eq!(
        reapplied,
        [Reapplied::PauseDropped(Detour::Route("work".into()))]
    );
    assert!(!flow.routes()[0].is_paused());
    assert!(!flow.view().detours().is_paused("clock"));
}
