//! The checked `adapters:` of a flow: each adapter's configuration, ready for the adapter
//! crate, and the tower layers its consumer applies.

use std::time::Duration;

use eip_adapters::amqp::{AmqpOutboundConfig, AmqpSourceConfig};
use eip_adapters::env::redact_url;
use eip_adapters::file::{FileSinkConfig, FileSourceConfig};
use eip_adapters::http::{HttpInboundConfig, HttpOutboundConfig};
use eip_adapters::mqtt::{MqttOutboundConfig, MqttSourceConfig};
use eip_adapters::nats::{JetStreamOutboundConfig, JetStreamSourceConfig};
use eip_adapters::redis::{RedisStreamOutboundConfig, RedisStreamSourceConfig};
use eip_adapters::sql::{SqlInboundConfig, SqlOutboundConfig};
use eip_core::channel::RedeliveryPolicy;

pub use crate::spec::AdapterKind;

/// A checked adapter.
#[derive(Debug, Clone)]
pub struct AdapterPlan {
    /// Its name.
    pub name: String,
    /// The channel it feeds (inbound) or consumes (outbound).
    pub channel: String,
    /// What it is and how it is configured.
    pub config: AdapterConfig,
    /// For an outbound adapter: the layers around it and how its consumer retries.
    pub outbound: OutboundPlan,
    /// `setup:` of a database adapter: statements run once, in order, when the adapter
    /// starts (before it polls or writes), such as `CREATE TABLE IF NOT EXISTS …`.
    pub setup: Vec<String>,
}

impl AdapterPlan {
    /// Its kind.
    pub fn kind(&self) -> AdapterKind {
        match self.config {
            AdapterConfig::FileIn(_) => AdapterKind::FileIn,
            AdapterConfig::FileOut(_) => AdapterKind::FileOut,
            AdapterConfig::HttpIn(_) => AdapterKind::HttpIn,
            AdapterConfig::HttpOut(_) => AdapterKind::HttpOut,
            AdapterConfig::SqlIn(_) => AdapterKind::SqlIn,
            AdapterConfig::SqlOut(_) => AdapterKind::SqlOut,
            AdapterConfig::RabbitmqIn { .. } => AdapterKind::RabbitmqIn,
            AdapterConfig::RabbitmqOut(_) => AdapterKind::RabbitmqOut,
            AdapterConfig::NatsIn { .. } => AdapterKind::NatsIn,
            AdapterConfig::NatsOut(_) => AdapterKind::NatsOut,
            AdapterConfig::MqttIn { .. } => AdapterKind::MqttIn,
            AdapterConfig::MqttOut(_) => AdapterKind::MqttOut,
            AdapterConfig::RedisIn { .. } => AdapterKind::RedisIn,
            AdapterConfig::RedisOut(_) => AdapterKind::RedisOut,
        }
    }

    /// Whether it feeds its channel (rather than consuming it).
    pub fn is_inbound(&self) -> bool {
        self.kind().is_inbound()
    }

    /// Where it reads or writes, in a few words, for graphs and logs: the directory, the
    /// listening address and path, the URL or the database (its password hidden).
    pub fn endpoint(&self) -> String {
        match &self.config {
            AdapterConfig::FileIn(c) => format!("{}/{}", c.dir().display(), c.glob().as_str()),
            AdapterConfig::FileOut(c) => c.dir().display().to_string(),
            AdapterConfig::HttpIn(c) => format!("POST http://{}{}", c.address, c.path),
            AdapterConfig::HttpOut(c) => c.url.as_str().to_owned(),
            AdapterConfig::SqlIn(c) => c.connection.redacted_url(),
            AdapterConfig::SqlOut(c) => c.connection.redacted_url(),
            AdapterConfig::RabbitmqIn { source, .. } => {
                format!("{} queue {}", source.url.redacted(), source.queue)
            }
            AdapterConfig::RabbitmqOut(c) => {
                format!("{} exchange {}", c.url.redacted(), c.exchange)
            }
            AdapterConfig::NatsIn { source, .. } => format!(
                "{} stream {} consumer {}",
                redact_url(&source.url),
                source.stream.name,
                source.consumer
            ),
            AdapterConfig::NatsOut(c) => {
                format!("{} subject {}", redact_url(&c.url), c.subject.as_str())
            }
            AdapterConfig::MqttIn { source, .. } => format!(
                "mqtt://{}:{} filter {}",
                source.broker.host, source.broker.port, source.filter
            ),
            AdapterConfig::RedisIn { source, .. } => format!(
                "{} stream {} group {}",
                redact_url(&source.url),
                source.stream,
                source.group
            ),
            AdapterConfig::RedisOut(c) => {
                format!("{} stream {}", redact_url(&c.url), c.stream.as_str())
            }
            AdapterConfig::MqttOut(c) => format!(
                "mqtt://{}:{} topic {}",
                c.broker.host,
                c.broker.port,
                c.topic.as_str()
            ),
        }
    }
}

/// An adapter's kind and configuration.
#[derive(Debug, Clone)]
pub enum AdapterConfig {
    /// `file-in`
    FileIn(FileSourceConfig),
    /// `file-out`
    FileOut(FileSinkConfig),
    /// `http-in`
    HttpIn(HttpInboundConfig),
    /// `http-out`
    HttpOut(HttpOutboundConfig),
    /// `sql-in`
    SqlIn(SqlInboundConfig),
    /// `sql-out`
    SqlOut(SqlOutboundConfig),
    /// `rabbitmq-in`
    RabbitmqIn {
        /// The queue and what to declare.
        source: AmqpSourceConfig,
        /// `window:` deliveries unacknowledged at most (default 64).
        window: usize,
    },
    /// `rabbitmq-out`
    RabbitmqOut(AmqpOutboundConfig),
    /// `nats-in`
    NatsIn {
        /// The stream and durable consumer.
        source: JetStreamSourceConfig,
        /// `window:` deliveries unacknowledged at most (default 64).
        window: usize,
    },
    /// `nats-out`
    NatsOut(JetStreamOutboundConfig),
    /// `mqtt-in`
    MqttIn {
        /// The broker, session and subscription.
        source: MqttSourceConfig,
        /// `window:` publishes unacknowledged at most (the receive maximum, default 16).
        window: usize,
    },
    /// `mqtt-out`
    MqttOut(MqttOutboundConfig),
    /// `redis-in`
    RedisIn {
        /// The stream, consumer group and consumer.
        source: RedisStreamSourceConfig,
        /// `window:` entries unacknowledged at most (default 64).
        window: usize,
    },
    /// `redis-out`
    RedisOut(RedisStreamOutboundConfig),
}

/// The tower layers around an outbound adapter, and its consumer's settings. All off for an
/// inbound adapter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutboundPlan {
    /// `concurrency:` messages in processing at once (default 1).
    pub concurrency: Option<usize>,
    /// `rate-limit:` at most this many calls per period.
    pub rate_limit: Option<(u64, Duration)>,
    /// `timeout:` a deadline per attempt; an attempt that takes longer fails (and is retried
    /// as the redelivery policy says).
    pub timeout: Option<Duration>,
    /// `redelivery:` how the consumer retries, instead of the channel's policy.
    pub redelivery: Option<RedeliveryPolicy>,
}
