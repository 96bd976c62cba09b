//! The inbound half: a consumer in a Redis stream's consumer group, read by an
//! [`InboundBridge`](crate::bridge::InboundBridge).
//!
//! At each connection [`RedisStreamSource`] creates its consumer group if it is missing
//! (`XGROUP CREATE … MKSTREAM`, at the stream's start or its end as configured; a group that
//! exists is left as it is). Then it reads, in this order:
//! 1. **its own pending entries** (`XREADGROUP … 0`): those delivered to this consumer name and
//!    never acknowledged, because a bridge with this name stopped, crashed or lost its
//!    connection with them in hand. They come again (marked redelivered), so nothing read is
//!    lost; a consumer name is a bridge's identity and must be stable across restarts;
//! 2. with `claim_idle` set, **the pending entries of other consumers** idle longer than that
//!    (`XAUTOCLAIM`), so a consumer that died for good does not keep its entries forever; this
//!    is done again every `claim_idle` while reading;
//! 3. **new entries** (`XREADGROUP … >`), blocking `block` at a time, `COUNT` = the room left
//!    in the bridge's window, so at most `window` entries are delivered and unacknowledged.
//!
//! Each entry becomes an eip message through [`envelope::from_text`] over its fields other
//! than [`PAYLOAD`] (read as UTF-8, a byte that is not is replaced), the `payload` field as its
//! payload, and the stream key as `subject` when it has none. [`ack`](Delivery::ack) is `XACK`,
//! done once the channel took the message; it fails when the connection is lost, and the entry
//! comes again after the reconnection (a duplicate, never a loss). An entry deleted from the
//! stream (trimmed) before it was acknowledged has no fields left: it is acknowledged and
//! skipped.
//!
//! A read in progress is kept across calls to [`next`](Source::next): the bridge may drop a
//! `next` future while it waits, and dropping the read would leave the entries it fetched
//! pending until the next connection.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use eip_core::message::{Message, names};
use tokio::time::Instant;

use super::PAYLOAD;
use super::connection::{self, LinkSettings};
use super::entry::{self, Entry};
use crate::bridge::envelope::{self, EnvelopeError};
use crate::bridge::{BridgeError, Delivery, Source, config};

/// Where a consumer group the bridge creates starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupStart {
    /// At the stream's first entry: everything already in it is delivered (`0`).
    #[default]
    Beginning,
    /// After its last entry: only what is appended from now on (`$`).
    End,
}

/// Where a [`RedisStreamSource`] reads. Plain data: a flow file can fill it.
#[derive(Debug, Clone)]
pub struct RedisStreamSourceConfig {
    /// The server (`redis://127.0.0.1:6379`).
    pub url: String,
    /// The stream's key.
    pub stream: String,
    /// The consumer group: bridges in the same group share its entries (competing consumers).
    pub group: String,
    /// This consumer's name in the group, stable across restarts: what it read and did not
    /// acknowledge comes again to the next bridge with the same name.
    pub consumer: String,
    /// Where the group starts when the bridge creates it.
    pub group_start: GroupStart,
    /// How long one read waits for new entries (1 s by default).
    pub block: Duration,
    /// Claims the entries other consumers of the group left unacknowledged longer than this
    /// (none by default: only a consumer with the same name reads them again). Longer than a
    /// full channel may hold a delivery, or entries still in hand are claimed and come twice.
    pub claim_idle: Option<Duration>,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long a command waits for its answer (a read: on top of `block`); a connection that
    /// does not answer in time is given up and made again.
    pub response_timeout: Duration,
}

impl RedisStreamSourceConfig {
    /// Reads `stream` as `consumer` of `group` on the server at `url`, the group created at the
    /// stream's beginning if missing, no claiming.
    pub fn new(
        url: impl Into<String>,
        stream: impl Into<String>,
        group: impl Into<String>,
        consumer: impl Into<String>,
    ) -> Self {
        RedisStreamSourceConfig {
            url: url.into(),
            stream: stream.into(),
            group: group.into(),
            consumer: consumer.into(),
            group_start: GroupStart::Beginning,
            block: Duration::from_secs(1),
            claim_idle: None,
            connect_timeout: Duration::from_secs(5),
            response_timeout: Duration::from_secs(5),
        }
    }

    /// Every problem with the configuration, or none.
    fn check(&self) -> Result<(), BridgeError> {
        let mut problems = Vec::new();
        connection::check_url(&self.url, &mut problems);
        for (what, name) in [
            ("stream", &self.stream),
            ("group", &self.group),
            ("consumer", &self.consumer),
        ] {
            if name.is_empty() {
                problems.push(format!("the {what} name is empty"));
            }
        }
        config::zero_durations(
            &mut problems,
            &[
                ("block", self.block),
                ("connect_timeout", self.connect_timeout),
                ("response_timeout", self.response_timeout),
            ],
        );
        if self
            .claim_idle
            .is_some_and(|d| d < Duration::from_millis(1))
        {
            problems.push("claim_idle is shorter than a millisecond".to_owned());
        }
        config::checked("redis stream source", problems)
    }
}

/// A consumer in a Redis consumer group as a bridge [`Source`]: its own pending entries first
/// after each connection, then new ones; see the [Redis bridge](crate::redis).
///
/// ```no_run
/// use eip_adapters::redis::{RedisStreamSource, RedisStreamSourceConfig};
/// use eip_core::channel::PointToPoint;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// let config = RedisStreamSourceConfig::new("redis://127.0.0.1:6379", "orders", "eip", "eip-1");
/// // At most 64 entries delivered and not yet in the channel.
/// let bridge = RedisStreamSource::new(config)?.bridge(orders.clone(), 64).spawn();
/// # bridge.shutdown().await?;
/// # Ok(()) }
/// ```
pub struct RedisStreamSource {
    config: RedisStreamSourceConfig,
    broker: Arc<str>,
    connection: Option<MultiplexedConnection>,
    phase: Phase,
    window: usize,
    /// Entries read and not yet handed out.
    buffer: VecDeque<(Entry, bool)>,
    /// A read in progress, kept when a `next` future is dropped.
    reading: Option<ReadFuture>,
    /// Each delivery handed out holds a clone: the count of those not yet acknowledged.
    outstanding: Arc<()>,
    next_claim: Instant,
}

type ReadFuture = Pin<Box<dyn Future<Output = Result<Batch, BridgeError>> + Send>>;

/// Which entries are read next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// This consumer's pending entries after the id.
    Pending(String),
    /// Other consumers' idle entries from the cursor.
    Claim(String),
    /// New entries.
    New,
}

/// What one read gave, and which entries to read next.
struct Batch {
    entries: Vec<Entry>,
    next: Phase,
}

impl std::fmt::Debug for RedisStreamSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStreamSource")
            .field("broker", &self.broker)
            .field("stream", &self.config.stream)
            .field("group", &self.config.group)
            .field("consumer", &self.config.consumer)
            .finish()
    }
}

impl RedisStreamSource {
    /// A source for `config` (checked whole); it connects when its bridge starts.
    pub fn new(config: RedisStreamSourceConfig) -> Result<Self, BridgeError> {
        config.check()?;
        let broker = connection::describe(&config.url).into();
        Ok(RedisStreamSource {
            config,
            broker,
            connection: None,
            phase: Phase::New,
            window: 1,
            buffer: VecDeque::new(),
            reading: None,
            outstanding: Arc::new(()),
            next_claim: Instant::now(),
        })
    }

    /// An [`InboundBridge`](crate::bridge::InboundBridge) feeding `channel` from this source,
    /// at most `window` entries unacknowledged: `.spawn()` runs it.
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

    /// Starts the read the phase calls for, `COUNT` = the room left in the window.
    fn start_read(&mut self) -> Result<ReadFuture, BridgeError> {
        let Some(connection) = self.connection.clone() else {
            return Err(self.lost("not connected".to_owned()));
        };
        if self.phase == Phase::New
            && let Some(idle) = self.config.claim_idle
            && Instant::now() >= self.next_claim
        {
            self.phase = Phase::Claim("0-0".to_owned());
            self.next_claim = Instant::now() + idle;
        }
        let held = Arc::strong_count(&self.outstanding) - 1;
        let count = self.window.saturating_sub(held).max(1);
        let read = Read {
            connection,
            broker: self.broker.clone(),
            config: self.config.clone(),
            count,
        };
        Ok(Box::pin(read.run(self.phase.clone())))
    }
}

/// One read, owning what it needs so it can outlive a dropped `next` future.
struct Read {
    connection: MultiplexedConnection,
    broker: Arc<str>,
    config: RedisStreamSourceConfig,
    count: usize,
}

impl Read {
    async fn run(mut self, phase: Phase) -> Result<Batch, BridgeError> {
        let config = &self.config;
        let (command, name) = match &phase {
            Phase::Pending(after) => (self.read_group(after, None), "XREADGROUP"),
            Phase::Claim(cursor) => {
                let mut command = ::redis::cmd("XAUTOCLAIM");
                let idle = config.claim_idle.unwrap_or_default().as_millis();
                command
                    .arg(&config.stream)
                    .arg(&config.group)
                    .arg(&config.consumer)
                    .arg(u64::try_from(idle).unwrap_or(u64::MAX))
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(self.count);
                (command, "XAUTOCLAIM")
            }
            Phase::New => (self.read_group(">", Some(config.block)), "XREADGROUP"),
        };
        let reply: ::redis::Value = command
            .query_async(&mut self.connection)
            .await
            .map_err(|e| self.failed(name, &e))?;
        let unexpected = |e: entry::ReplyError| BridgeError::Connection {
            broker: self.broker.to_string(),
            reason: format!("stream {}: {e}", self.config.stream),
        };
        let (entries, next) = match phase {
            Phase::Pending(_) => {
                let entries = entry::read_reply(reply).map_err(unexpected)?;
                let next = match entries.last() {
                    Some(last) => Phase::Pending(last.id.clone()),
                    None if config.claim_idle.is_some() => Phase::Claim("0-0".to_owned()),
                    None => Phase::New,
                };
                (entries, next)
            }
            Phase::Claim(_) => {
                let (cursor, entries) = entry::claim_reply(reply).map_err(unexpected)?;
                let next = match cursor.as_str() {
                    "0-0" => Phase::New,
                    _ => Phase::Claim(cursor),
                };
                (entries, next)
            }
            Phase::New => (entry::read_reply(reply).map_err(unexpected)?, Phase::New),
        };
        // An entry trimmed away before it was acknowledged has nothing left to deliver.
        let deleted: Vec<&str> = entries
            .iter()
            .filter(|e| e.fields.is_none())
            .map(|e| e.id.as_str())
            .collect();
        if !deleted.is_empty() {
            tracing::warn!(broker = %self.broker, stream = %config.stream, count = deleted.len(), "redis stream source: pending entries were deleted from the stream, acknowledged and skipped");
            let mut ack = ::redis::cmd("XACK");
            ack.arg(&config.stream).arg(&config.group).arg(&deleted);
            ack.query_async::<i64>(&mut self.connection)
                .await
                .map_err(|e| self.failed("XACK", &e))?;
        }
        let entries = entries.into_iter().filter(|e| e.fields.is_some()).collect();
        Ok(Batch { entries, next })
    }

    fn read_group(&self, after: &str, block: Option<Duration>) -> ::redis::Cmd {
        let config = &self.config;
        let mut command = ::redis::cmd("XREADGROUP");
        command
            .arg("GROUP")
            .arg(&config.group)
            .arg(&config.consumer)
            .arg("COUNT")
            .arg(self.count);
        if let Some(block) = block {
            command
                .arg("BLOCK")
                .arg(u64::try_from(block.as_millis()).unwrap_or(u64::MAX).max(1));
        }
        command.arg("STREAMS").arg(&config.stream).arg(after);
        command
    }

    fn failed(&self, what: &str, e: &::redis::RedisError) -> BridgeError {
        connection::lost(
            &self.broker,
            &format!(
                "{what} on stream {} group {}",
                self.config.stream, self.config.group
            ),
            e,
        )
    }
}

impl Source for RedisStreamSource {
    type Delivery = RedisStreamDelivery;

    async fn connect(&mut self, window: usize) -> Result<(), BridgeError> {
        // Whatever was read on the old connection is this consumer's pending entries: read
        // again first.
        self.connection = None;
        self.reading = None;
        self.buffer.clear();
        let config = &self.config;
        let mut connection = connection::connect(LinkSettings {
            url: &config.url,
            broker: &self.broker,
            connect_timeout: config.connect_timeout,
            response_timeout: config.response_timeout + config.block,
        })
        .await?;
        let start = match config.group_start {
            GroupStart::Beginning => "0",
            GroupStart::End => "$",
        };
        let created = ::redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&config.stream)
            .arg(&config.group)
            .arg(start)
            .arg("MKSTREAM")
            .query_async::<()>(&mut connection)
            .await;
        match created {
            Ok(()) => {}
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) if connection::is_reply(&e) => {
                return Err(BridgeError::Refused {
                    broker: self.broker.to_string(),
                    what: format!("group {} on stream {}", config.group, config.stream),
                    reason: e.to_string(),
                    permanent: false,
                });
            }
            Err(e) => return Err(connection::lost(&self.broker, "XGROUP CREATE", &e)),
        }
        self.connection = Some(connection);
        self.window = window.max(1);
        self.phase = Phase::Pending("0".to_owned());
        self.next_claim = Instant::now();
        Ok(())
    }

    async fn next(&mut self) -> Result<RedisStreamDelivery, BridgeError> {
        loop {
            if let Some((entry, redelivered)) = self.buffer.pop_front() {
                return self.delivery(entry, redelivered);
            }
            if self.reading.is_none() {
                let read = self.start_read()?;
                self.reading = Some(read);
            }
            let Some(reading) = self.reading.as_mut() else {
                continue;
            };
            let batch = reading.await;
            self.reading = None;
            match batch {
                Ok(batch) => {
                    let redelivered = self.phase != Phase::New;
                    self.buffer
                        .extend(batch.entries.into_iter().map(|e| (e, redelivered)));
                    self.phase = batch.next;
                }
                Err(error) => {
                    self.connection = None;
                    return Err(error);
                }
            }
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} stream {} group {} consumer {}",
            self.broker, self.config.stream, self.config.group, self.config.consumer
        )
    }
}

impl RedisStreamSource {
    fn delivery(
        &self,
        entry: Entry,
        redelivered: bool,
    ) -> Result<RedisStreamDelivery, BridgeError> {
        let Some(connection) = self.connection.clone() else {
            return Err(self.lost("not connected".to_owned()));
        };
        let mut headers = Vec::new();
        let mut payload = bytes::Bytes::new();
        for (name, value) in entry.fields.unwrap_or_default() {
            if name == PAYLOAD.as_bytes() {
                payload = value.into();
            } else {
                headers.push((
                    String::from_utf8_lossy(&name).into_owned(),
                    String::from_utf8_lossy(&value).into_owned(),
                ));
            }
        }
        Ok(RedisStreamDelivery {
            id: entry.id,
            headers,
            payload,
            redelivered,
            stream: self.config.stream.clone(),
            group: self.config.group.clone(),
            connection,
            broker: self.broker.clone(),
            _held: self.outstanding.clone(),
        })
    }
}

/// An entry delivered by a [`RedisStreamSource`], not yet acknowledged.
pub struct RedisStreamDelivery {
    id: String,
    headers: Vec<(String, String)>,
    payload: bytes::Bytes,
    redelivered: bool,
    stream: String,
    group: String,
    connection: MultiplexedConnection,
    broker: Arc<str>,
    _held: Arc<()>,
}

impl std::fmt::Debug for RedisStreamDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStreamDelivery")
            .field("stream", &self.stream)
            .field("id", &self.id)
            .finish()
    }
}

impl RedisStreamDelivery {
    /// The entry's id in the stream (`1700000000000-0`).
    pub fn entry_id(&self) -> &str {
        &self.id
    }

    /// Whether it was delivered before (read again from the pending entries, or claimed).
    pub fn is_redelivered(&self) -> bool {
        self.redelivered
    }
}

impl Delivery for RedisStreamDelivery {
    fn message(&self) -> Result<Message, EnvelopeError> {
        to_message(
            self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            &self.stream,
            self.payload.clone(),
            self.redelivered,
        )
    }

    fn payload(&self) -> bytes::Bytes {
        self.payload.clone()
    }

    async fn ack(mut self) -> Result<(), BridgeError> {
        ::redis::cmd("XACK")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(&self.id)
            .query_async::<i64>(&mut self.connection)
            .await
            .map(drop)
            .map_err(|e| BridgeError::Connection {
                broker: self.broker.to_string(),
                reason: format!(
                    "acknowledging entry {} of stream {}: {e}",
                    self.id, self.stream
                ),
            })
    }
}

/// The eip message an entry carries: its fields through the envelope, the stream key as
/// `subject` when none is given, and one more redelivery when it was delivered before.
pub(crate) fn to_message<'a>(
    headers: impl Iterator<Item = (&'a str, &'a str)>,
    stream: &str,
    payload: bytes::Bytes,
    redelivered: bool,
) -> Result<Message, EnvelopeError> {
    let mut msg = envelope::from_text(headers, payload)?;
    if msg.headers().get(names::SUBJECT).is_none() {
        msg.headers_mut().insert(names::SUBJECT, stream.to_owned());
    }
    if redelivered {
        let count = msg.redelivery_count().unwrap_or(0).saturating_add(1);
        msg.headers_mut()
            .insert(names::REDELIVERY_COUNT, i64::from(count));
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_key_is_the_subject_unless_a_field_says_otherwise() {
        let msg = to_message([].into_iter(), "orders", bytes::Bytes::new(), false).unwrap();
        assert_eq!(msg.subject().unwrap(), Some("orders"));
        let msg = to_message(
            [("subject", "eu")].into_iter(),
            "orders",
            bytes::Bytes::new(),
            false,
        )
        .unwrap();
        assert_eq!(msg.subject().unwrap(), Some("eu"));
    }

    #[test]
    fn an_entry_delivered_before_is_marked_redelivered() {
        let msg = to_message([].into_iter(), "s", bytes::Bytes::new(), true).unwrap();
        assert_eq!(msg.redelivery_count().unwrap(), 1);
    }

    #[test]
    fn a_config_with_empty_names_and_zero_times_names_every_problem() {
        let mut config = RedisStreamSourceConfig::new("redis://127.0.0.1:6379", "", "g", "");
        config.block = Duration::ZERO;
        let e = RedisStreamSource::new(config).unwrap_err().to_string();
        for part in ["stream name", "consumer name", "block is zero"] {
            assert!(e.contains(part), "{e}");
        }
    }
}
