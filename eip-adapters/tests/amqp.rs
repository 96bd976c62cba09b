//! The RabbitMQ bridge against the real broker on 127.0.0.1:5672 (`AMQP_ADDR` to change it):
//! both ways with every header, backpressure, redelivery of what was not acked, an unroutable
//! message dead-lettered, and connections cut mid-stream through a proxy the test controls.
//! A broker that is down fails each test naming it; `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/faults.rs"]
mod faults;
#[path = "support/proxy.rs"]
mod proxy;

use faults::{cut_and_stall, patient_outbox, take};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use eip_adapters::amqp::{
    AmqpOutbound, AmqpOutboundConfig, AmqpSource, AmqpSourceConfig, ExchangeDeclaration,
    QueueBinding, RoutingKey,
};
use eip_adapters::bridge::{BridgeError, InboundBridge};
use eip_core::channel::{DeadLetterChannel, PointToPoint, RedeliveryPolicy};
use eip_core::endpoint::Consumer;
use eip_core::message::{HeaderValue, Message};
use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, DecimalValue, FieldTable};
use lapin::{Connection, ConnectionProperties};

fn url() -> String {
    std::env::var("AMQP_ADDR").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// The broker's URL, or `None` (said on stdout) when `EIP_SKIP_BROKERS=1`. A broker that does
/// not answer fails the test, naming where it was looked for.
async fn broker(test: &str) -> Option<String> {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return None;
    }
    let url = url();
    match tokio::time::timeout(
        Duration::from_secs(5),
        Connection::connect(&url, ConnectionProperties::default()),
    )
    .await
    {
        Ok(Ok(connection)) => {
            let _ = connection.close(200, "checked".into()).await;
            Some(url)
        }
        Ok(Err(e)) => panic!("RabbitMQ at 127.0.0.1:5672 ({url}) is needed: {e}"),
        Err(_) => panic!("RabbitMQ at 127.0.0.1:5672 ({url}) does not answer"),
    }
}

/// A name unique to this test run.
fn unique(name: &str) -> String {
    format!(
        "eip-test-{name}-{}-{}",
        std::process::id(),
        eip_core::MessageId::new()
    )
}

/// Deletes the queue and exchange a test made.
async fn clean_up(url: &str, queue: &str, exchange: Option<&str>) {
    if let Ok(connection) = Connection::connect(url, ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        let _ = channel
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await;
        if let Some(exchange) = exchange {
            let _ = channel
                .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
                .await;
        }
        let _ = connection.close(200, "done".into()).await;
    }
}

/// Publishes `msg`, again while the broker answers that no queue is bound for it yet: the
/// inbound bridge declares its queue and binding in the background, and on a loaded machine
/// that may take longer than the test waited. Any other refusal, or 10 s without a binding,
/// fails the test.
async fn publish_once_bound(outbound: &AmqpOutbound, msg: &Message) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match outbound.publish(msg).await {
            Ok(()) => return,
            Err(BridgeError::Refused { reason, .. })
                if reason.contains("NO_ROUTE") && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the publish failed: {e}"),
        }
    }
}

fn topic_exchange(url: &str, exchange: &str) -> AmqpOutboundConfig {
    let mut config = AmqpOutboundConfig::new(url, exchange);
    config.declare = Some(ExchangeDeclaration {
        kind: "topic".into(),
        durable: false,
    });
    config
}

fn bound_queue(url: &str, queue: &str, exchange: &str) -> AmqpSourceConfig {
    let mut config = AmqpSourceConfig::new(url, queue);
    config.bindings = vec![QueueBinding {
        exchange: exchange.into(),
        key: "orders.#".into(),
    }];
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_both_ways_with_their_ids_and_typed_headers() {
    let Some(url) = broker("round trip").await else {
        return;
    };
    let (exchange, queue) = (unique("x"), unique("q"));
    // The queue first (declared and bound by the inbound side), then the publisher.
    let inbox = PointToPoint::new("inbox", 1000).unwrap();
    let bridge = InboundBridge::new(
        AmqpSource::new(bound_queue(&url, &queue, &exchange)),
        inbox.clone(),
        64,
    );
    let outbound = AmqpOutbound::new(topic_exchange(&url, &exchange));
    outbound.connect().await.expect("the exchange is declared");
    let bridge = bridge.spawn();
    tokio::time::sleep(Duration::from_millis(300)).await; // the binding is in place
    let outbox = PointToPoint::new("outbox", 1000).unwrap();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(32)
        .spawn();
    let mut sent = HashMap::new();
    for i in 0..300i64 {
        let msg = Message::builder(format!("{{\"n\":{i}}}").into_bytes())
            .subject(format!("orders.eu.{i}"))
            .correlation_id(format!("c-{i}"))
            .return_address("replies")
            .content_type("application/json")
            .time_to_live(Duration::from_secs(600))
            .hop_budget(4)
            .header("n", i)
            .header("urgent", i % 2 == 0)
            .build();
        sent.insert(msg.id(), msg.clone());
        outbox.send(msg).await.unwrap();
    }
    let got = take(&inbox, 300, Duration::from_secs(20)).await;
    for msg in &got {
        let original = sent.get(&msg.id()).expect("an id that was sent");
        let mut want: Vec<(&str, &HeaderValue)> = original.headers().iter().collect();
        let mut have: Vec<(&str, &HeaderValue)> = msg.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        have.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(have, want);
        assert_eq!(msg.payload(), original.payload());
    }
    let ids: std::collections::HashSet<_> = got.iter().map(Message::id).collect();
    assert_eq!(ids.len(), 300, "each once");
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
    clean_up(&url, &queue, Some(&exchange)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_stops_the_bridge_and_nothing_is_lost() {
    let Some(url) = broker("backpressure").await else {
        return;
    };
    let (exchange, queue) = (unique("x"), unique("q"));
    let inbox = PointToPoint::new("inbox", 5).unwrap();
    let bridge = InboundBridge::new(
        AmqpSource::new(bound_queue(&url, &queue, &exchange)),
        inbox.clone(),
        8,
    );
    let outbound = AmqpOutbound::new(topic_exchange(&url, &exchange));
    outbound.connect().await.unwrap();
    let bridge = bridge.spawn();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..100 {
        let msg = Message::builder(vec![i as u8]).subject("orders.x").build();
        publish_once_bound(&outbound, &msg).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = inbox.stats().depth;
    assert_eq!(
        held, 5,
        "the channel holds its capacity, the broker the rest"
    );
    let got = take(&inbox, 100, Duration::from_secs(20)).await;
    let mut bytes: Vec<u8> = got.iter().map(|m| m.payload()[0]).collect();
    bytes.sort_unstable();
    assert_eq!(bytes, (0..100).collect::<Vec<u8>>());
    bridge.shutdown().await.unwrap();
    clean_up(&url, &queue, Some(&exchange)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_was_not_acked_when_a_bridge_stopped_comes_again_to_the_next_one() {
    let Some(url) = broker("redelivery").await else {
        return;
    };
    let (exchange, queue) = (unique("x"), unique("q"));
    let outbound = AmqpOutbound::new(topic_exchange(&url, &exchange));
    // A full channel: the bridge takes 4 deliveries it can not hand over, then stops.
    let full = PointToPoint::new("full", 2).unwrap();
    let first = InboundBridge::new(
        AmqpSource::new(bound_queue(&url, &queue, &exchange)),
        full.clone(),
        4,
    )
    .spawn();
    outbound.connect().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..10u8 {
        let msg = Message::builder(vec![i]).subject("orders.x").build();
        publish_once_bound(&outbound, &msg).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.shutdown().await.unwrap();
    let kept = take(&full, 2, Duration::from_secs(5)).await;
    // A second bridge gets the other eight, those taken by the first marked redelivered.
    let inbox = PointToPoint::new("inbox", 100).unwrap();
    let second = InboundBridge::new(
        AmqpSource::new(bound_queue(&url, &queue, &exchange)),
        inbox.clone(),
        4,
    )
    .spawn();
    let rest = take(&inbox, 8, Duration::from_secs(10)).await;
    let mut all: Vec<u8> = kept.iter().chain(&rest).map(|m| m.payload()[0]).collect();
    all.sort_unstable();
    assert_eq!(all, (0..10).collect::<Vec<u8>>());
    let redelivered = rest
        .iter()
        .filter(|m| m.redelivery_count().unwrap() > 0)
        .count();
    assert!(
        redelivered >= 1,
        "the ones the first bridge held come back marked"
    );
    second.shutdown().await.unwrap();
    clean_up(&url, &queue, Some(&exchange)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unroutable_message_is_retried_then_dead_lettered_with_the_reason() {
    let Some(url) = broker("unroutable").await else {
        return;
    };
    let exchange = unique("x");
    let outbound = AmqpOutbound::new(topic_exchange(&url, &exchange));
    let dead = PointToPoint::new("dead", 10).unwrap();
    let outbox = PointToPoint::builder("outbox")
        .capacity(10)
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .redelivery(RedeliveryPolicy {
            max_attempts: 2,
            initial_backoff: Duration::from_millis(10),
            ..RedeliveryPolicy::default()
        })
        .build()
        .unwrap();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();
    outbox
        .send(
            Message::builder(&b"x"[..])
                .subject("nobody.listens")
                .build(),
        )
        .await
        .unwrap();
    let dead_letters = take(&dead, 1, Duration::from_secs(10)).await;
    let death = dead_letters[0].death().unwrap().expect("a death record");
    assert_eq!(death.reason.to_string(), "max-redeliveries");
    assert!(
        death.error.as_deref().unwrap_or("").contains("unroutable"),
        "{death:?}"
    );
    consumer.shutdown().await;
    clean_up(&url, "", Some(&exchange)).await;
}

fn upstream() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 5672))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_and_stalled_connections_lose_nothing_either_way() {
    let Some(url) = broker("cut connections").await else {
        return;
    };
    let (exchange, queue) = (unique("x"), unique("q"));
    let proxy_out = proxy::Proxy::start(upstream()).await;
    let proxy_in = proxy::Proxy::start(upstream()).await;
    let via = |proxy: &proxy::Proxy| format!("amqp://guest:guest@{}/%2f", proxy.address());
    let inbox = PointToPoint::new("inbox", 10_000).unwrap();
    let bridge = InboundBridge::new(
        AmqpSource::new(bound_queue(&via(&proxy_in), &queue, &exchange)),
        inbox.clone(),
        32,
    )
    .backoff(eip_adapters::bridge::Backoff::new(
        Duration::from_millis(20),
        Duration::from_millis(200),
    ))
    .spawn();
    let mut config = topic_exchange(&via(&proxy_out), &exchange);
    config.routing_key = RoutingKey::Fixed("orders.cut".into());
    config.confirm_timeout = Duration::from_millis(500);
    let outbound = AmqpOutbound::new(config);
    // Wait for the queue and binding.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let outbox = patient_outbox();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(16)
        .spawn();
    let proxies = std::sync::Arc::new((proxy_out, proxy_in));
    cut_and_stall(
        "amqp",
        &outbox,
        &inbox,
        proxies,
        2_000,
        Duration::from_millis(300),
    )
    .await;
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
    clean_up(&url, &queue, Some(&exchange)).await;
}

/// Publishes one message as a producer that is not eip would (with `properties`) straight to
/// `queue`, and brings it in through an inbound bridge.
async fn foreign(url: &str, queue: &str, properties: lapin::BasicProperties) -> Message {
    let connection = Connection::connect(url, ConnectionProperties::default())
        .await
        .expect("a connection");
    let channel = connection.create_channel().await.expect("a channel");
    channel
        .queue_declare(
            queue.into(),
            lapin::options::QueueDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("the queue is declared");
    channel
        .basic_publish(
            "".into(),
            queue.into(),
            lapin::options::BasicPublishOptions::default(),
            b"{}",
            properties,
        )
        .await
        .expect("published")
        .await
        .expect("sent");
    let _ = connection.close(200, "done".into()).await;
    let inbox = PointToPoint::new("inbox", 10).unwrap();
    let bridge = InboundBridge::new(
        AmqpSource::new(AmqpSourceConfig::new(url, queue)),
        inbox.clone(),
        4,
    )
    .spawn();
    let got = take(&inbox, 1, Duration::from_secs(10)).await;
    bridge.shutdown().await.unwrap();
    clean_up(url, queue, None).await;
    got.into_iter().next().expect("one message")
}

fn long(s: &str) -> AMQPValue {
    AMQPValue::LongString(s.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_arrays_tables_decimals_and_timestamps_arrive_as_json_numbers_and_integers() {
    let Some(url) = broker("foreign header types").await else {
        return;
    };
    let mut table = FieldTable::default();
    table.insert(
        "list".into(),
        AMQPValue::FieldArray(
            vec![
                AMQPValue::LongInt(1),
                long("two"),
                AMQPValue::FieldArray(vec![AMQPValue::LongInt(3)].into()),
            ]
            .into(),
        ),
    );
    let mut nested = FieldTable::default();
    nested.insert("b".into(), long("x \"quoted\""));
    nested.insert("a".into(), AMQPValue::Boolean(true));
    nested.insert(
        "d".into(),
        AMQPValue::DecimalValue(DecimalValue {
            scale: 2,
            value: 12_345,
        }),
    );
    nested.insert("t".into(), AMQPValue::Timestamp(1_700_000_000));
    nested.insert("v".into(), AMQPValue::Void);
    table.insert("table".into(), AMQPValue::FieldTable(nested));
    table.insert(
        "price".into(),
        AMQPValue::DecimalValue(DecimalValue {
            scale: 3,
            value: 1_250,
        }),
    );
    table.insert("at".into(), AMQPValue::Timestamp(1_700_000_000));
    let properties = lapin::BasicProperties::default().with_headers(table);
    let msg = foreign(&url, &unique("types"), properties).await;
    let headers = msg.headers();
    assert_eq!(
        headers.get("list"),
        Some(&HeaderValue::Str(r#"[1,"two",[3]]"#.into()))
    );
    assert_eq!(
        headers.get("table"),
        Some(&HeaderValue::Str(
            r#"{"a":true,"b":"x \"quoted\"","d":123.45,"t":1700000000,"v":null}"#.into()
        ))
    );
    assert_eq!(headers.get("price"), Some(&HeaderValue::Float(1.25)));
    assert_eq!(headers.get("at"), Some(&HeaderValue::Int(1_700_000_000)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_message_id_that_is_not_an_eip_id_is_kept_as_external_id() {
    let Some(url) = broker("foreign message id").await else {
        return;
    };
    let properties = lapin::BasicProperties::default().with_message_id("order-17".into());
    let msg = foreign(&url, &unique("id"), properties).await;
    assert_eq!(
        msg.headers().get("external-id"),
        Some(&HeaderValue::Str("order-17".into()))
    );
    assert_ne!(
        msg.id().to_string(),
        "order-17",
        "the message has an id of its own"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_ttl_counts_from_the_amqp_timestamp_not_from_arrival() {
    let Some(url) = broker("foreign ttl").await else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Published 6 s ago with a 60 s TTL: 54 s are left, not 60.
    let properties = lapin::BasicProperties::default()
        .with_expiration("60000".into())
        .with_timestamp(now - 6);
    let msg = foreign(&url, &unique("ttl"), properties).await;
    let expires = msg.expires_at().unwrap().expect("an expiry");
    assert_eq!(expires, (now - 6) * 1000 + 60_000);
}
