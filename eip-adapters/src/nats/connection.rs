//! One connection to NATS, as both halves of the bridge make it: a fresh client per attempt,
//! watched for its loss, and the stream the bridge declares.
//!
//! The client's own reconnection is not relied on to keep a bridge going: as soon as the client
//! reports the connection lost, the bridge drops it and makes a new one with its
//! [`Backoff`](crate::bridge::Backoff), declaring again what it declared. What was in flight on the
//! old connection is JetStream's to redeliver (inbound) or the channel's to retry (outbound).

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use async_nats::{ConnectOptions, Event};
use tokio::sync::watch;

use crate::bridge::BridgeError;

/// A stream the bridge creates when it is missing (and leaves as it is when it exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDeclaration {
    /// The stream's name (`ORDERS`).
    pub name: String,
    /// The subjects it stores (`orders.>`); with none, the stream is not created, only looked
    /// up, and must exist.
    pub subjects: Vec<String>,
    /// How long JetStream remembers a `Nats-Msg-Id` to drop a second publish of the same eip
    /// message (2 minutes by default).
    pub duplicate_window: Duration,
    /// When the stream lets a message go (a created stream's; an existing one keeps its own).
    pub retention: Retention,
}

/// When a stream lets a message go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// At its limits (age, count, size) only; acks change nothing (the default).
    #[default]
    Limits,
    /// Once every consumer there is has acknowledged it (a publish-subscribe channel's
    /// subscriptions).
    Interest,
    /// Once one consumer acknowledged it (a point-to-point channel's competing consumers).
    WorkQueue,
}

impl StreamDeclaration {
    /// The stream `name` storing `subjects`, created if missing.
    pub fn new(
        name: impl Into<String>,
        subjects: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        StreamDeclaration {
            name: name.into(),
            subjects: subjects.into_iter().map(Into::into).collect(),
            duplicate_window: Duration::from_secs(120),
            retention: Retention::Limits,
        }
    }

    /// The existing stream `name`, looked up and never created.
    pub fn existing(name: impl Into<String>) -> Self {
        StreamDeclaration::new(name, Vec::<String>::new())
    }

    /// Creates the stream if it is missing (or, with no subjects, checks that it exists).
    pub(crate) async fn declare(
        &self,
        js: &jetstream::Context,
        broker: &str,
    ) -> Result<stream::Stream, BridgeError> {
        let declared = if self.subjects.is_empty() {
            js.get_stream(&self.name).await.map_err(|e| e.to_string())
        } else {
            js.get_or_create_stream(stream::Config {
                name: self.name.clone(),
                subjects: self.subjects.clone(),
                duplicate_window: self.duplicate_window,
                retention: match self.retention {
                    Retention::Limits => stream::RetentionPolicy::Limits,
                    Retention::Interest => stream::RetentionPolicy::Interest,
                    Retention::WorkQueue => stream::RetentionPolicy::WorkQueue,
                },
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())
        };
        declared.map_err(|reason| BridgeError::Refused {
            broker: broker.to_owned(),
            what: format!("stream {} ({})", self.name, self.subjects.join(", ")),
            reason,
            permanent: false,
        })
    }

    /// Every problem with the declaration, for a config check.
    pub(crate) fn problems(&self, problems: &mut Vec<String>) {
        if !is_name(&self.name) {
            problems.push(format!(
                "stream name `{}` must be non-empty, without whitespace, `.`, `*` or `>`",
                self.name
            ));
        }
        for subject in &self.subjects {
            if subject.is_empty() || subject.contains(char::is_whitespace) {
                problems.push(format!("stream subject `{subject}` is not a NATS subject"));
            }
        }
    }
}

/// Whether `name` can name a stream or a consumer.
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '.' | '*' | '>'))
}

/// `nats at HOST:PORT`, with any user and password left out.
pub(crate) fn describe(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("nats at {host}")
}

/// A live connection: the JetStream context and a signal that turns `true` once the client
/// lost the connection.
pub(crate) struct Link {
    pub(crate) js: jetstream::Context,
    pub(crate) lost: watch::Receiver<bool>,
}

impl Link {
    /// Whether the connection was lost since it was made.
    pub(crate) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Completes once the connection is lost.
    pub(crate) async fn lost(&mut self) {
        // A dropped sender means the client is gone: lost as well.
        let _ = self.lost.wait_for(|lost| *lost).await;
    }
}

/// How a [`Link`] is made.
pub(crate) struct LinkSettings<'a> {
    pub(crate) url: &'a str,
    pub(crate) name: &'a str,
    pub(crate) connect_timeout: Duration,
    /// For JetStream API requests, publish acks and double acks.
    pub(crate) request_timeout: Duration,
}

/// Connects a fresh client; a server that is down is an error at once (no retry inside).
pub(crate) async fn connect(settings: LinkSettings<'_>) -> Result<Link, BridgeError> {
    let broker = describe(settings.url);
    let (lost_tx, lost) = watch::channel(false);
    let options = ConnectOptions::new()
        .name(settings.name)
        .connection_timeout(settings.connect_timeout)
        .request_timeout(Some(settings.request_timeout))
        .event_callback(move |event| {
            if matches!(event, Event::Disconnected | Event::Closed) {
                lost_tx.send_replace(true);
            }
            async {}
        });
    let client = tokio::time::timeout(
        settings.connect_timeout + Duration::from_secs(1),
        options.connect(settings.url),
    )
    .await
    .map_err(|_| BridgeError::Connection {
        broker: broker.clone(),
        reason: format!("no answer within {:?}", settings.connect_timeout),
    })?
    .map_err(|e| BridgeError::Connection {
        broker: broker.clone(),
        reason: e.to_string(),
    })?;
    let js = jetstream::context::ContextBuilder::new()
        .timeout(settings.request_timeout)
        .build(client);
    Ok(Link { js, lost })
}

/// Deletes the consumer `consumer` of `stream` (if it is there), on a connection of its own.
pub(crate) async fn delete_consumer(
    url: &str,
    stream: &str,
    consumer: &str,
    timeout: Duration,
) -> Result<(), BridgeError> {
    let link = connect(LinkSettings {
        url,
        name: "eip store",
        connect_timeout: timeout,
        request_timeout: timeout,
    })
    .await?;
    let refused = |reason: String| BridgeError::Refused {
        broker: describe(url),
        what: format!("deleting consumer {consumer} of stream {stream}"),
        reason,
        permanent: true,
    };
    let stream = link
        .js
        .get_stream(stream)
        .await
        .map_err(|e| refused(e.to_string()))?;
    match stream.delete_consumer(consumer).await {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("not found") => Ok(()),
        Err(e) => Err(refused(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_url_hides_the_password() {
        assert_eq!(
            describe("nats://u:secret@127.0.0.1:4222"),
            "nats at 127.0.0.1:4222"
        );
        assert_eq!(describe("127.0.0.1:4222"), "nats at 127.0.0.1:4222");
    }

    #[test]
    fn names_with_dots_or_wildcards_are_not_names() {
        assert!(is_name("ORDERS_1"));
        for bad in ["", "a.b", "a*", "a>", "a b"] {
            assert!(!is_name(bad), "{bad}");
        }
    }
}
