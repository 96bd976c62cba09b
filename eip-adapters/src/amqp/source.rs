//! The inbound half: a queue feeding a channel, read by an
//! [`InboundBridge`](crate::bridge::InboundBridge).

use std::time::Duration;

use eip_core::message::Message;
use futures::StreamExt;
use lapin::Connection;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicQosOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{FieldTable, ShortString};

use super::connection::{self, AmqpUrl, ExchangeDeclaration, lost, refused, while_connected};
use super::properties::message;
use crate::bridge::envelope::EnvelopeError;
use crate::bridge::{BridgeError, Delivery, Source};

/// A binding the inbound adapter makes from an exchange to its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBinding {
    /// The exchange (it must exist).
    pub exchange: String,
    /// The binding key (`orders.#` on a topic exchange).
    pub key: String,
}

/// Which queue an [`AmqpSource`] consumes, and what it declares. Plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpSourceConfig {
    /// The server.
    pub url: AmqpUrl,
    /// The queue.
    pub queue: String,
    /// Declare the queue, durable, before consuming (idempotent; again after a reconnect).
    pub declare: bool,
    /// Declare the queue exclusive instead: not durable, deleted by RabbitMQ when the
    /// connection closes (a subscription that ends with its subscriber).
    pub exclusive: bool,
    /// Exchanges declared before the bindings are made (idempotent).
    pub exchanges: Vec<(String, ExchangeDeclaration)>,
    /// Bindings made after declaring.
    pub bindings: Vec<QueueBinding>,
    /// Without a `subject` header, a message gets the routing key it was published with as
    /// its `subject` (default true; off for a channel kept in the queue, whose messages come
    /// back as they were sent).
    pub subject_header: bool,
    /// How long connecting may take (default 5 s).
    pub connect_timeout: Duration,
}

impl AmqpSourceConfig {
    /// Consumes `queue`, declaring it durable.
    pub fn new(url: impl Into<String>, queue: impl Into<String>) -> Self {
        AmqpSourceConfig {
            url: AmqpUrl(url.into()),
            queue: queue.into(),
            declare: true,
            exclusive: false,
            exchanges: Vec::new(),
            bindings: Vec::new(),
            subject_header: true,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// The inbound RabbitMQ source.
///
/// At each connection [`AmqpSource`] declares what it was told to (exchanges, the queue durable
/// or exclusive, its bindings), then consumes the queue with a prefetch of the bridge's window
/// and manual acks: a message is acked to RabbitMQ only once the channel accepted it. What was
/// not acked when a connection dies is RabbitMQ's to deliver again, marked redelivered (the
/// eip message's redelivery count is raised). Run it with
/// [`InboundBridge`](crate::bridge::InboundBridge):
///
/// ```no_run
/// use eip_adapters::amqp::{AmqpSource, AmqpSourceConfig};
/// use eip_adapters::bridge::InboundBridge;
/// use eip_core::channel::PointToPoint;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// let config = AmqpSourceConfig::new("amqp://guest:guest@127.0.0.1:5672/%2f", "orders");
/// let bridge = InboundBridge::new(AmqpSource::new(config), orders.clone(), 64).spawn();
/// // ... consume `orders`; every message is acked to RabbitMQ once `orders` took it ...
/// bridge.shutdown().await?;
/// # Ok(()) }
/// ```
pub struct AmqpSource {
    config: AmqpSourceConfig,
    session: Option<(Connection, lapin::Consumer)>,
}

impl AmqpSource {
    /// A source for `config`; it connects when the bridge starts.
    pub fn new(config: AmqpSourceConfig) -> Self {
        AmqpSource {
            config,
            session: None,
        }
    }

    /// Declares the exchanges, the queue and its bindings on `channel`.
    async fn declare(&self, channel: &lapin::Channel) -> Result<(), BridgeError> {
        let config = &self.config;
        let url = &config.url;
        for (name, exchange) in &config.exchanges {
            exchange.declare(channel, name, url).await?;
        }
        if config.declare || config.exclusive {
            let options = QueueDeclareOptions {
                durable: !config.exclusive,
                exclusive: config.exclusive,
                auto_delete: config.exclusive,
                ..QueueDeclareOptions::default()
            };
            connection::declare_queue(channel, &config.queue, options, url).await?;
        }
        for binding in &config.bindings {
            channel
                .queue_bind(
                    config.queue.as_str().into(),
                    binding.exchange.as_str().into(),
                    binding.key.as_str().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| {
                    let what = format!(
                        "binding queue `{}` to exchange `{}` with key `{}`",
                        config.queue, binding.exchange, binding.key
                    );
                    refused(url, what, e)
                })?;
        }
        Ok(())
    }
}

impl Source for AmqpSource {
    type Delivery = AmqpDelivery;

    async fn connect(&mut self, window: usize) -> Result<(), BridgeError> {
        self.session = None;
        let url = &self.config.url;
        let connection = connection::connect(url, self.config.connect_timeout).await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| lost(url, e))?;
        let prefetch = u16::try_from(window).unwrap_or(u16::MAX);
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| lost(url, e))?;
        self.declare(&channel).await?;
        let queue = &self.config.queue;
        let consumer = channel
            .basic_consume(
                queue.as_str().into(),
                ShortString::from(""),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| refused(url, format!("consuming queue `{queue}`"), e))?;
        self.session = Some((connection, consumer));
        Ok(())
    }

    async fn next(&mut self) -> Result<AmqpDelivery, BridgeError> {
        let url = &self.config.url;
        let Some((connection, consumer)) = self.session.as_mut() else {
            return Err(lost(url, "not connected"));
        };
        let Some(next) = while_connected(connection.status(), consumer.next()).await else {
            self.session = None;
            return Err(lost(url, "the connection was closed"));
        };
        match next {
            Some(Ok(delivery)) => Ok(AmqpDelivery(
                delivery,
                self.config.subject_header,
                connection.status().clone(),
            )),
            Some(Err(e)) => {
                self.session = None;
                Err(lost(url, e))
            }
            None => {
                self.session = None;
                Err(lost(url, "the consumer was cancelled"))
            }
        }
    }

    fn describe(&self) -> String {
        format!(
            "rabbitmq queue `{}` at {}",
            self.config.queue,
            self.config.url.redacted()
        )
    }
}

/// A message taken from a RabbitMQ queue, not yet acked: the delivery, whether its routing key
/// may become the subject, and its connection's status.
pub struct AmqpDelivery(lapin::message::Delivery, bool, lapin::ConnectionStatus);

impl Delivery for AmqpDelivery {
    fn message(&self) -> Result<Message, EnvelopeError> {
        Ok(message(&self.0, self.1))
    }

    fn payload(&self) -> bytes::Bytes {
        bytes::Bytes::copy_from_slice(&self.0.data)
    }

    async fn ack(self) -> Result<(), BridgeError> {
        let failed = |reason: String| BridgeError::Connection {
            broker: "rabbitmq".to_owned(),
            reason: format!("acknowledging: {reason}"),
        };
        match while_connected(&self.2, self.0.acker.ack(BasicAckOptions::default())).await {
            Some(acked) => acked.map(drop).map_err(|e| failed(e.to_string())),
            None => Err(failed("the connection was closed".to_owned())),
        }
    }
}
