//! Liveness and readiness: live while the server answers; not ready (503, with what it waits
//! for) until the adapters are connected and the flow started, ready (200) then, and not
//! ready again once the flow begins to stop.

mod support {
    pub mod admin;
}

use std::time::Duration;

use serde_json::json;
use support::admin::{serve_unstarted, start};

const FLOW: &str = r#"
channels:
  ticks: {kind: point-to-point}
adapters:
  clock:
    kind: timer
    to: ticks
    interval: 1h
    payload: '{"tick": {seq}}'
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_answers_while_the_server_serves() {
    let served = serve_unstarted(FLOW, None).await;
    let (status, body) = served.json("/health/live").await;
    assert_eq!((status, body), (200, json!({"live": true})));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_waits_for_the_adapters_and_the_start_then_for_nothing() {
    let served = serve_unstarted(FLOW, None).await;
    let (status, body) = served.json("/health/ready").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body,
        json!({"ready": false, "waiting_for": [
            "adapter `clock` connecting",
            "the flow starting (routes subscribing, adapters attaching)"
        ]})
    );
    let (_, adapters) = served.json("/api/adapters").await;
    assert_eq!(adapters[0]["connected"], false, "{adapters}");

    let mut served = start(served).await;
    let (status, body) = served.json("/health/ready").await;
    assert_eq!(
        (status, body),
        (200, json!({"ready": true, "waiting_for": []}))
    );
    let (_, adapters) = served.json("/api/adapters").await;
    assert_eq!(
        adapters,
        json!([{"name": "clock", "section": "adapter", "kind": "timer", "direction": "inbound",
                "channel": "ticks", "endpoint": adapters[0]["endpoint"], "connected": true,
                "reconnects": null, "last_error": null, "paused": false}])
    );

    let running = served.running.as_mut().expect("started");
    running.drain(Duration::from_secs(1)).await;
    let (status, body) = served.json("/health/ready").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["waiting_for"], json!(["the flow is stopping"]));
    served.stop().await;
}
