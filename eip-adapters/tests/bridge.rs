//! What every bridge says about its connection, against the real brokers on 127.0.0.1
//! (RabbitMQ :5672, MQTT :1883): a connection cut through a proxy the test controls is warned
//! of, and so is the reconnection that ends the outage, at the same level (the default log
//! level shows warnings). `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/proxy.rs"]
#[allow(dead_code)] // stalling is not used here
mod proxy;

use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use eip_adapters::amqp::{
    AmqpOutbound, AmqpOutboundConfig, AmqpSource, AmqpSourceConfig, RoutingKey,
};
use eip_adapters::bridge::{Backoff, InboundBridge};
use eip_adapters::mqtt::{MqttBroker, MqttOutbound, MqttOutboundConfig, TopicTemplate};
use eip_core::channel::PointToPoint;
use eip_core::message::Message;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Every event logged in this test binary: its level and its fields as text.
struct Captured(Mutex<Vec<(Level, String)>>);

impl Subscriber for &'static Captured {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        if let Ok(mut events) = self.0.lock() {
            events.push((*event.metadata().level(), text.0));
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<&'static Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured: &'static Captured = Box::leak(Box::new(Captured(Mutex::new(Vec::new()))));
        tracing::subscriber::set_global_default(captured).expect("the only subscriber");
        captured
    })
}

/// Waits up to `limit` for a warning whose text holds every one of `words`.
async fn warned(words: &[&str], limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let found = captured().0.lock().is_ok_and(|events| {
            events.iter().any(|(level, text)| {
                *level == Level::WARN && words.iter().all(|w| text.contains(w))
            })
        });
        if found || tokio::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn skipped(test: &str) -> bool {
    let skip = std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1");
    if skip {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
    }
    skip
}

fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(20), Duration::from_millis(200))
}

/// Starts capturing (unless skipped) and a proxy to RabbitMQ: its URL and its port as text.
async fn rabbitmq_through_proxy(test: &str) -> Option<(proxy::Proxy, String, String)> {
    if skipped(test) {
        return None;
    }
    captured();
    let proxy = proxy::Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let url = format!("amqp://guest:guest@{}/%2f", proxy.address());
    let port = proxy.address().port().to_string();
    Some((proxy, url, port))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_bridge_says_reconnected_as_loudly_as_it_said_lost() {
    let Some((proxy, url, port)) = rabbitmq_through_proxy("inbound reconnected").await else {
        return;
    };
    let mut config =
        AmqpSourceConfig::new(&url, format!("eip-test-reconnect-{}", std::process::id()));
    config.exclusive = true;
    let inbox = PointToPoint::new("inbox", 10).unwrap();
    let bridge = InboundBridge::new(AmqpSource::new(config), inbox, 4)
        .backoff(quick())
        .spawn();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while proxy.accepted() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await; // consuming
    proxy.cut();
    assert!(
        warned(&["connection lost", &port], Duration::from_secs(10)).await,
        "the loss is warned of"
    );
    assert!(
        warned(&["bridge reconnected", &port], Duration::from_secs(10)).await,
        "the reconnection is warned of too"
    );
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_bridge_says_reconnected_as_loudly_as_it_said_lost() {
    let Some((proxy, url, port)) = rabbitmq_through_proxy("outbound reconnected").await else {
        return;
    };
    let queue = format!("eip-test-reconnect-out-{}", std::process::id());
    let mut config = AmqpOutboundConfig::new(&url, "");
    config.routing_key = RoutingKey::Fixed(queue.clone());
    config.declare_queue = Some(queue.clone());
    let outbound = AmqpOutbound::new(config);
    outbound
        .publish(&Message::new("before"))
        .await
        .expect("published");
    proxy.cut();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while outbound.publish(&Message::new("after")).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "published again within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        warned(&["connection lost", &port], Duration::from_secs(1)).await,
        "the loss is warned of"
    );
    assert!(
        warned(&["bridge reconnected", &port], Duration::from_secs(1)).await,
        "the reconnection is warned of too"
    );
    let _ = delete_queue(&queue).await;
}

/// Deletes the queue the outbound test declared.
async fn delete_queue(queue: &str) -> Result<(), lapin::Error> {
    let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
    let connection =
        lapin::Connection::connect(url, lapin::ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    channel
        .queue_delete(queue.into(), lapin::options::QueueDeleteOptions::default())
        .await?;
    connection.close(200, "done".into()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtt_outbound_says_reconnected_as_loudly_as_it_said_lost() {
    if skipped("mqtt reconnected") {
        return;
    }
    captured();
    let proxy = proxy::Proxy::start(SocketAddr::from(([127, 0, 0, 1], 1883))).await;
    let broker = MqttBroker::new(proxy.address().ip().to_string(), proxy.address().port());
    let topic = TopicTemplate::fixed("eip-test/reconnect").unwrap();
    let config = MqttOutboundConfig::new(
        broker,
        format!("eip-test-reconnect-{}", std::process::id()),
        topic,
    )
    .backoff(quick());
    let outbound = MqttOutbound::connect(config).await.expect("connected");
    outbound
        .publish(&Message::new("before"))
        .await
        .expect("published");
    proxy.cut();
    let port = proxy.address().port().to_string();
    assert!(
        warned(
            &["mqtt outbound reconnected", &port],
            Duration::from_secs(10)
        )
        .await,
        "the reconnection is warned of"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_kept_in_rabbitmq_says_reconnected_as_loudly_as_it_said_lost() {
    let Some((proxy, url, port)) = rabbitmq_through_proxy("broker store reconnected").await else {
        return;
    };
    let queue = format!("eip-test-store-reconnect-{}", std::process::id());
    let store = eip_adapters::store::RabbitMq::queue(&url, queue.clone());
    let channel = PointToPoint::builder("orders")
        .capacity(8)
        .store(std::sync::Arc::new(store))
        .build()
        .expect("a channel kept in RabbitMQ");
    let mut receiver = channel.receiver();
    channel
        .send(Message::new("before"))
        .await
        .expect("confirmed by the broker");
    let first = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("received within 10 s")
        .expect("a delivery");
    first.ack();
    let reading = tokio::spawn(async move {
        let next = receiver.recv().await;
        (receiver, next)
    });
    proxy.cut();
    assert!(
        warned(
            &["reading again after a wait", &port],
            Duration::from_secs(10)
        )
        .await,
        "the loss is warned of"
    );
    assert!(
        warned(
            &["reconnected", "reading again", &port],
            Duration::from_secs(15)
        )
        .await,
        "the reconnection is warned of too"
    );
    reading.abort();
    drop(channel);
    let _ = delete_queue(&queue).await;
}
