//! The outbound half: a channel's messages published to an exchange, `Ok` once confirmed.
//!
//! [`AmqpOutbound`] publishes each message persistent (delivery mode 2) to the configured
//! exchange, with a fixed routing key or the message's `subject`, and answers `Ok` only once
//! the broker confirmed it (publisher confirms). A negative confirm, or a message returned as
//! unroutable (publishing is `mandatory`), is an error, so the consumer driving the adapter
//! retries it and finally dead-letters it. The adapter owns its connection: it connects on
//! first use, and after any failure drops it and connects again on a later call, never sooner
//! than its [`Backoff`] allows.

use std::time::Duration;

use eip_core::message::Message;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::{Confirmation, Connection};

use super::connection::{self, AmqpUrl, ExchangeDeclaration, lost};
use super::properties::properties;
use crate::bridge::{Backoff, BridgeError, DestinationTemplate, Outbound, Publisher, Reconnect};

/// The routing key of each published message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingKey {
    /// The same key for every message.
    Fixed(String),
    /// The message's `subject` header (the empty key when it has none).
    Subject,
}

/// Why a routing key as written can not be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("routing key `{key}`: {reason}")]
pub struct RoutingKeyError {
    /// The key as written.
    pub key: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl RoutingKey {
    /// `{subject}` alone, or a fixed key (a [`DestinationTemplate`] of those two shapes). A
    /// brace anywhere else is a placeholder this key can not fill (`{header.x}`,
    /// `orders.{subject}`, or one left unclosed): refused, rather than published as a literal
    /// key no binding expects.
    pub fn parse(key: &str) -> Result<Self, RoutingKeyError> {
        let refused = || RoutingKeyError {
            key: key.to_owned(),
            reason: "the only placeholder is `{subject}`, standing alone for the whole key",
        };
        let template = DestinationTemplate::parse(key).map_err(|_| refused())?;
        if !template.uses_subject() {
            Ok(RoutingKey::Fixed(key.to_owned()))
        } else if template.literal_text().all(str::is_empty) {
            Ok(RoutingKey::Subject)
        } else {
            Err(refused())
        }
    }

    /// The key `msg` is published with.
    fn for_message(&self, msg: &Message) -> String {
        match self {
            RoutingKey::Fixed(key) => key.clone(),
            RoutingKey::Subject => msg.subject().ok().flatten().unwrap_or_default().to_owned(),
        }
    }
}

/// Where and how an [`AmqpOutbound`] publishes. Plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpOutboundConfig {
    /// The server.
    pub url: AmqpUrl,
    /// The exchange (`""`: the default exchange, where the routing key names a queue).
    pub exchange: String,
    /// The routing key.
    pub routing_key: RoutingKey,
    /// Declare the exchange first (idempotent; again after every reconnect).
    pub declare: Option<ExchangeDeclaration>,
    /// A message no queue takes is an error (default true). Off for a fan-out, where a
    /// message nobody subscribes to goes nowhere by design.
    pub mandatory: bool,
    /// A message with an `expires-at` also gets RabbitMQ's per-message TTL (default true),
    /// so RabbitMQ drops it if it expires while queued. Off for a channel kept in a queue: eip
    /// dead-letters what expired when it is delivered, as on any channel.
    pub broker_expiration: bool,
    /// A durable queue to declare first (idempotent; again after every reconnect): the
    /// queue the default exchange publishes to, there before anyone reads it.
    pub declare_queue: Option<String>,
    /// How long connecting may take (default 5 s).
    pub connect_timeout: Duration,
    /// How long a publish may wait for its confirm (default 30 s).
    pub confirm_timeout: Duration,
}

impl AmqpOutboundConfig {
    /// Publishes to `exchange` with the message's subject as routing key.
    pub fn new(url: impl Into<String>, exchange: impl Into<String>) -> Self {
        AmqpOutboundConfig {
            url: AmqpUrl(url.into()),
            exchange: exchange.into(),
            routing_key: RoutingKey::Subject,
            declare: None,
            mandatory: true,
            broker_expiration: true,
            declare_queue: None,
            connect_timeout: Duration::from_secs(5),
            confirm_timeout: Duration::from_secs(30),
        }
    }
}

/// The outbound RabbitMQ adapter; see the [module](self). Cheap to clone: clones share the
/// connection.
pub type AmqpOutbound = Outbound<AmqpPublisher>;

impl AmqpOutbound {
    /// An adapter for `config`; it connects on first use.
    pub fn new(config: AmqpOutboundConfig) -> Self {
        Outbound::from_publisher(AmqpPublisher {
            link: Reconnect::new(config.url.broker(), Backoff::default()),
            config,
        })
    }

    /// Connects now (declaring the exchange), so that a wrong URL or a refused declaration
    /// shows at start rather than on the first message.
    pub async fn connect(&self) -> Result<(), BridgeError> {
        self.get_ref().channel().await.map(drop)
    }
}

/// How an [`AmqpOutbound`] publishes: its configuration and its connection.
pub struct AmqpPublisher {
    config: AmqpOutboundConfig,
    /// The connection and its confirm-mode channel, made on demand.
    link: Reconnect<(Connection, lapin::Channel)>,
}

impl AmqpPublisher {
    /// The channel to publish on (with its connection's generation), connecting first if
    /// need be.
    async fn channel(&self) -> Result<(u64, lapin::Channel), BridgeError> {
        let lost = |(connection, channel): &(Connection, lapin::Channel)| {
            !(connection.status().connected() && channel.status().connected())
        };
        self.link
            .get(lost, |(_, channel)| channel.clone(), || self.open())
            .await
    }

    async fn open(&self) -> Result<(Connection, lapin::Channel), BridgeError> {
        let config = &self.config;
        let url = &config.url;
        let connection = connection::connect(url, config.connect_timeout).await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| lost(url, e))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| lost(url, e))?;
        if let Some(declare) = &config.declare {
            declare.declare(&channel, &config.exchange, url).await?;
        }
        if let Some(queue) = &config.declare_queue {
            let options = QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            };
            connection::declare_queue(&channel, queue, options, url).await?;
        }
        Ok((connection, channel))
    }
}

impl Publisher for AmqpPublisher {
    type Receipt = ();

    async fn publish(&self, msg: &Message) -> Result<(), BridgeError> {
        let config = &self.config;
        let (generation, channel) = self.channel().await?;
        let key = config.routing_key.for_message(msg);
        let refused = |reason: String| {
            let what = format!(
                "a publish to exchange `{}` with key `{key}`",
                config.exchange
            );
            BridgeError::refused(config.url.broker(), what, reason, false)
        };
        let options = BasicPublishOptions {
            mandatory: config.mandatory,
            ..BasicPublishOptions::default()
        };
        let published = channel
            .basic_publish(
                config.exchange.as_str().into(),
                key.as_str().into(),
                options,
                msg.payload(),
                properties(msg, config.broker_expiration),
            )
            .await;
        let confirm = match published {
            Ok(confirm) => confirm,
            Err(e) => {
                self.link.forget(generation).await;
                return Err(lost(&config.url, e));
            }
        };
        match tokio::time::timeout(config.confirm_timeout, confirm).await {
            Ok(Ok(Confirmation::Ack(None))) => Ok(()),
            Ok(Ok(Confirmation::Ack(Some(returned)))) => Err(refused(format!(
                "unroutable: no queue is bound for it ({})",
                returned.reply_text
            ))),
            Ok(Ok(Confirmation::Nack(_))) => Err(refused("a negative confirm".to_owned())),
            Ok(Ok(Confirmation::NotRequested)) => Err(refused("no confirm".to_owned())),
            Ok(Err(e)) => {
                self.link.forget(generation).await;
                Err(lost(&config.url, e))
            }
            Err(_) => {
                self.link.forget(generation).await;
                Err(lost(
                    &config.url,
                    format!("no confirm within {:?}", config.confirm_timeout),
                ))
            }
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} exchange `{}`",
            self.config.url.broker(),
            self.config.exchange
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routing_key_is_fixed_text_or_the_subject_and_no_other_placeholder() {
        assert_eq!(RoutingKey::parse("{subject}"), Ok(RoutingKey::Subject));
        assert_eq!(
            RoutingKey::parse("orders.eu"),
            Ok(RoutingKey::Fixed("orders.eu".to_owned()))
        );
        for bad in [
            "{header.x",
            "orders.{header.region",
            "{header.region}",
            "orders.{subject}",
            "{subject",
            "orders}",
        ] {
            let e = RoutingKey::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
            assert!(e.to_string().contains("`{subject}`"), "{e}");
        }
    }
}
