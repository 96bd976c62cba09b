//! A bridge's connection as the admin API and `/metrics` show it, against RabbitMQ on
//! 127.0.0.1:5672 (`AMQP_ADDR`) through a TCP proxy the test cuts: connected with no error at
//! start; after the cut, the reconnection counted and the error kept with when it happened,
//! and the messages sent after the cut still arriving.

mod support {
    pub mod admin;
}

// eip-adapters' proxy; this test cuts, and neither stalls nor counts.
#[allow(dead_code)]
#[path = "../../eip-adapters/tests/support/proxy.rs"]
mod proxy;

use std::net::SocketAddr;

use serde_json::Value;
use support::admin::{Served, delete_queue_and_exchange, eventually, metric, serve};

fn amqp_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 5672))
}

/// The entry of `/api/adapters` named `name`.
async fn adapter(served: &Served, name: &str) -> Value {
    let (status, adapters) = served.json("/api/adapters").await;
    assert_eq!(status, 200, "{adapters}");
    adapters
        .as_array()
        .and_then(|all| all.iter().find(|a| a["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no adapter `{name}` in {adapters}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_bridge_shows_its_reconnection_and_last_error() {
    let proxy = proxy::Proxy::start(amqp_addr()).await;
    let url = format!("amqp://guest:guest@{}/%2f", proxy.address());
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
    exchange: eip-test-health-{tag}
    declare-exchange: topic
    durable: false
  from-rabbit:
    kind: rabbitmq-in
    to: audit
    url: '{url}'
    queue: eip-test-health-{tag}
    exchange: eip-test-health-{tag}
    binding-keys: ['alerts.#']
"
    );
    let served = serve(&flow, None).await;

    for name in ["to-rabbit", "from-rabbit"] {
        // The inbound bridge's own connection is made by its task, once the flow started.
        eventually(&format!("{name} connected"), || async {
            adapter(&served, name).await["connected"] == true
        })
        .await;
        let info = adapter(&served, name).await;
        assert_eq!(info["section"], "bridge", "{info}");
        assert_eq!(info["reconnects"], 0, "{info}");
        assert_eq!(info["last_error"], Value::Null, "{info}");
    }
    let send = |i: u32| {
        let served = &served;
        async move {
            let msg = eip_core::Message::builder(format!("{i}").into_bytes())
                .subject(format!("alerts.disk.{i}"))
                .build();
            served
                .flow
                .bus()
                .send("alerts", msg)
                .await
                .expect("alerts takes it");
        }
    };
    send(0).await;
    // At least `n` in: delivery is at least once, and a publish the cut overtakes may reach
    // RabbitMQ with its confirm lost on the way back; the bridge publishes it again on its new
    // connection, so the audit can count the message sent after the cut twice.
    let audit_out = |n: u64| {
        let served = &served;
        async move {
            let (_, audit) = served.json("/api/channels/audit").await;
            audit["counters"]["in"].as_u64().is_some_and(|got| got >= n)
        }
    };
    eventually("the first message through RabbitMQ", || audit_out(1)).await;

    proxy.cut();
    // The inbound bridge sees its connection close and connects again through the proxy; the
    // outbound one finds out on its next publish, which is retried on a new connection.
    send(1).await;
    eventually("the message sent after the cut", || audit_out(2)).await;
    for name in ["to-rabbit", "from-rabbit"] {
        eventually(&format!("{name} reconnected"), || async {
            let info = adapter(&served, name).await;
            info["connected"] == true && info["reconnects"] == 1
        })
        .await;
        let info = adapter(&served, name).await;
        let error = &info["last_error"];
        assert!(
            error["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{name}: {info}"
        );
        // There was none before the cut: this one is the cut's.
        let at = error["at"].as_str().unwrap_or_default();
        assert!(at.ends_with('Z') && at.contains('T'), "{name}: {info}");
    }

    let (status, text) = served.get("/metrics").await;
    assert_eq!(status, 200);
    for name in ["to-rabbit", "from-rabbit"] {
        let kind = if name == "to-rabbit" {
            "rabbitmq-out"
        } else {
            "rabbitmq-in"
        };
        let labels = format!("{{adapter=\"{name}\",kind=\"{kind}\",section=\"bridge\"}}");
        assert_eq!(
            metric(&text, &format!("eip_bridge_reconnects_total{labels}")),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            metric(&text, &format!("eip_adapter_connected{labels}")),
            Some(1.0),
            "{text}"
        );
    }
    let (_, adapters) = served.json("/api/adapters").await;
    assert_eq!(adapters.as_array().map(Vec::len), Some(2), "{adapters}");
    served.stop().await;
    drop(proxy);
    delete_queue_and_exchange(&format!("eip-test-health-{tag}")).await;
}
