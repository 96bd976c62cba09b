//! The outbound half: a channel's messages published to an exchange, `Ok` once confirmed.

use std::time::Duration;

use eip_core::message::Message;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::{Confirmation, Connection};

use super::connection::{self, AmqpUrl, ExchangeDeclaration, lost};
use super::properties::properties;
use eip_core::template::{Syntax, Template};

use crate::bridge::{
    Backoff, BridgeError, DestinationError, DestinationTemplate, Outbound, Publisher, Reconnect,
};

/// The longest routing key AMQP 0-9-1 carries (a short string).
const MAX_KEY_BYTES: usize = 255;

/// The routing key of each published message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingKey {
    /// The same key for every message.
    Fixed(String),
    /// The message's `subject` header (the empty key when it has none).
    Subject,
    /// A key made from each message (`orders.{$.region}`); a message that can not fill it in
    /// is refused permanently, as is a key longer than 255 bytes.
    Template(DestinationTemplate),
}

/// Why a routing key as written can not be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("routing key `{key}`: {reason}")]
pub struct RoutingKeyError {
    /// The key as written.
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

impl RoutingKey {
    /// The placeholders a routing key takes: those of every destination.
    pub const SYNTAX: Syntax<'static> = DestinationTemplate::SYNTAX;

    /// A fixed key, `{subject}` alone, or a template. An unknown placeholder or an unclosed
    /// brace is refused, rather than published as a literal key no binding expects.
    pub fn parse(key: &str) -> Result<Self, RoutingKeyError> {
        DestinationTemplate::parse_into(key, Self::new)
    }

    /// The key of a parsed template (one parsed with more kinds, such as jq): its own text
    /// fits in a routing key.
    pub fn new(template: Template) -> Result<Self, RoutingKeyError> {
        let fixed = template.sample("");
        if fixed.len() > MAX_KEY_BYTES {
            return Err(RoutingKeyError {
                key: template.as_str().to_owned(),
                reason: format!("{} bytes, more than {MAX_KEY_BYTES}", fixed.len()),
            });
        }
        Ok(match template {
            t if t.is_fixed() => RoutingKey::Fixed(fixed),
            t if t.is_subject_alone() => RoutingKey::Subject,
            t => RoutingKey::Template(t.into()),
        })
    }

    /// The key `msg` is published with, or why it has none.
    fn for_message(&self, msg: &Message) -> Result<String, RoutingKeyError> {
        let template = match self {
            RoutingKey::Fixed(key) => return Ok(key.clone()),
            RoutingKey::Subject => {
                return Ok(msg.subject().ok().flatten().unwrap_or_default().to_owned());
            }
            RoutingKey::Template(template) => template,
        };
        let key = template.render(msg, |_, value| Ok(value.into()))?;
        match key.len() {
            n if n > MAX_KEY_BYTES => Err(RoutingKeyError::unfilled(
                template.as_str(),
                format!("it made a key of {n} bytes, more than {MAX_KEY_BYTES}"),
            )),
            _ => Ok(key),
        }
    }
}

impl DestinationError for RoutingKeyError {
    fn template(template: &str, reason: String) -> Self {
        RoutingKeyError {
            key: template.to_owned(),
            reason,
        }
    }

    fn missing_subject(template: &str) -> Self {
        Self::template(template, "the message has no subject".to_owned())
    }

    fn unfilled(template: &str, reason: String) -> Self {
        Self::template(template, reason)
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

/// The outbound RabbitMQ adapter. Cheap to clone: clones share the connection.
///
/// [`AmqpOutbound`] publishes each message persistent (delivery mode 2) to the configured
/// exchange, with a fixed routing key or the message's `subject`, and answers `Ok` only once
/// the broker confirmed it (publisher confirms). A negative confirm, or a message returned as
/// unroutable (publishing is `mandatory`), is an error, so the consumer driving the adapter
/// retries it and finally dead-letters it. The adapter owns its connection: it connects on
/// first use, and after any failure drops it and connects again on a later call, never sooner
/// than its [`Backoff`] allows.
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
        let key = config.routing_key.for_message(msg).map_err(|reason| {
            let what = format!("a publish to exchange `{}`", config.exchange);
            BridgeError::refused(config.url.broker(), what, reason, true)
        })?;
        let (generation, channel) = self.channel().await?;
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

    fn health(&self) -> Option<crate::bridge::ConnectionHealth> {
        Some(self.link.health())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routing_key_is_fixed_text_the_subject_or_a_template() {
        assert_eq!(RoutingKey::parse("{subject}"), Ok(RoutingKey::Subject));
        assert_eq!(
            RoutingKey::parse("orders.eu"),
            Ok(RoutingKey::Fixed("orders.eu".to_owned()))
        );
        let key = RoutingKey::parse("orders.{$.region}.{subject}").unwrap();
        assert!(matches!(key, RoutingKey::Template(_)));
        let msg = Message::builder(r#"{"region": "eu"}"#)
            .subject("paid")
            .build();
        assert_eq!(key.for_message(&msg).unwrap(), "orders.eu.paid");
        let e = key
            .for_message(&Message::new("{}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`$.region` selects nothing"), "{e}");
        // `{subject}` alone keeps publishing a message without one with the empty key.
        assert_eq!(
            RoutingKey::Subject.for_message(&Message::new("")).unwrap(),
            ""
        );
    }

    #[test]
    fn an_unknown_placeholder_an_unclosed_brace_or_a_long_key_is_refused() {
        for bad in [
            "{header.x",
            "orders.{header.region",
            "{nope}",
            "{subject",
            "orders}",
        ] {
            let e = RoutingKey::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert!(RoutingKey::parse(&"k".repeat(256)).is_err());
        let long = RoutingKey::parse(&format!("{}.{{header.x}}", "k".repeat(250))).unwrap();
        let msg = Message::builder("").header("x", "123456").build();
        let e = long.for_message(&msg).unwrap_err().to_string();
        assert!(e.contains("more than 255"), "{e}");
    }
}
