//! The outbound half: a channel's messages appended to a Redis stream.
//!
//! [`RedisStreamOutbound`] is a `tower::Service<Message>` driven by a
//! [`Consumer`](eip_core::endpoint::Consumer). **Ok means stored**: a call answers `Ok` only
//! once Redis answered the `XADD` with the entry's id, so the consumer acks the eip message only
//! when the stream holds it. A retry after a lost answer (a timeout, a cut connection) appends
//! the message again: the copy has the same `eip-id`, so a reader can tell it is a duplicate.
//!
//! Each entry's fields are the message's text envelope ([`envelope::to_text`]: `eip-id`, every
//! header, `eip-types`) followed by its payload, as bytes, in the field [`PAYLOAD`]. A message
//! with a header named `payload` is refused (permanently): it would shadow the payload.
//!
//! The adapter owns its connection: made at the first call (or by
//! [`connect`](RedisStreamOutbound::connect)), dropped on the first error that is not Redis's
//! answer, made again by a later call. After a failed attempt, calls fail at once until the
//! [`Backoff`] wait is over, so a server that is down costs the channel's redeliveries, not a
//! connection attempt per message.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use eip_core::Message;

use super::PAYLOAD;
use super::connection::{self, LinkSettings};
use super::key::StreamKey;
use crate::bridge::{Backoff, BridgeError, Outbound, Publisher, Reconnect, config, envelope};

/// Where and how a [`RedisStreamOutbound`] appends. Plain data: a flow file can fill it.
#[derive(Debug, Clone)]
pub struct RedisStreamOutboundConfig {
    /// The server (`redis://127.0.0.1:6379`).
    pub url: String,
    /// The stream each message is appended to.
    pub stream: StreamKey,
    /// Trims the stream to about this many entries at each append (`MAXLEN ~ N`; none: the
    /// stream grows until something else trims it).
    pub max_len: Option<usize>,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long an `XADD` waits for its answer.
    pub response_timeout: Duration,
    /// The waits between connection attempts.
    pub backoff: Backoff,
}

impl RedisStreamOutboundConfig {
    /// Appends to `stream` on the server at `url`, 5 s to connect and 5 s per answer, not
    /// trimmed.
    pub fn new(url: impl Into<String>, stream: StreamKey) -> Self {
        RedisStreamOutboundConfig {
            url: url.into(),
            stream,
            max_len: None,
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
        }
    }

    /// Every problem with the configuration, or none.
    fn check(&self) -> Result<(), BridgeError> {
        let mut problems = Vec::new();
        connection::check_url(&self.url, &mut problems);
        if self.max_len == Some(0) {
            problems.push("max_len is zero".to_owned());
        }
        config::zero_durations(
            &mut problems,
            &[
                ("connect_timeout", self.connect_timeout),
                ("response_timeout", self.response_timeout),
            ],
        );
        config::checked("redis stream outbound", problems)
    }
}

/// What Redis answered for one append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The stream appended to.
    pub stream: String,
    /// The entry's id (`1700000000000-0`).
    pub id: String,
}

/// Appends messages to a Redis stream, answering once stored (at least once, its own reconnect with
/// backoff); see the [Redis bridge](crate::redis).
///
/// ```no_run
/// use eip_adapters::bridge::BridgeError;
/// use eip_adapters::redis::{RedisStreamOutbound, RedisStreamOutboundConfig, StreamKey};
/// use eip_core::channel::PointToPoint;
/// use eip_core::endpoint::Consumer;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// // Each message goes to the stream `orders:` + its `subject` header, kept to ~100k entries.
/// let mut config = RedisStreamOutboundConfig::new("redis://127.0.0.1:6379", StreamKey::parse("orders:{subject}")?);
/// config.max_len = Some(100_000);
/// let outbound = RedisStreamOutbound::new(config)?;
/// let consumer = Consumer::new(orders.receiver(), outbound)
///     .concurrency(32) // appends awaiting their answer
///     .permanent_errors(BridgeError::is_permanent)
///     .spawn();
/// # consumer.shutdown().await;
/// # Ok(()) }
/// ```
pub type RedisStreamOutbound = Outbound<RedisStreamPublisher>;

impl RedisStreamOutbound {
    /// An adapter for `config` (checked whole); it connects at the first call.
    pub fn new(config: RedisStreamOutboundConfig) -> Result<Self, BridgeError> {
        config.check()?;
        let broker = connection::describe(&config.url);
        let backoff = config.backoff.clone();
        Ok(Outbound::from_publisher(RedisStreamPublisher {
            config,
            link: Reconnect::new(broker.clone(), backoff),
            broker,
        }))
    }

    /// Connects now rather than at the first call.
    pub async fn connect(&self) -> Result<(), BridgeError> {
        self.get_ref().connection().await.map(drop)
    }

    /// Appends `msg` and waits for Redis's answer (what [`publish`](Outbound::publish) does).
    pub async fn append(&self, msg: &Message) -> Result<Appended, BridgeError> {
        self.publish(msg).await
    }
}

/// How a [`RedisStreamOutbound`] appends: its configuration and its connection.
pub struct RedisStreamPublisher {
    config: RedisStreamOutboundConfig,
    broker: String,
    link: Reconnect<MultiplexedConnection>,
}

impl RedisStreamPublisher {
    /// The live connection, connecting if there is none.
    async fn connection(&self) -> Result<(u64, MultiplexedConnection), BridgeError> {
        let config = &self.config;
        let open = || async {
            let live = connection::connect(LinkSettings {
                url: &config.url,
                broker: &self.broker,
                connect_timeout: config.connect_timeout,
                response_timeout: config.response_timeout,
            })
            .await?;
            tracing::info!(broker = %self.broker, stream = %config.stream, "redis stream outbound connected");
            Ok(live)
        };
        self.link.get(|_| false, Clone::clone, open).await
    }

    fn refused(&self, what: &str, reason: String, permanent: bool) -> BridgeError {
        BridgeError::refused(&self.broker, what, reason, permanent)
    }
}

/// The `XADD` appending `msg` to `stream`: the envelope's fields, then the payload. A header
/// named like the payload field is an error naming it.
pub(crate) fn xadd(
    stream: &str,
    max_len: Option<usize>,
    msg: &Message,
) -> Result<::redis::Cmd, String> {
    let mut command = ::redis::cmd("XADD");
    command.arg(stream);
    if let Some(n) = max_len {
        command.arg("MAXLEN").arg("~").arg(n);
    }
    command.arg("*");
    for (name, text) in envelope::to_text(msg) {
        if name == PAYLOAD {
            return Err(format!(
                "the message has a header named `{PAYLOAD}`, the stream field of the payload"
            ));
        }
        command.arg(name).arg(text);
    }
    command.arg(PAYLOAD).arg(msg.payload().as_ref());
    Ok(command)
}

impl Publisher for RedisStreamPublisher {
    type Receipt = Appended;

    async fn publish(&self, msg: &Message) -> Result<Appended, BridgeError> {
        let stream = self
            .config
            .stream
            .render(msg)
            .map_err(|e| self.refused("XADD", e.to_string(), true))?;
        let what = format!("XADD to stream {stream}");
        let command = xadd(&stream, self.config.max_len, msg)
            .map_err(|reason| self.refused(&what, reason, true))?;
        let (generation, mut connection) = self.connection().await?;
        match command.query_async::<String>(&mut connection).await {
            Ok(id) => Ok(Appended { stream, id }),
            // Redis answered with an error (a key of another type, out of memory): the
            // connection is fine; trying again may work once someone fixes the server.
            Err(e) if connection::is_reply(&e) => Err(self.refused(&what, e.to_string(), false)),
            // No answer in time, a broken pipe: the connection is suspect, make another.
            Err(e) => {
                self.link.forget(generation).await;
                Err(connection::lost(&self.broker, &what, &e))
            }
        }
    }

    fn describe(&self) -> String {
        format!("{} stream {}", self.broker, self.config.stream)
    }

    fn health(&self) -> Option<crate::bridge::ConnectionHealth> {
        Some(self.link.health())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &::redis::Cmd) -> Vec<Vec<u8>> {
        command
            .args_iter()
            .filter_map(|arg| match arg {
                ::redis::Arg::Simple(bytes) => Some(bytes.to_vec()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_entry_carries_the_envelope_then_the_payload_and_is_trimmed_when_asked() {
        let msg = Message::builder(&[0u8, 255][..]).hop_budget(3).build();
        let got = args(&xadd("orders", Some(1000), &msg).unwrap());
        let text: Vec<String> = got
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert_eq!(&text[..6], ["XADD", "orders", "MAXLEN", "~", "1000", "*"]);
        assert_eq!(text[6..8], [envelope::ID.to_owned(), msg.id().to_string()]);
        assert!(text.windows(2).any(|w| w[0] == "hop-budget" && w[1] == "3"));
        assert_eq!(got[got.len() - 2], PAYLOAD.as_bytes());
        assert_eq!(got[got.len() - 1], [0u8, 255]);
        let untrimmed = args(&xadd("orders", None, &msg).unwrap());
        assert_eq!(untrimmed[2], b"*");
    }

    #[test]
    fn a_header_named_like_the_payload_field_is_refused() {
        let msg = Message::builder(&b"x"[..]).header("payload", "y").build();
        assert!(xadd("s", None, &msg).unwrap_err().contains("`payload`"));
    }
}
