//! Bridges in flow files, running against the brokers on this machine: a channel published to
//! RabbitMQ (127.0.0.1:5672, `AMQP_ADDR`) or NATS JetStream (127.0.0.1:4222, `NATS_URL`) and
//! read back into another channel, every message once with its id and subject. A broker that
//! is down fails its test naming it; `EIP_SKIP_BROKERS=1` skips them and says so.

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

fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

fn skipped(test: &str) -> bool {
    let skip = std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1");
    if skip {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
    }
    skip
}

/// Runs `flow` (channels `alerts` and `audit`, bridges out of the one and into the other),
/// sends 100 messages to `alerts` and checks each comes out of `audit` once, with its id and
/// subject.
async fn round_trip(flow: &str, broker: &str) {
    let scratch = Scratch::new("bridges");
    let plan = load_str(flow, "flow.yaml", &scratch.0).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile(&plan).expect("the flow compiles");
    // Bridges connect in the order written: the outbound one declares what the inbound one
    // reads (the exchange it binds to, the stream it consumes).
    let adapters = flow
        .connect_adapters()
        .await
        .unwrap_or_else(|e| panic!("{broker} is needed: {e}"));
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_bridges_a_channel_out_to_rabbitmq_and_back_in() {
    if skipped("rabbitmq bridges in flow files") {
        return;
    }
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
    round_trip(&flow, "RabbitMQ at 127.0.0.1:5672").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_bridges_a_channel_out_to_jetstream_and_back_in() {
    if skipped("nats bridges in flow files") {
        return;
    }
    let tag = format!(
        "{}_{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let flow = format!(
        "
channels:
  alerts: {{kind: point-to-point}}
  audit: {{kind: point-to-point}}
bridges:
  to-nats:
    kind: nats-out
    from: alerts
    url: '{url}'
    subject: 'eiptest{tag}.{{subject}}'
    stream: EIPTEST_{tag}
    stream-subjects: ['eiptest{tag}.>']
    concurrency: 16
  from-nats:
    kind: nats-in
    to: audit
    url: '{url}'
    stream: EIPTEST_{tag}
    consumer: audit
    window: 32
",
        url = nats_url()
    );
    round_trip(&flow, "NATS at 127.0.0.1:4222").await;
    if let Ok(client) = async_nats::connect(nats_url()).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(format!("EIPTEST_{tag}"))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_bridges_a_channel_out_to_mqtt_and_back_in() {
    if skipped("mqtt bridges in flow files") {
        return;
    }
    let tag = format!(
        "{}-{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let url = std::env::var("MQTT_URL").unwrap_or_else(|_| "mqtt://127.0.0.1:1883".into());
    let flow = format!(
        "
channels:
  alerts: {{kind: point-to-point}}
  audit: {{kind: point-to-point}}
bridges:
  to-mqtt:
    kind: mqtt-out
    from: alerts
    url: '{url}'
    client-id: eip-test-out-{tag}
    topic: 'eiptest/{tag}/{{subject}}'
    concurrency: 16
  from-mqtt:
    kind: mqtt-in
    to: audit
    url: '{url}'
    client-id: eip-test-in-{tag}
    filter: 'eiptest/{tag}/#'
    session-expiry: 60s
    window: 16
"
    );
    round_trip(&flow, "Mosquitto at 127.0.0.1:1883").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_bridges_a_channel_out_to_a_redis_stream_and_back_in() {
    if skipped("redis bridges in flow files") {
        return;
    }
    let tag = format!(
        "{}-{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let flow = format!(
        "
channels:
  alerts: {{kind: point-to-point}}
  audit: {{kind: point-to-point}}
bridges:
  to-redis:
    kind: redis-out
    from: alerts
    url: '{url}'
    stream: eiptest:{tag}
    concurrency: 16
  from-redis:
    kind: redis-in
    to: audit
    url: '{url}'
    stream: eiptest:{tag}
    group: audit
    consumer: audit-1
    window: 32
"
    );
    round_trip(&flow, "Redis at 127.0.0.1:6379").await;
    if let Ok(client) = redis::Client::open(url.as_str())
        && let Ok(mut connection) = client.get_multiplexed_async_connection().await
    {
        let _: Result<(), _> = redis::cmd("DEL")
            .arg(format!("eiptest:{tag}"))
            .query_async(&mut connection)
            .await;
    }
}

#[tokio::test]
async fn a_bridge_that_can_not_start_is_called_a_bridge() {
    // A password variable that is not set stops the bridge before it reaches any broker.
    let flow = "
channels:
  readings: {kind: point-to-point}
bridges:
  sensors:
    kind: mqtt-in
    to: readings
    url: mqtt://127.0.0.1:1883
    client-id: eip-test-never-connects
    filter: sensors/#
    username: eip
    password-env: EIP_TEST_MQTT_PASSWORD_THAT_IS_NOT_SET
";
    let plan =
        load_str(flow, "flow.yaml", ".".as_ref()).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile(&plan).expect("the flow compiles");
    let error = flow
        .connect_adapters()
        .await
        .expect_err("the password variable is not set");
    let text = error.to_string();
    assert!(text.starts_with("bridge `sensors`: "), "{text}");
    assert!(
        text.contains("EIP_TEST_MQTT_PASSWORD_THAT_IS_NOT_SET"),
        "{text}"
    );
}

#[tokio::test]
async fn the_start_up_lines_call_a_bridge_a_bridge_and_an_adapter_an_adapter() {
    if skipped("the start-up lines of a redis bridge") {
        return;
    }
    let scratch = Scratch::new("bridges-describe");
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let flow = format!(
        "
channels:
  alerts: {{kind: point-to-point}}
  kept: {{kind: point-to-point}}
adapters:
  archive: {{kind: file-out, from: kept, dir: out}}
bridges:
  to-redis: {{kind: redis-out, from: alerts, url: '{url}', stream: 'eiptest:describe'}}
"
    );
    let plan =
        load_str(&flow, "flow.yaml", &scratch.0).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile(&plan).expect("the flow compiles");
    let adapters = flow
        .connect_adapters()
        .await
        .unwrap_or_else(|e| panic!("Redis at 127.0.0.1:6379 is needed: {e}"));
    let lines = adapters.describe();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("adapter archive (file-out): "),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("bridge to-redis (redis-out): "),
        "{lines:?}"
    );
    assert!(lines[1].ends_with(" <- alerts"), "{lines:?}");
}
