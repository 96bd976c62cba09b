//! One connection to RabbitMQ, as both halves of the bridge make it: where the server is, a
//! fresh connection per attempt, the exchanges and queues the bridge declares, and the guard
//! that notices a connection lapin stopped settling.
//!
//! lapin's own recovery is not used: after any failure a bridge drops its connection and makes
//! a new one with its [`Backoff`](crate::bridge::Backoff), declaring again what it declared.

use std::time::Duration;

use lapin::options::{ExchangeDeclareOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, ExchangeKind};

use crate::bridge::BridgeError;

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

    /// The broker as errors and logs name it: `rabbitmq at amqp://guest:***@…`.
    pub(crate) fn broker(&self) -> String {
        format!("rabbitmq at {}", self.redacted())
    }
}

impl std::fmt::Debug for AmqpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Connects to `url` within `timeout`.
pub(crate) async fn connect(url: &AmqpUrl, timeout: Duration) -> Result<Connection, BridgeError> {
    let failed = |reason: String| BridgeError::Connection {
        broker: url.broker(),
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
        .map_err(|e| refused(url, format!("deleting queue `{queue}`"), e));
    let _ = connection.close(200, "done".into()).await;
    deleted.map(drop)
}

/// The connection to `url` is lost (or could not be used).
pub(crate) fn lost(url: &AmqpUrl, e: impl std::fmt::Display) -> BridgeError {
    BridgeError::Connection {
        broker: url.broker(),
        reason: e.to_string(),
    }
}

/// The broker refused `what` (a declaration, a binding, a consumer): permanent, since asking
/// again gets the same answer.
pub(crate) fn refused(url: &AmqpUrl, what: String, e: impl std::fmt::Display) -> BridgeError {
    BridgeError::refused(url.broker(), what, e, true)
}

/// An exchange a bridge declares before publishing to it or binding to it.
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
    pub(crate) async fn declare(
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
            .map_err(|e| refused(url, format!("declaring exchange `{name}`"), e))
    }
}

/// Declares the queue `queue` on `channel` with `options` (idempotent; refused if it exists
/// with other settings).
pub(crate) async fn declare_queue(
    channel: &lapin::Channel,
    queue: &str,
    options: QueueDeclareOptions,
    url: &AmqpUrl,
) -> Result<(), BridgeError> {
    channel
        .queue_declare(queue.into(), options, FieldTable::default())
        .await
        .map(drop)
        .map_err(|e| refused(url, format!("declaring queue `{queue}`"), e))
}

/// How often a wait on lapin checks that its connection is still up.
const LIVENESS_CHECK: Duration = Duration::from_secs(1);

/// `op`, a wait on lapin, or `None` once its connection is no longer up. lapin does not always
/// settle what waits when a connection ends: after a `connection.close` from the broker followed
/// at once by the end of the socket (a broker stopping while the link to it was slow), acks were
/// seen pending for good, and a bridge whose window is full of them never reconnects; the
/// consumer's stream is guarded the same way. The connection's status does change, so it is
/// looked at every second.
pub(crate) async fn while_connected<T>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        let url = AmqpUrl("amqp://guest:s3cret@127.0.0.1:5672/%2f".into());
        assert_eq!(url.redacted(), "amqp://guest:***@127.0.0.1:5672/%2f");
        assert_eq!(format!("{url:?}"), "amqp://guest:***@127.0.0.1:5672/%2f");
        let plain = AmqpUrl("amqp://127.0.0.1:5672".into());
        assert_eq!(plain.redacted(), "amqp://127.0.0.1:5672");
    }
}
