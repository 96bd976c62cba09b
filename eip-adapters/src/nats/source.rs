//! The inbound half: a durable pull consumer on a JetStream stream, read by an
//! [`InboundBridge`](crate::bridge::InboundBridge).

use std::time::Duration;

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::consumer::{AckPolicy, pull};
use async_nats::jetstream::{self, AckKind};
use eip_core::message::{Message, names};

use super::connection::{self, Link, LinkSettings, StreamDeclaration};
use super::pull::Puller;
use crate::bridge::envelope::{self, EnvelopeError};
use crate::bridge::{BridgeError, Delivery, Source, config};

/// Where a [`JetStreamSource`] reads. Plain data: a flow file can fill it.
#[derive(Debug, Clone)]
pub struct JetStreamSourceConfig {
    /// The server (`nats://127.0.0.1:4222`).
    pub url: String,
    /// The stream read, created if missing when it has subjects.
    pub stream: StreamDeclaration,
    /// The durable consumer's name: bridges with the same name share its messages (competing
    /// consumers), and it remembers what was acknowledged across restarts.
    pub consumer: String,
    /// Only the stream's messages on these subjects (none: all of them).
    pub filter_subject: Option<String>,
    /// How long JetStream waits for an ack before delivering a message again (30 s by
    /// default). Longer than a full channel may hold a delivery, or it comes twice.
    pub ack_wait: Duration,
    /// A consumer created now starts with the messages stored from now on, not with the
    /// stream's first (a subscription joining later does not see earlier messages).
    pub deliver_new: bool,
    /// The server removes the consumer after this long with nobody reading it (none: it
    /// stays until deleted).
    pub inactive_threshold: Option<Duration>,
    /// Without a `subject` header, a message gets the NATS subject it was published to as
    /// its `subject` (default true; off for a channel kept in the stream, whose messages come
    /// back as they were sent).
    pub subject_header: bool,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long an API request or a double ack waits for the server's answer.
    pub request_timeout: Duration,
    /// How often the server says it is there while no message comes (a silence of two of
    /// these is a lost connection).
    pub heartbeat: Duration,
}

impl JetStreamSourceConfig {
    /// Reads `stream` with the durable consumer `consumer` on the server at `url`.
    pub fn new(
        url: impl Into<String>,
        stream: StreamDeclaration,
        consumer: impl Into<String>,
    ) -> Self {
        JetStreamSourceConfig {
            url: url.into(),
            stream,
            consumer: consumer.into(),
            filter_subject: None,
            ack_wait: Duration::from_secs(30),
            deliver_new: false,
            inactive_threshold: None,
            subject_header: true,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            heartbeat: Duration::from_secs(5),
        }
    }

    /// Every problem with the configuration, or none.
    fn check(&self) -> Result<(), BridgeError> {
        let mut problems = Vec::new();
        if self.url.trim().is_empty() {
            problems.push("the url is empty".to_owned());
        }
        self.stream.problems(&mut problems);
        if !connection::is_name(&self.consumer) {
            problems.push(format!(
                "consumer name `{}` must be non-empty, without whitespace, `.`, `*` or `>`",
                self.consumer
            ));
        }
        config::zero_durations(
            &mut problems,
            &[
                ("ack_wait", self.ack_wait),
                ("connect_timeout", self.connect_timeout),
                ("request_timeout", self.request_timeout),
                ("heartbeat", self.heartbeat),
            ],
        );
        config::checked("jetstream source", problems)
    }
}

/// A durable pull consumer as a bridge [`Source`].
///
/// At each connection [`JetStreamSource`] creates the stream if it is missing (when it was
/// given subjects) and creates or updates its durable consumer: explicit acks, at most `window`
/// messages delivered and not acknowledged (`max_ack_pending`), and `ack_wait` before JetStream
/// delivers again a message nobody acknowledged. Then it pulls, `window` at a time, one pull
/// request outstanding whenever the bridge asks for a message (a pull request
/// is counted exactly, so a window of one never waits for a message nobody asked for).
///
/// Each delivery becomes an eip message through [`envelope::from_text`] over its NATS headers
/// (the `Nats-…` headers are JetStream's and stay out, but a `Nats-Msg-Id` that is not the
/// message's eip id, set by a producer that is not eip, is kept as `external-id`); without a
/// `subject` header the NATS subject it was published to becomes the eip `subject`. A delivery JetStream makes again
/// keeps its eip id (it is in the message's `eip-id` header) and has its eip redelivery count
/// raised by the deliveries before it. [`ack`](Delivery::ack) is a double ack: it completes
/// once the server confirmed it, so an ack lost with a connection is seen as an error (the
/// bridge reconnects, JetStream delivers the message again: a duplicate, never a loss).
///
/// ```no_run
/// use eip_adapters::nats::{JetStreamSource, JetStreamSourceConfig, StreamDeclaration};
/// use eip_core::channel::PointToPoint;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// let config = JetStreamSourceConfig::new(
///     "nats://127.0.0.1:4222",
///     StreamDeclaration::new("ORDERS", ["orders.>"]),
///     "eip-orders",
/// );
/// // At most 64 messages delivered and not yet in the channel.
/// let bridge = JetStreamSource::new(config)?.bridge(orders.clone(), 64).spawn();
/// # bridge.shutdown().await?;
/// # Ok(()) }
/// ```
pub struct JetStreamSource {
    config: JetStreamSourceConfig,
    broker: std::sync::Arc<str>,
    reading: Option<Reading>,
}

struct Reading {
    link: Link,
    puller: Puller,
}

impl std::fmt::Debug for JetStreamSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamSource")
            .field("broker", &self.broker)
            .field("stream", &self.config.stream.name)
            .field("consumer", &self.config.consumer)
            .finish()
    }
}

impl JetStreamSource {
    /// A source for `config` (checked whole); it connects when its bridge starts.
    pub fn new(config: JetStreamSourceConfig) -> Result<Self, BridgeError> {
        config.check()?;
        let broker = connection::describe(&config.url).into();
        Ok(JetStreamSource {
            config,
            broker,
            reading: None,
        })
    }

    /// The bridge feeding `channel` from this source, at most `window` messages unacknowledged:
    /// `.spawn()` runs it.
    pub fn bridge(
        self,
        channel: impl Into<eip_core::channel::Channel>,
        window: usize,
    ) -> crate::bridge::InboundBridge<Self> {
        crate::bridge::InboundBridge::new(self, channel, window)
    }

    fn lost(&self, reason: String) -> BridgeError {
        BridgeError::Connection {
            broker: self.broker.to_string(),
            reason,
        }
    }
}

impl Source for JetStreamSource {
    type Delivery = JetStreamDelivery;

    async fn connect(&mut self, window: usize) -> Result<(), BridgeError> {
        // Whatever was read on the old connection is JetStream's to deliver again.
        self.reading = None;
        let config = &self.config;
        let link = connection::connect(LinkSettings {
            url: &config.url,
            name: "eip jetstream source",
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
        })
        .await?;
        let stream = config.stream.declare(&link.js, &self.broker).await?;
        let window = window.max(1);
        let consumer = stream
            .create_consumer(pull::Config {
                durable_name: Some(config.consumer.clone()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: config.ack_wait,
                max_ack_pending: i64::try_from(window).unwrap_or(i64::MAX),
                filter_subject: config.filter_subject.clone().unwrap_or_default(),
                deliver_policy: if config.deliver_new {
                    async_nats::jetstream::consumer::DeliverPolicy::New
                } else {
                    async_nats::jetstream::consumer::DeliverPolicy::All
                },
                inactive_threshold: config.inactive_threshold.unwrap_or_default(),
                ..Default::default()
            })
            .await
            .map_err(|e| BridgeError::Refused {
                broker: self.broker.to_string(),
                what: format!(
                    "consumer {} on stream {}",
                    config.consumer, config.stream.name
                ),
                reason: e.to_string(),
                permanent: false,
            })?;
        let puller = Puller::open(&link.js, consumer, window, config.heartbeat)
            .await
            .map_err(|e| self.lost(format!("pulling from consumer {}: {e}", config.consumer)))?;
        self.reading = Some(Reading { link, puller });
        Ok(())
    }

    async fn next(&mut self) -> Result<JetStreamDelivery, BridgeError> {
        let Some(reading) = self.reading.as_mut() else {
            return Err(self.lost("not connected".to_owned()));
        };
        let next = tokio::select! {
            biased;
            () = reading.link.lost() => Err("the connection was lost".to_owned()),
            next = reading.puller.next() => next
                .map_err(|e| format!("reading consumer {}: {e}", self.config.consumer)),
        };
        match next {
            Ok(message) => Ok(JetStreamDelivery {
                message,
                broker: self.broker.clone(),
                subject_header: self.config.subject_header,
            }),
            Err(reason) => {
                self.reading = None;
                Err(self.lost(reason))
            }
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} stream {} consumer {}",
            self.broker, self.config.stream.name, self.config.consumer
        )
    }
}

/// A message delivered by a [`JetStreamSource`], not yet acknowledged.
pub struct JetStreamDelivery {
    message: jetstream::Message,
    broker: std::sync::Arc<str>,
    subject_header: bool,
}

impl std::fmt::Debug for JetStreamDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamDelivery")
            .field("subject", &self.message.subject.as_str())
            .finish()
    }
}

impl JetStreamDelivery {
    /// How many times JetStream delivered it, this time included (1 the first time).
    pub fn delivered(&self) -> u32 {
        self.message
            .info()
            .map_or(1, |info| u32::try_from(info.delivered).unwrap_or(1).max(1))
    }
}

impl Delivery for JetStreamDelivery {
    fn message(&self) -> Result<Message, EnvelopeError> {
        let headers = self.message.headers.iter().flat_map(|headers| {
            headers.iter().flat_map(|(name, values)| {
                values
                    .iter()
                    .map(move |value| (name.as_ref(), value.as_str()))
            })
        });
        let subject = Some(self.message.subject.as_str()).filter(|_| self.subject_header);
        let mut msg = to_message(headers, subject, self.message.payload.clone())?;
        let before = self.delivered() - 1;
        if before > 0 {
            let count = msg.redelivery_count().unwrap_or(0).saturating_add(before);
            msg.headers_mut()
                .insert(names::REDELIVERY_COUNT, i64::from(count));
        }
        Ok(msg)
    }

    fn payload(&self) -> bytes::Bytes {
        self.message.payload.clone()
    }

    async fn ack(self) -> Result<(), BridgeError> {
        self.message
            .double_ack_with(AckKind::Ack)
            .await
            .map_err(|e| BridgeError::Connection {
                broker: self.broker.to_string(),
                reason: format!(
                    "acknowledging a message of subject {}: {e}",
                    self.message.subject
                ),
            })
    }
}

/// The eip message a JetStream delivery carries: its headers without JetStream's own
/// (`Nats-…`), and its NATS subject as `subject` when the headers give none. A
/// `Nats-Msg-Id` that is not the message's eip id (a producer that is not eip set it) is kept
/// in the header `external-id`, unless the headers give one.
pub(crate) fn to_message<'a>(
    headers: impl Iterator<Item = (&'a str, &'a str)>,
    subject: Option<&str>,
    payload: bytes::Bytes,
) -> Result<Message, EnvelopeError> {
    let mut nats_id = None;
    let pairs = headers.filter(|(name, value)| {
        if name.eq_ignore_ascii_case(NATS_MESSAGE_ID.as_ref()) {
            nats_id = Some(*value);
        }
        !is_jetstream_header(name)
    });
    let mut msg = envelope::from_text(pairs, payload)?;
    if let Some(subject) = subject
        && msg.headers().get(names::SUBJECT).is_none()
    {
        msg.headers_mut().insert(names::SUBJECT, subject.to_owned());
    }
    if let Some(nats_id) = nats_id
        && nats_id != msg.id().to_string()
        && !msg.headers().contains(envelope::EXTERNAL_ID)
    {
        msg.headers_mut().insert(envelope::EXTERNAL_ID, nats_id);
    }
    Ok(msg)
}

fn is_jetstream_header(name: &str) -> bool {
    name.get(..5)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("nats-"))
}

#[cfg(test)]
mod tests {
    use eip_core::message::HeaderValue;

    use super::*;

    #[test]
    fn the_nats_subject_is_the_eip_subject_unless_a_header_says_otherwise() {
        let msg = to_message([].into_iter(), Some("orders.eu"), bytes::Bytes::new()).unwrap();
        assert_eq!(msg.subject().unwrap(), Some("orders.eu"));
        let msg = to_message([].into_iter(), None, bytes::Bytes::new()).unwrap();
        assert_eq!(
            msg.subject().unwrap(),
            None,
            "a channel's message comes back as sent"
        );
        let msg = to_message(
            [("subject", "orders.us")].into_iter(),
            Some("eip.orders.us"),
            bytes::Bytes::new(),
        )
        .unwrap();
        assert_eq!(msg.subject().unwrap(), Some("orders.us"));
    }

    #[test]
    fn the_nats_msg_id_eip_set_to_its_own_id_is_no_external_id() {
        let id = eip_core::MessageId::new().to_string();
        let pairs = [("Nats-Msg-Id", id.as_str()), (envelope::ID, id.as_str())];
        let msg = to_message(pairs.into_iter(), None, bytes::Bytes::new()).unwrap();
        assert_eq!(msg.id().to_string(), id);
        assert!(msg.headers().get("external-id").is_none());
    }

    #[test]
    fn jetstream_s_own_headers_stay_out_of_the_message() {
        let msg = to_message(
            [
                ("Nats-Msg-Id", "abc"),
                ("nats-expected-stream", "X"),
                ("n", "1"),
            ]
            .into_iter(),
            Some("a"),
            bytes::Bytes::new(),
        )
        .unwrap();
        let names: Vec<&str> = msg.headers().iter().map(|(n, _)| n).collect();
        assert!(
            names.contains(&"n") && names.contains(&"subject"),
            "{names:?}"
        );
        assert_eq!(
            msg.headers().get("external-id"),
            Some(&HeaderValue::Str("abc".to_owned())),
            "a foreign Nats-Msg-Id is kept for correlation"
        );
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(
            msg.headers().get("n"),
            Some(&HeaderValue::Str("1".to_owned()))
        );
    }
}
