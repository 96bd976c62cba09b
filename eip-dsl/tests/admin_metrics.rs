//! `/metrics`: Prometheus' text format that `promtool check metrics` accepts, per channel,
//! route and adapter, moving with the messages.
//!
//! promtool comes with Debian's `prometheus` package (`apt-get install -y prometheus`); the
//! test fails, saying so, where it is not on the PATH.

mod support {
    pub mod admin;
}

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;
use support::admin::{FLOW, Served, eventually, metric, serve};

/// What `promtool check metrics` says of `text`: its exit status and output.
fn promtool(text: &str) -> (bool, String) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => panic!(
            "promtool is needed to check the metrics and could not be run ({e}): install \
             Debian's `prometheus` package (`apt-get install -y prometheus`)"
        ),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("promtool reads");
    }
    let out = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

async fn metrics(served: &Served) -> String {
    let response = served
        .client
        .get(format!("{}/metrics", served.base))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status().as_u16(), 200);
    let kind = response.headers().get("content-type").cloned();
    assert_eq!(
        kind.as_ref().and_then(|k| k.to_str().ok()),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    response.text().await.expect("a body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_and_move_with_the_messages() {
    let served = serve(FLOW, None).await;
    let before = metrics(&served).await;
    let (ok, said) = promtool(&before);
    assert!(
        ok,
        "promtool check metrics refused the output:\n{said}\n{before}"
    );
    assert_eq!(
        metric(&before, "eip_channel_in_total{channel=\"orders\"}"),
        Some(0.0)
    );
    assert_eq!(metric(&before, "eip_flow_ready"), Some(1.0));
    assert!(metric(&before, "process_resident_memory_bytes").is_some_and(|b| b > 0.0));

    for total in [500, 20] {
        served.send("orders", json!({"total": total})).await;
    }
    served.send("small", json!({"say": "fail"})).await;
    eventually("the messages counted", || async {
        let text = metrics(&served).await;
        metric(&text, "eip_channel_out_total{channel=\"orders\"}") == Some(2.0)
            && metric(&text, "eip_route_failed_total{route=\"check\"}") == Some(1.0)
            && metric(&text, "eip_route_handled_total{route=\"check\"}") == Some(1.0)
    })
    .await;
    let after = metrics(&served).await;
    let (ok, said) = promtool(&after);
    assert!(
        ok,
        "promtool check metrics refused the output:\n{said}\n{after}"
    );
    assert_eq!(
        metric(&after, "eip_channel_in_total{channel=\"orders\"}"),
        Some(2.0)
    );
    assert_eq!(
        metric(&after, "eip_channel_waiting{channel=\"orders\"}"),
        Some(0.0)
    );
    assert_eq!(
        metric(&after, "eip_channel_in_flight{channel=\"orders\"}"),
        Some(0.0)
    );
    assert_eq!(
        metric(&after, "eip_channel_dead_letters_total{channel=\"small\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&after, "eip_route_handled_total{route=\"sort\"}"),
        Some(2.0)
    );
    for family in [
        "eip_channel_in_total counter",
        "eip_channel_out_total counter",
        "eip_channel_dead_letters_total counter",
        "eip_channel_invalid_total counter",
        "eip_channel_waiting gauge",
        "eip_channel_in_flight gauge",
        "eip_route_handled_total counter",
        "eip_route_failed_total counter",
        "eip_adapter_connected gauge",
        "eip_flow_ready gauge",
        "process_resident_memory_bytes gauge",
    ] {
        assert!(
            after.contains(&format!("# TYPE {family}\n")),
            "{family}:\n{after}"
        );
    }
    served.stop().await;
}

#[test]
fn promtool_refuses_what_breaks_the_format() {
    // The check is worth something only if promtool says no to a broken exposition.
    let (ok, said) = promtool("# TYPE eip_x counter\neip_x{channel=\"a} 1\n");
    assert!(!ok, "promtool took a broken label: {said}");
}
