//! Where the brokers are, whether they answer, and the fresh destinations every round gets
//! (a RabbitMQ queue, a JetStream stream), deleted after it with a count of what they held.

use std::time::Duration;

use async_nats::jetstream;
use eip_adapters::mqtt::MqttBroker;
use eip_adapters::nats::{JetStreamOutbound, JetStreamOutboundConfig, SubjectTemplate};
use lapin::options::{ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};

/// How long a broker may take to answer the reachability check.
const REACH: Duration = Duration::from_secs(5);

pub fn amqp_url() -> String {
    std::env::var("AMQP_ADDR").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// `MQTT_ADDR` (`host:port`), by default `127.0.0.1:1883`.
pub fn mqtt_addr() -> String {
    std::env::var("MQTT_ADDR").unwrap_or_else(|_| "127.0.0.1:1883".into())
}

/// The MQTT broker at [`mqtt_addr`].
pub fn mqtt_broker() -> MqttBroker {
    let addr = mqtt_addr();
    let (host, port) = addr
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host, port.parse().ok()?)))
        .unwrap_or_else(|| panic!("MQTT_ADDR `{addr}`: expected host:port"));
    MqttBroker::new(host, port)
}

pub async fn rabbitmq_reachable() -> Result<(), String> {
    match tokio::time::timeout(
        REACH,
        Connection::connect(&amqp_url(), ConnectionProperties::default()),
    )
    .await
    {
        Ok(Ok(c)) => {
            let _ = c.close(200, "checked".into()).await;
            Ok(())
        }
        _ => Err(format!("RabbitMQ at {} not reachable", amqp_url())),
    }
}

pub async fn nats_reachable() -> Result<(), String> {
    match tokio::time::timeout(REACH, async_nats::connect(nats_url())).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(format!("NATS at {} not reachable", nats_url())),
    }
}

pub async fn redis_reachable() -> Result<(), String> {
    let client = ::redis::Client::open(redis_url()).map_err(|e| e.to_string())?;
    match tokio::time::timeout(REACH, client.get_multiplexed_async_connection()).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(format!("Redis at {} not reachable", redis_url())),
    }
}

pub async fn mqtt_reachable() -> Result<(), String> {
    match tokio::time::timeout(REACH, tokio::net::TcpStream::connect(mqtt_addr())).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(format!("the MQTT broker at {} not reachable", mqtt_addr())),
    }
}

/// A name no other round (or run) uses: the process id and a fresh id, joined by `_` so that
/// it fits a JetStream stream name.
pub fn unique() -> String {
    format!(
        "{}_{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    )
}

/// A fresh durable RabbitMQ queue, with the connection and the channel (in confirm mode) it
/// was declared on.
pub struct RabbitQueue {
    pub connection: Connection,
    pub channel: lapin::Channel,
    pub name: String,
}

impl RabbitQueue {
    /// Declares the durable queue `name`.
    pub async fn declare(name: String) -> RabbitQueue {
        let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
            .await
            .expect("RabbitMQ connects");
        let channel = connection.create_channel().await.expect("a channel");
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirms");
        let durable = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        channel
            .queue_declare(name.as_str().into(), durable, FieldTable::default())
            .await
            .expect("the queue");
        RabbitQueue {
            connection,
            channel,
            name,
        }
    }

    /// Deletes the queue and closes the connection; how many messages the queue held.
    pub async fn delete(self) -> usize {
        let held = self
            .channel
            .queue_delete(self.name.as_str().into(), QueueDeleteOptions::default())
            .await
            .expect("the queue deleted");
        let _ = self.connection.close(200, "done".into()).await;
        held as usize
    }
}

/// A fresh JetStream stream taking one subject.
pub struct JetStreamTarget {
    pub js: jetstream::Context,
    pub stream: String,
    pub subject: String,
}

impl JetStreamTarget {
    /// Creates the stream of `tag` (see [`unique`]).
    pub async fn create(tag: &str) -> JetStreamTarget {
        let nats = async_nats::connect(nats_url())
            .await
            .expect("NATS connects");
        let js = jetstream::new(nats);
        let stream = format!("EIPBENCH_{tag}");
        let subject = format!("eipbench.{tag}.x");
        js.create_stream(jetstream::stream::Config {
            name: stream.clone(),
            subjects: vec![subject.clone()],
            ..Default::default()
        })
        .await
        .expect("the stream");
        JetStreamTarget {
            js,
            stream,
            subject,
        }
    }

    /// eip's outbound adapter publishing to the stream, connected.
    pub async fn outbound(&self) -> JetStreamOutbound {
        let outbound = JetStreamOutbound::new(JetStreamOutboundConfig::new(
            nats_url(),
            SubjectTemplate::fixed(&self.subject).expect("a subject"),
        ))
        .expect("the outbound config");
        outbound.connect().await.expect("NATS connects");
        outbound
    }

    /// Deletes the stream; how many messages it held.
    pub async fn delete(self) -> usize {
        let held = self
            .js
            .get_stream(&self.stream)
            .await
            .expect("the stream")
            .info()
            .await
            .expect("its info")
            .state
            .messages;
        let _ = self.js.delete_stream(&self.stream).await;
        usize::try_from(held).expect("a count fits")
    }
}
