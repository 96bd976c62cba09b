//! Bridges in flow files, running against the RabbitMQ on 127.0.0.1:5672 (`AMQP_ADDR` to
//! change it): a channel published to an exchange and a queue read back into another channel,
//! every message once with its id and subject. A broker that is down fails the test naming it;
//! `EIP_SKIP_BROKERS=1` skips it and says so.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_dsl::compile::{Output, compile};
use eip_dsl::load::load_str;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

fn amqp_url() -> String {
    std::env::var("AMQP_ADDR").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_bridges_a_channel_out_to_rabbitmq_and_back_in() {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("bridges in flow files: skipped, EIP_SKIP_BROKERS=1");
        return;
    }
    let scratch = Scratch::new("bridges");
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
    exchange: eip-test-alerts-{tag}
    declare-exchange: topic
    durable: false
    concurrency: 16
  from-rabbit:
    kind: rabbitmq-in
    to: audit
    url: '{url}'
    queue: eip-test-audit-{tag}
    exchange: eip-test-alerts-{tag}
    binding-keys: ['alerts.#']
    window: 32
",
        url = amqp_url()
    );
    let plan =
        load_str(&flow, "flow.yaml", &scratch.0).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile(&plan).expect("the flow compiles");
    // Bridges connect in the order written: `to-rabbit` declares the exchange that
    // `from-rabbit` then binds its queue to.
    let adapters = flow
        .connect_adapters()
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ at 127.0.0.1:5672 is needed: {e}"));
    let received = Arc::new(Mutex::new(Vec::<Message>::new()));
    let seen = received.clone();
    let output: Output = Arc::new(move |channel: &str, msg: &Message| {
        assert_eq!(channel, "audit");
        seen.lock().expect("not poisoned").push(msg.clone());
    });
    let mut running = flow.start(output);
    running.attach(adapters);
    let mut sent = Vec::new();
    for i in 0..100 {
        let msg = Message::builder(format!("{i}").into_bytes())
            .subject(format!("alerts.disk.{i}"))
            .build();
        sent.push(msg.id());
        flow.bus().publish("alerts", msg).await.expect("sent");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while received.lock().expect("not poisoned").len() < 100 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of 100 came back",
            received.lock().expect("not poisoned").len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let received = received.lock().expect("not poisoned").clone();
    let mut ids: Vec<_> = received.iter().map(Message::id).collect();
    ids.sort();
    sent.sort();
    assert_eq!(ids, sent, "each message once, with its id");
    assert!(
        received.iter().all(|m| m
            .subject()
            .ok()
            .flatten()
            .is_some_and(|s| s.starts_with("alerts.disk."))),
        "subjects kept"
    );
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    // Clean up the queue and the exchange.
    if let Ok(connection) =
        lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        let _ = channel
            .queue_delete(
                format!("eip-test-audit-{tag}").as_str().into(),
                lapin::options::QueueDeleteOptions::default(),
            )
            .await;
        let _ = channel
            .exchange_delete(
                format!("eip-test-alerts-{tag}").as_str().into(),
                lapin::options::ExchangeDeleteOptions::default(),
            )
            .await;
    }
}
