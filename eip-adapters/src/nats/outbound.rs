//! The outbound half: a channel's messages published to a JetStream subject.

use std::time::Duration;

use async_nats::header::{HeaderMap, HeaderName, HeaderValue, NATS_MESSAGE_ID};
use async_nats::jetstream::{self, context::PublishErrorKind};
use eip_core::Message;

use super::connection::{self, Link, LinkSettings, StreamDeclaration};
use super::subject::SubjectTemplate;
use crate::bridge::{Backoff, BridgeError, Outbound, Publisher, Reconnect, config, envelope};

/// Where and how a [`JetStreamOutbound`] publishes. Plain data: a flow file can fill it.
#[derive(Debug, Clone)]
pub struct JetStreamOutboundConfig {
    /// The server (`nats://127.0.0.1:4222`).
    pub url: String,
    /// The subject each message is published to.
    pub subject: SubjectTemplate,
    /// A stream to create if it is missing, at each connection (none: a stream must already
    /// take the subjects published to).
    pub stream: Option<StreamDeclaration>,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long a publish waits for JetStream's ack (and an API request for its answer).
    pub publish_timeout: Duration,
    /// The waits between connection attempts.
    pub backoff: Backoff,
}

impl JetStreamOutboundConfig {
    /// Publishes to `subject` on the server at `url`, 5 s to connect and 5 s per ack, no
    /// stream declared.
    pub fn new(url: impl Into<String>, subject: SubjectTemplate) -> Self {
        JetStreamOutboundConfig {
            url: url.into(),
            subject,
            stream: None,
            connect_timeout: Duration::from_secs(5),
            publish_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
        }
    }

    /// Every problem with the configuration, or none.
    fn check(&self) -> Result<(), BridgeError> {
        let mut problems = Vec::new();
        if self.url.trim().is_empty() {
            problems.push("the url is empty".to_owned());
        }
        if let Some(stream) = &self.stream {
            stream.problems(&mut problems);
        }
        config::zero_durations(
            &mut problems,
            &[
                ("connect_timeout", self.connect_timeout),
                ("publish_timeout", self.publish_timeout),
            ],
        );
        config::checked("jetstream outbound", problems)
    }
}

/// What JetStream answered for one publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The stream that stored the message.
    pub stream: String,
    /// Its sequence number in the stream.
    pub sequence: u64,
    /// Whether the stream had it already (same eip id within the duplicate window): a retry.
    pub duplicate: bool,
}

/// Publishes messages to JetStream, answering once stored.
///
/// [`JetStreamOutbound`] is a `tower::Service<Message>` driven by a
/// [`Consumer`](eip_core::endpoint::Consumer). **Ok means stored**: a call answers `Ok` only
/// once JetStream's publish ack came back, so the consumer acks the eip message only when a
/// stream holds it. Each publish carries `Nats-Msg-Id` = the eip message id: a retry after a
/// lost ack (a timeout, a cut connection) is dropped by JetStream as a duplicate within the
/// stream's duplicate window, and answered `Ok` like the first.
///
/// The adapter owns its connection: made at the first call (or by
/// [`connect`](JetStreamOutbound::connect)), dropped when the client reports it lost or a
/// publish ack times out, made again by a later call. After a failed attempt, calls fail at
/// once until the [`Backoff`] wait is over, so a broker that is down costs the channel's
/// redeliveries, not a connection attempt per message.
///
/// ```no_run
/// use eip_adapters::bridge::BridgeError;
/// use eip_adapters::nats::{JetStreamOutbound, JetStreamOutboundConfig, StreamDeclaration, SubjectTemplate};
/// use eip_core::channel::PointToPoint;
/// use eip_core::endpoint::Consumer;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// // Each message goes to the NATS subject its `subject` header names.
/// let mut config = JetStreamOutboundConfig::new("nats://127.0.0.1:4222", SubjectTemplate::parse("{subject}")?);
/// config.stream = Some(StreamDeclaration::new("ORDERS", ["orders.>"]));
/// let outbound = JetStreamOutbound::new(config)?;
/// let consumer = Consumer::new(orders.receiver(), outbound)
///     .concurrency(32) // publishes awaiting their ack
///     .permanent_errors(BridgeError::is_permanent)
///     .spawn();
/// # consumer.shutdown().await;
/// # Ok(()) }
/// ```
pub type JetStreamOutbound = Outbound<JetStreamPublisher>;

impl JetStreamOutbound {
    /// An adapter for `config` (checked whole); it connects at the first call.
    pub fn new(config: JetStreamOutboundConfig) -> Result<Self, BridgeError> {
        config.check()?;
        let broker = connection::describe(&config.url);
        let backoff = config.backoff.clone();
        Ok(Outbound::from_publisher(JetStreamPublisher {
            config,
            link: Reconnect::new(broker.clone(), backoff),
            broker,
        }))
    }

    /// Connects now (and declares the stream) rather than at the first call.
    pub async fn connect(&self) -> Result<(), BridgeError> {
        self.get_ref().context().await.map(drop)
    }
}

/// How a [`JetStreamOutbound`] publishes: its configuration and its connection.
pub struct JetStreamPublisher {
    config: JetStreamOutboundConfig,
    broker: String,
    link: Reconnect<Link>,
}

impl JetStreamPublisher {
    /// The live connection's JetStream context, connecting if there is none.
    async fn context(&self) -> Result<(u64, jetstream::Context), BridgeError> {
        self.link
            .get(Link::is_lost, |live| live.js.clone(), || self.open())
            .await
    }

    async fn open(&self) -> Result<Link, BridgeError> {
        let config = &self.config;
        let live = connection::connect(LinkSettings {
            url: &config.url,
            name: "eip jetstream outbound",
            connect_timeout: config.connect_timeout,
            request_timeout: config.publish_timeout,
        })
        .await?;
        if let Some(stream) = &config.stream {
            stream.declare(&live.js, &self.broker).await?;
        }
        tracing::info!(broker = %self.broker, subject = %config.subject, "jetstream outbound connected");
        Ok(live)
    }

    fn refused(&self, what: &str, reason: String, permanent: bool) -> BridgeError {
        BridgeError::refused(&self.broker, what, reason, permanent)
    }
}

/// The NATS headers carrying `msg`: [`envelope::to_text`], and `Nats-Msg-Id` = its id. A
/// header whose name or text NATS can not carry (a `:` in the name, a line break in the
/// value) is an error naming it.
pub(crate) fn headers(msg: &Message) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (name, text) in envelope::to_text(msg) {
        let header: HeaderName = name
            .parse()
            .map_err(|_| format!("header name `{name}` can not be a NATS header name"))?;
        let value: HeaderValue = text
            .parse()
            .map_err(|_| format!("header `{name}` has a line break, NATS headers can not"))?;
        headers.insert(header, value);
    }
    let id: HeaderValue = msg
        .id()
        .to_string()
        .parse()
        .map_err(|_| "the message id is not a header value".to_owned())?;
    headers.insert(NATS_MESSAGE_ID, id);
    Ok(headers)
}

impl Publisher for JetStreamPublisher {
    type Receipt = Published;

    async fn publish(&self, msg: &Message) -> Result<Published, BridgeError> {
        let subject = self
            .config
            .subject
            .render(msg)
            .map_err(|e| self.refused("publish", e.to_string(), true))?;
        let headers = headers(msg).map_err(|reason| {
            self.refused(&format!("publish to subject {subject}"), reason, true)
        })?;
        let (generation, js) = self.context().await?;
        let publish = jetstream::message::PublishMessage::build()
            .payload(msg.payload().clone())
            .headers(headers);
        let acked = match js.send_publish(subject.clone(), publish).await {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match acked {
            Ok(ack) => Ok(Published {
                stream: ack.stream,
                sequence: ack.sequence,
                duplicate: ack.duplicate,
            }),
            Err(e) => {
                let what = format!("publish to subject {subject}");
                Err(match e.kind() {
                    PublishErrorKind::StreamNotFound => self.refused(
                        &what,
                        format!("no JetStream stream takes subject {subject} (no responders)"),
                        false,
                    ),
                    PublishErrorKind::MaxPayloadExceeded => {
                        self.refused(&what, e.to_string(), true)
                    }
                    PublishErrorKind::WrongLastMessageId
                    | PublishErrorKind::WrongLastSequence
                    | PublishErrorKind::MaxAckPending => self.refused(&what, e.to_string(), false),
                    // No ack in time, a broken pipe: the connection is suspect, make another.
                    _ => {
                        self.link.forget(generation).await;
                        BridgeError::Connection {
                            broker: self.broker.clone(),
                            reason: format!("{what}: {e}"),
                        }
                    }
                })
            }
        }
    }

    fn describe(&self) -> String {
        format!("{} subject {}", self.broker, self.config.subject)
    }

    fn health(&self) -> Option<crate::bridge::ConnectionHealth> {
        Some(self.link.health())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_carry_the_envelope_and_the_id_for_deduplication() {
        let msg = Message::builder(&b"x"[..])
            .subject("orders.eu")
            .hop_budget(3)
            .build();
        let headers = headers(&msg).unwrap();
        let id = msg.id().to_string();
        assert_eq!(
            headers.get(NATS_MESSAGE_ID).map(HeaderValue::as_str),
            Some(id.as_str())
        );
        assert_eq!(
            headers.get(envelope::ID).map(HeaderValue::as_str),
            Some(id.as_str())
        );
        assert_eq!(
            headers.get("hop-budget").map(HeaderValue::as_str),
            Some("3")
        );
    }

    #[test]
    fn a_header_nats_can_not_carry_is_named() {
        let msg = Message::builder(&b"x"[..]).header("note", "a\r\nb").build();
        assert_eq!(
            headers(&msg).unwrap_err(),
            "header `note` has a line break, NATS headers can not"
        );
        let msg = Message::builder(&b"x"[..]).header("a:b", "x").build();
        assert!(headers(&msg).unwrap_err().contains("`a:b`"));
    }
}
