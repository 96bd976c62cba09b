//! The RabbitMQ (AMQP 0-9-1) bridge: a channel published to an exchange with a routing key
//! (publisher confirms), and a queue feeding a channel. See [`bridge`](crate::bridge).
//!
//! **Out** ([`AmqpOutbound`], a `tower::Service<Message>`): each message is published
//! persistent (delivery mode 2) to the configured exchange, with a fixed routing key or the
//! message's `subject`, and the call answers `Ok` only once the broker confirmed it (publisher
//! confirms). A negative confirm, or a message returned as unroutable (publishing is
//! `mandatory`), is an error, so the consumer driving the adapter retries it and finally
//! dead-letters it. The adapter owns its connection: it connects on first use, and after any
//! failure drops it and connects again on a later call, never sooner than its [`Backoff`]
//! allows (lapin's own recovery is not used).
//!
//! **In** ([`AmqpSource`], run by [`InboundBridge`](crate::bridge::InboundBridge)): a queue
//! (declared durable if asked, with its bindings) consumed with a prefetch of the bridge's
//! window and manual acks: a message is acked to RabbitMQ only once the channel accepted it.
//! What was not acked when a connection dies is RabbitMQ's to deliver again, marked redelivered
//! (the eip message's redelivery count is raised).
//!
//! **Headers**: the eip message id is the AMQP `message_id`; `correlation-id`,
//! `return-address` (`reply_to`), `content-type` and `priority` are the AMQP properties of the
//! same meaning; `expires-at` travels in the headers table and as the per-message TTL
//! (`expiration`, the milliseconds left when published) so RabbitMQ drops what expires while
//! queued; every other header (`subject`, `hop-budget`, your own) is a typed entry of the
//! headers table (strings, 64-bit integers, doubles, booleans, byte arrays). Coming in, the
//! routing key becomes the `subject` when the message has none, and a header of another AMQP
//! type (a nested table, an array, a timestamp) arrives as text.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use eip_core::message::{HeaderValue, Message, MessageId, names, now_millis};
use futures::StreamExt;
use futures::future::BoxFuture;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Confirmation, Connection, ConnectionProperties, ExchangeKind};

use crate::bridge::envelope::EnvelopeError;
use crate::bridge::{Backoff, BridgeError, Delivery, Reconnect, Source};

/// Where a RabbitMQ server is: an `amqp://user:password@host:port/vhost` URL, which may name
/// environment variables (`amqp://guest:${RABBIT_PASSWORD}@127.0.0.1:5672/%2f`), read when
/// connecting.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpUrl(pub String);

impl AmqpUrl {
    /// The URL as it may be shown: the password replaced by `***`.
    pub fn redacted(&self) -> String {
        crate::env::redact_url(&self.0)
    }
}

impl std::fmt::Debug for AmqpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Connects to `url` within `timeout`.
async fn connect(url: &AmqpUrl, timeout: Duration) -> Result<Connection, BridgeError> {
    let failed = |reason: String| BridgeError::Connection {
        broker: format!("rabbitmq at {}", url.redacted()),
        reason,
    };
    let expanded = crate::env::expand(&url.0)
        .map_err(|e| BridgeError::Config(format!("rabbitmq URL `{}`: {e}", url.redacted())))?;
    match tokio::time::timeout(
        timeout,
        Connection::connect(&expanded, ConnectionProperties::default()),
    )
    .await
    {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(e)) => Err(failed(e.to_string())),
        Err(_) => Err(failed(format!("no answer within {timeout:?}"))),
    }
}

/// Deletes the queue `queue` (if it is there), on a connection of its own.
pub(crate) async fn delete_queue(
    url: &AmqpUrl,
    queue: &str,
    timeout: Duration,
) -> Result<(), BridgeError> {
    let connection = connect(url, timeout).await?;
    let channel = connection
        .create_channel()
        .await
        .map_err(|e| lost(url, e))?;
    let deleted = channel
        .queue_delete(queue.into(), lapin::options::QueueDeleteOptions::default())
        .await
        .map_err(|e| BridgeError::Refused {
            broker: format!("rabbitmq at {}", url.redacted()),
            what: format!("deleting queue `{queue}`"),
            reason: e.to_string(),
            permanent: true,
        });
    let _ = connection.close(200, "done".into()).await;
    deleted.map(drop)
}

fn lost(url: &AmqpUrl, e: impl std::fmt::Display) -> BridgeError {
    BridgeError::Connection {
        broker: format!("rabbitmq at {}", url.redacted()),
        reason: e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// out

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
    /// `{subject}` alone, or a fixed key. A brace anywhere else is a placeholder this key can
    /// not fill (`{header.x}`, `orders.{subject}`, or one left unclosed): refused, rather than
    /// published as a literal key no binding expects.
    pub fn parse(key: &str) -> Result<Self, RoutingKeyError> {
        if key == "{subject}" {
            return Ok(RoutingKey::Subject);
        }
        if key.contains(['{', '}']) {
            return Err(RoutingKeyError {
                key: key.to_owned(),
                reason: "the only placeholder is `{subject}`, standing alone for the whole key",
            });
        }
        Ok(RoutingKey::Fixed(key.to_owned()))
    }
}

/// An exchange the outbound adapter declares before publishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeDeclaration {
    /// `topic`, `direct`, `fanout` or `headers`.
    pub kind: String,
    /// Whether it survives a broker restart (default true).
    pub durable: bool,
}

impl ExchangeDeclaration {
    /// Declares the exchange `name` on `channel` (idempotent; refused if it exists with
    /// other settings).
    async fn declare(
        &self,
        channel: &lapin::Channel,
        name: &str,
        url: &AmqpUrl,
    ) -> Result<(), BridgeError> {
        let kind = match self.kind.as_str() {
            "topic" => ExchangeKind::Topic,
            "direct" => ExchangeKind::Direct,
            "fanout" => ExchangeKind::Fanout,
            "headers" => ExchangeKind::Headers,
            other => {
                return Err(BridgeError::Config(format!(
                    "exchange kind `{other}`: expected topic, direct, fanout or headers"
                )));
            }
        };
        let options = ExchangeDeclareOptions {
            durable: self.durable,
            ..ExchangeDeclareOptions::default()
        };
        channel
            .exchange_declare(name.into(), kind, options, FieldTable::default())
            .await
            .map_err(|e| BridgeError::Refused {
                broker: format!("rabbitmq at {}", url.redacted()),
                what: format!("declaring exchange `{name}`"),
                reason: e.to_string(),
                permanent: true,
            })
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
#[derive(Clone)]
pub struct AmqpOutbound {
    inner: Arc<Outbound>,
}

struct Outbound {
    config: AmqpOutboundConfig,
    /// The connection and its confirm-mode channel, made on demand.
    link: Reconnect<(Connection, lapin::Channel)>,
}

impl std::fmt::Debug for AmqpOutbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpOutbound")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl AmqpOutbound {
    /// An adapter for `config`; it connects on first use.
    pub fn new(config: AmqpOutboundConfig) -> Self {
        AmqpOutbound {
            inner: Arc::new(Outbound {
                link: Reconnect::new(
                    format!("rabbitmq at {}", config.url.redacted()),
                    Backoff::default(),
                ),
                config,
            }),
        }
    }

    /// Connects now (declaring the exchange), so that a wrong URL or a refused declaration
    /// shows at start rather than on the first message.
    pub async fn connect(&self) -> Result<(), BridgeError> {
        self.inner.channel().await.map(drop)
    }

    /// Publishes `msg` and waits for the broker's confirm.
    pub async fn publish(&self, msg: &Message) -> Result<(), BridgeError> {
        self.inner.publish(msg).await
    }
}

impl Outbound {
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
        let connection = connect(&config.url, config.connect_timeout).await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| lost(&config.url, e))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| lost(&config.url, e))?;
        if let Some(declare) = &config.declare {
            declare
                .declare(&channel, &config.exchange, &config.url)
                .await?;
        }
        if let Some(queue) = &config.declare_queue {
            let options = QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            };
            channel
                .queue_declare(queue.as_str().into(), options, FieldTable::default())
                .await
                .map_err(|e| BridgeError::Refused {
                    broker: format!("rabbitmq at {}", config.url.redacted()),
                    what: format!("declaring queue `{queue}`"),
                    reason: e.to_string(),
                    permanent: true,
                })?;
        }
        Ok((connection, channel))
    }

    async fn publish(&self, msg: &Message) -> Result<(), BridgeError> {
        let config = &self.config;
        let (generation, channel) = self.channel().await?;
        let key = match &config.routing_key {
            RoutingKey::Fixed(key) => key.clone(),
            RoutingKey::Subject => msg.subject().ok().flatten().unwrap_or_default().to_owned(),
        };
        let refused = |reason: String| BridgeError::Refused {
            broker: format!("rabbitmq at {}", config.url.redacted()),
            what: format!(
                "a publish to exchange `{}` with key `{key}`",
                config.exchange
            ),
            reason,
            permanent: false,
        };
        let options = BasicPublishOptions {
            mandatory: config.mandatory,
            ..BasicPublishOptions::default()
        };
        let confirm = match channel
            .basic_publish(
                config.exchange.as_str().into(),
                key.as_str().into(),
                options,
                msg.payload(),
                properties(msg, config.broker_expiration),
            )
            .await
        {
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
}

impl tower::Service<Message> for AmqpOutbound {
    type Response = ();
    type Error = BridgeError;
    type Future = BoxFuture<'static, Result<(), BridgeError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BridgeError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { inner.publish(&msg).await })
    }
}

/// The AMQP properties carrying `msg`'s id and headers.
fn properties(msg: &Message, broker_expiration: bool) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_message_id(msg.id().to_string().into());
    let mut table = FieldTable::default();
    for (name, value) in msg.headers().iter() {
        match (name, value) {
            (names::CORRELATION_ID, HeaderValue::Str(s)) => {
                props = props.with_correlation_id(s.as_str().into());
            }
            (names::RETURN_ADDRESS, HeaderValue::Str(s)) => {
                props = props.with_reply_to(s.as_str().into());
            }
            (names::CONTENT_TYPE, HeaderValue::Str(s)) => {
                props = props.with_content_type(s.as_str().into());
            }
            (names::PRIORITY, HeaderValue::Int(p)) if (0..=255).contains(p) => {
                props = props.with_priority(*p as u8);
            }
            _ => {
                if broker_expiration
                    && name == names::EXPIRES_AT
                    && let HeaderValue::Int(at) = value
                {
                    let left = at.saturating_sub(now_millis() as i64).max(0);
                    props = props.with_expiration(left.to_string().into());
                }
                table.insert(name.into(), amqp_value(value));
            }
        }
    }
    props.with_headers(table)
}

fn amqp_value(value: &HeaderValue) -> AMQPValue {
    match value {
        HeaderValue::Str(s) => AMQPValue::LongString(s.as_str().into()),
        HeaderValue::Int(i) => AMQPValue::LongLongInt(*i),
        HeaderValue::Float(f) => AMQPValue::Double(*f),
        HeaderValue::Bool(b) => AMQPValue::Boolean(*b),
        HeaderValue::Bytes(b) => AMQPValue::ByteArray(b.to_vec().into()),
    }
}

// ---------------------------------------------------------------------------------------------
// in

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

/// The inbound RabbitMQ source; see the [module](self). Run it with
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
}

impl Source for AmqpSource {
    type Delivery = AmqpDelivery;

    async fn connect(&mut self, window: usize) -> Result<(), BridgeError> {
        self.session = None;
        let config = &self.config;
        let url = &config.url;
        let connection = connect(url, config.connect_timeout).await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| lost(url, e))?;
        let prefetch = u16::try_from(window).unwrap_or(u16::MAX);
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| lost(url, e))?;
        let refused = |what: String, e: lapin::Error| BridgeError::Refused {
            broker: format!("rabbitmq at {}", url.redacted()),
            what,
            reason: e.to_string(),
            permanent: true,
        };
        for (name, exchange) in &config.exchanges {
            exchange.declare(&channel, name, url).await?;
        }
        if config.declare || config.exclusive {
            let options = QueueDeclareOptions {
                durable: !config.exclusive,
                exclusive: config.exclusive,
                auto_delete: config.exclusive,
                ..QueueDeclareOptions::default()
            };
            channel
                .queue_declare(config.queue.as_str().into(), options, FieldTable::default())
                .await
                .map_err(|e| refused(format!("declaring queue `{}`", config.queue), e))?;
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
                    refused(
                        format!(
                            "binding queue `{}` to exchange `{}` with key `{}`",
                            config.queue, binding.exchange, binding.key
                        ),
                        e,
                    )
                })?;
        }
        let consumer = channel
            .basic_consume(
                config.queue.as_str().into(),
                ShortString::from(""),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| refused(format!("consuming queue `{}`", config.queue), e))?;
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

/// How often a wait on lapin checks that its connection is still up.
const LIVENESS_CHECK: Duration = Duration::from_secs(1);

/// `op`, a wait on lapin, or `None` once its connection is no longer up. lapin does not always
/// settle what waits when a connection ends: after a `connection.close` from the broker followed
/// at once by the end of the socket (a broker stopping while the link to it was slow), acks were
/// seen pending for good, and a bridge whose window is full of them never reconnects; the
/// consumer's stream is guarded the same way. The connection's status does change, so it is
/// looked at every second.
async fn while_connected<T>(
    status: &lapin::ConnectionStatus,
    op: impl std::future::Future<Output = T>,
) -> Option<T> {
    let mut op = std::pin::pin!(op);
    loop {
        tokio::select! {
            out = &mut op => return Some(out),
            () = tokio::time::sleep(LIVENESS_CHECK) => {
                if !status.connected() {
                    return None;
                }
            }
        }
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

/// The eip message a delivery carries.
fn message(delivery: &lapin::message::Delivery, subject_header: bool) -> Message {
    let props = &delivery.properties;
    let id = props
        .message_id()
        .as_ref()
        .and_then(|id| id.as_str().parse::<MessageId>().ok())
        .unwrap_or_default();
    let mut msg = Message::builder(delivery.data.clone()).id(id).build();
    let headers = msg.headers_mut();
    if let Some(table) = props.headers() {
        for (name, value) in table.inner() {
            headers.insert(name.as_str().to_owned(), header_value(value));
        }
    }
    if let Some(v) = props.correlation_id() {
        headers.insert(names::CORRELATION_ID, v.as_str());
    }
    if let Some(v) = props.reply_to() {
        headers.insert(names::RETURN_ADDRESS, v.as_str());
    }
    if let Some(v) = props.content_type() {
        headers.insert(names::CONTENT_TYPE, v.as_str());
    }
    if let Some(p) = props.priority() {
        headers.insert(names::PRIORITY, i64::from(*p));
    }
    if !headers.contains(names::EXPIRES_AT)
        && let Some(ttl) = props
            .expiration()
            .as_ref()
            .and_then(|e| e.as_str().parse::<u64>().ok())
    {
        headers.insert(names::EXPIRES_AT, (now_millis() + ttl) as i64);
    }
    if subject_header
        && !headers.contains(names::SUBJECT)
        && !delivery.routing_key.as_str().is_empty()
    {
        headers.insert(names::SUBJECT, delivery.routing_key.as_str());
    }
    if delivery.redelivered {
        msg.mark_redelivered();
    }
    msg
}

fn header_value(value: &AMQPValue) -> HeaderValue {
    match value {
        AMQPValue::Boolean(b) => HeaderValue::Bool(*b),
        AMQPValue::ShortShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::ShortUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongUInt(i) => HeaderValue::Int(i64::from(*i)),
        AMQPValue::LongLongInt(i) => HeaderValue::Int(*i),
        AMQPValue::Float(f) => HeaderValue::Float(f64::from(*f)),
        AMQPValue::Double(f) => HeaderValue::Float(*f),
        AMQPValue::ShortString(s) => HeaderValue::Str(s.as_str().to_owned()),
        AMQPValue::LongString(s) => HeaderValue::Str(long_string(s)),
        AMQPValue::ByteArray(b) => HeaderValue::Bytes(bytes::Bytes::copy_from_slice(b.as_slice())),
        other => HeaderValue::Str(format!("{other:?}")),
    }
}

fn long_string(s: &LongString) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
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

    #[test]
    fn a_url_is_shown_without_its_password() {
        let url = AmqpUrl("amqp://guest:s3cret@127.0.0.1:5672/%2f".into());
        assert_eq!(url.redacted(), "amqp://guest:***@127.0.0.1:5672/%2f");
        assert_eq!(format!("{url:?}"), "amqp://guest:***@127.0.0.1:5672/%2f");
        let plain = AmqpUrl("amqp://127.0.0.1:5672".into());
        assert_eq!(plain.redacted(), "amqp://127.0.0.1:5672");
    }

    #[test]
    fn headers_map_onto_properties_and_the_table_and_back() {
        let msg = Message::builder(&b"x"[..])
            .subject("orders.eu")
            .correlation_id("c-1")
            .return_address("replies")
            .content_type("application/json")
            .priority(5)
            .hop_budget(3)
            .time_to_live(Duration::from_secs(60))
            .header("urgent", true)
            .header("ratio", 0.5)
            .header("raw", bytes::Bytes::from_static(&[1, 2]))
            .build();
        let props = properties(&msg, true);
        assert_eq!(
            props.message_id().as_ref().map(|s| s.as_str().to_owned()),
            Some(msg.id().to_string())
        );
        assert_eq!(props.delivery_mode(), &Some(2));
        let ttl: u64 = props
            .expiration()
            .as_ref()
            .and_then(|e| e.as_str().parse().ok())
            .expect("a TTL");
        assert!(ttl > 59_000 && ttl <= 60_000, "{ttl}");
        let delivery = lapin::message::Delivery::mock(
            1,
            "ex".into(),
            "other.key".into(),
            false,
            b"x".to_vec(),
        );
        let delivery = lapin::message::Delivery {
            properties: props,
            ..delivery
        };
        let back = message(&delivery, true);
        assert_eq!(back.id(), msg.id());
        let mut want: Vec<_> = msg.headers().iter().collect();
        let mut got: Vec<_> = back.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        got.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(got, want, "the subject header wins over the routing key");
    }

    #[test]
    fn a_foreign_message_gets_an_id_its_routing_key_as_subject_and_its_ttl_as_expiry() {
        let delivery =
            lapin::message::Delivery::mock(1, "ex".into(), "stock.ibm".into(), true, b"x".to_vec());
        let props = BasicProperties::default().with_expiration("1000".into());
        let delivery = lapin::message::Delivery {
            properties: props,
            ..delivery
        };
        let msg = message(&delivery, true);
        assert_eq!(msg.subject().unwrap(), Some("stock.ibm"));
        assert_eq!(
            msg.redelivery_count().unwrap(),
            1,
            "the broker said redelivered"
        );
        let expires = msg.expires_at().unwrap().expect("an expiry");
        assert!(expires > now_millis() && expires <= now_millis() + 1000);
    }
}
