//! NATS JetStream as a channel store: a channel's messages in a stream of its own.

use std::sync::Arc;
use std::time::Duration;

use eip_core::message::Message;
use eip_core::store::{
    Backend, BackendError, MessageStore, Overflow, SUBSCRIPTION_SEPARATOR, StoreFailure, Waiting,
};
use futures::future::BoxFuture;

use super::broker::{self, BrokerStore, Limits, Publish, Reading};
use crate::bridge::BridgeError;
use crate::nats::{
    JetStreamOutbound, JetStreamOutboundConfig, JetStreamSource, JetStreamSourceConfig, Retention,
    StreamDeclaration, SubjectTemplate,
};

/// The durable consumer every process of a point-to-point channel reads through.
const QUEUE_CONSUMER: &str = "eip";

/// How long the server keeps the consumer of a subscription that ended with its subscriber
/// after nobody reads it (it is deleted when the subscription closes, or after this).
const PASSING_CONSUMER_LIFE: Duration = Duration::from_secs(60);

/// The channel stores of one channel in a JetStream stream; see the [module](super).
///
/// A point-to-point channel's stream keeps a message until one consumer acknowledged it
/// (work-queue retention) and every process reads it through one durable consumer, `eip`; a
/// publish-subscribe channel's keeps it until each subscription's durable consumer (named
/// after the subscription) acknowledged it (interest retention). Messages are published with
/// their eip id as `Nats-Msg-Id`, so a send retried after a lost ack is stored once.
///
/// ```no_run
/// use std::sync::Arc;
/// use eip_adapters::store::JetStream;
/// use eip_core::channel::PublishSubscribe;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let readings = PublishSubscribe::builder("readings")
///     .store(Arc::new(JetStream::fan_out("nats://127.0.0.1:4222", "READINGS")?))
///     .build()?;
/// // Each process subscribing as `archive` competes for the subscription's messages.
/// let mut archive = readings.durable_subscribe("archive");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JetStream {
    url: String,
    stream: String,
    subject: SubjectTemplate,
    fan_out: bool,
    limits: Limits,
    ack_wait: Duration,
}

impl JetStream {
    /// A point-to-point channel in the stream `stream` (created if missing), published on the
    /// subject `eip.STREAM`.
    pub fn queue(url: impl Into<String>, stream: impl Into<String>) -> Result<Self, BridgeError> {
        JetStream::new(url.into(), stream.into(), false)
    }

    /// A publish-subscribe channel in the stream `stream` (created if missing).
    pub fn fan_out(url: impl Into<String>, stream: impl Into<String>) -> Result<Self, BridgeError> {
        JetStream::new(url.into(), stream.into(), true)
    }

    fn new(url: String, stream: String, fan_out: bool) -> Result<Self, BridgeError> {
        let subject = SubjectTemplate::fixed(&format!("eip.{stream}"))
            .map_err(|e| BridgeError::Config(format!("stream `{stream}`: {e}")))?;
        let mut problems = Vec::new();
        StreamDeclaration::new(&stream, [subject.as_str()]).problems(&mut problems);
        if !problems.is_empty() {
            return Err(BridgeError::Config(problems.join("; ")));
        }
        Ok(JetStream {
            url,
            stream,
            subject,
            fan_out,
            limits: Limits::default(),
            ack_wait: Duration::from_secs(30),
        })
    }

    /// Publishes on `subject` instead of `eip.STREAM` (the stream stores that subject).
    pub fn subject(mut self, subject: &str) -> Result<Self, BridgeError> {
        self.subject = SubjectTemplate::fixed(subject)
            .map_err(|e| BridgeError::Config(format!("stream `{}`: {e}", self.stream)))?;
        Ok(self)
    }

    /// How many sends may wait for their acks at once (at least 1).
    pub fn publish_window(mut self, window: usize) -> Self {
        self.limits.publish_window = window.max(1);
        self
    }

    /// How long a send keeps trying while JetStream can not be reached.
    pub fn retry_for(mut self, wait: Duration) -> Self {
        self.limits.retry_for = wait;
        self
    }

    /// How long JetStream waits for a message's ack before delivering it again (30 s by
    /// default): longer than a message may wait in a process's window and be processed.
    pub fn ack_wait(mut self, wait: Duration) -> Self {
        self.ack_wait = wait;
        self
    }

    fn declaration(&self) -> StreamDeclaration {
        let mut stream = StreamDeclaration::new(&self.stream, [self.subject.as_str()]);
        stream.retention = if self.fan_out {
            Retention::Interest
        } else {
            Retention::WorkQueue
        };
        stream
    }

    fn publisher(&self) -> Result<Arc<dyn Publish>, StoreFailure> {
        let mut config = JetStreamOutboundConfig::new(self.url.clone(), self.subject.clone());
        config.stream = Some(self.declaration());
        let outbound = JetStreamOutbound::new(config).map_err(StoreFailure::new)?;
        Ok(Arc::new(outbound))
    }

    fn source(&self, consumer: &str) -> JetStreamSourceConfig {
        let mut config = JetStreamSourceConfig::new(self.url.clone(), self.declaration(), consumer);
        config.ack_wait = self.ack_wait;
        config.subject_header = false;
        config
    }

    fn describe(&self, what: &str) -> String {
        format!(
            "{} stream {}{what}",
            crate::nats::describe_url(&self.url),
            self.stream
        )
    }

    fn failed(&self, store: String, cause: StoreFailure) -> BackendError {
        BackendError {
            store,
            location: self.location(),
            cause,
        }
    }
}

impl Publish for JetStreamOutbound {
    fn publish<'a>(&'a self, msg: &'a Message) -> BoxFuture<'a, Result<(), BridgeError>> {
        Box::pin(async move { JetStreamOutbound::publish(self, msg).await.map(drop) })
    }
}

/// A consumer name for a subscription: JetStream's names have no `.`, `*`, `>` or spaces.
fn consumer_name(subscription: &str) -> String {
    subscription
        .chars()
        .map(|c| match c {
            '.' | '*' | '>' => '_',
            c if c.is_whitespace() || c.is_control() => '_',
            c => c,
        })
        .collect()
}

impl Backend for JetStream {
    fn is_durable(&self) -> bool {
        true
    }

    fn open(
        &self,
        name: &str,
        capacity: usize,
        _overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        if !self.fan_out && name.contains(SUBSCRIPTION_SEPARATOR) {
            let why = "a work-queue stream keeps a point-to-point channel; a publish-subscribe \
                       channel's stream is opened with JetStream::fan_out";
            return Err(self.failed(
                name.to_owned(),
                StoreFailure::new(std::io::Error::other(why)),
            ));
        }
        let publisher = self
            .publisher()
            .map_err(|cause| self.failed(name.to_owned(), cause))?;
        let source = if self.fan_out {
            None
        } else {
            let source = JetStreamSource::new(self.source(QUEUE_CONSUMER))
                .map_err(|e| self.failed(name.to_owned(), StoreFailure::new(e)))?;
            Some((source, Reading::OnDemand))
        };
        BrokerStore::open(
            self.describe(""),
            capacity,
            Some(publisher),
            source,
            self.limits,
        )
        .map_err(|cause| self.failed(name.to_owned(), cause))
    }

    fn fans_out(&self) -> bool {
        self.fan_out
    }

    fn open_subscription(
        &self,
        channel: &str,
        name: Option<&str>,
        capacity: usize,
        _overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        let store = format!("{channel}{SUBSCRIPTION_SEPARATOR}{}", name.unwrap_or(""));
        if !self.fan_out {
            let why = "a work-queue stream has no subscriptions";
            return Err(self.failed(store, StoreFailure::new(std::io::Error::other(why))));
        }
        let consumer = match name {
            Some(name) => consumer_name(name),
            None => broker::passing_name("eip"),
        };
        let mut config = self.source(&consumer);
        // A subscription sees what is published after it began.
        config.deliver_new = true;
        if name.is_none() {
            config.inactive_threshold = Some(PASSING_CONSUMER_LIFE);
        }
        let source = JetStreamSource::new(config)
            .map_err(|e| self.failed(store.clone(), StoreFailure::new(e)))?;
        BrokerStore::open(
            self.describe(&format!(" consumer {consumer}")),
            capacity,
            None,
            Some((source, Reading::AtOnce)),
            self.limits,
        )
        .map_err(|cause| self.failed(store, cause))
    }

    fn names(&self, _prefix: &str) -> Vec<String> {
        // Durable subscriptions are found again by subscribing under their names.
        Vec::new()
    }

    fn remove(&self, name: &str) -> Waiting<'_, Result<(), BackendError>> {
        let name = name.to_owned();
        Box::pin(async move {
            // Only a durable subscription's consumer is removed: the stream is shared.
            let Some(subscription) = broker::subscription_of(&name).filter(|_| self.fan_out) else {
                return Ok(());
            };
            crate::nats::delete_consumer(
                &self.url,
                &self.stream,
                &consumer_name(subscription),
                Duration::from_secs(5),
            )
            .await
            .map_err(|e| self.failed(name.clone(), StoreFailure::new(e)))
        })
    }

    fn location(&self) -> String {
        self.describe("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_name_becomes_a_consumer_name() {
        assert_eq!(consumer_name("audit.eu west"), "audit_eu_west");
        assert_eq!(consumer_name("route-1"), "route-1");
    }

    #[test]
    fn a_stream_name_is_checked() {
        let error = JetStream::queue("nats://127.0.0.1:4222", "bad.name")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("bad.name"), "{error}");
    }
}
