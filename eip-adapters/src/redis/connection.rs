//! One connection to Redis, as both halves of the bridge make it: a fresh multiplexed
//! connection per attempt, with a deadline on every answer.
//!
//! The client's own reconnection is not used: a bridge drops a connection on the first error
//! that is not the server's answer (a cut, a reply that did not come in time) and makes a new
//! one with its [`Backoff`](crate::bridge::Backoff). What was in flight on the old connection is
//! the consumer group's to deliver again (inbound) or the channel's to retry (outbound).

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, RedisError};

use crate::bridge::BridgeError;

/// `redis at HOST:PORT`, with any user and password left out.
pub(crate) fn describe(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split_once('/').map_or(host, |(host, _)| host);
    format!("redis at {host}")
}

/// How a connection is made.
pub(crate) struct LinkSettings<'a> {
    pub(crate) url: &'a str,
    pub(crate) broker: &'a str,
    pub(crate) connect_timeout: Duration,
    /// How long any command waits for its answer (a blocking read: on top of its block).
    pub(crate) response_timeout: Duration,
}

/// Checks that `url` is a Redis URL, for a config check.
pub(crate) fn check_url(url: &str, problems: &mut Vec<String>) {
    if url.trim().is_empty() {
        problems.push("the url is empty".to_owned());
    } else if let Err(e) = Client::open(url) {
        problems.push(format!("`{}` is not a Redis URL: {e}", describe(url)));
    }
}

/// Connects; a server that is down is an error at once (no retry inside).
pub(crate) async fn connect(
    settings: LinkSettings<'_>,
) -> Result<MultiplexedConnection, BridgeError> {
    let client = Client::open(settings.url)
        .map_err(|e| BridgeError::Config(format!("{}: {e}", settings.broker)))?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(settings.connect_timeout))
        .set_response_timeout(Some(settings.response_timeout));
    let connecting = client.get_multiplexed_async_connection_with_config(&config);
    match tokio::time::timeout(
        settings.connect_timeout + Duration::from_secs(1),
        connecting,
    )
    .await
    {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(e)) => Err(lost(settings.broker, "connecting", &e)),
        Err(_) => Err(BridgeError::Connection {
            broker: settings.broker.to_owned(),
            reason: format!("no answer within {:?}", settings.connect_timeout),
        }),
    }
}

/// Whether `e` is the server's answer (an error reply) rather than a lost connection.
pub(crate) fn is_reply(e: &RedisError) -> bool {
    e.code().is_some()
}

/// A connection error: `what` failed with `e`.
pub(crate) fn lost(broker: &str, what: &str, e: &RedisError) -> BridgeError {
    BridgeError::Connection {
        broker: broker.to_owned(),
        reason: format!("{what}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_url_hides_the_password_and_the_database() {
        assert_eq!(
            describe("redis://:secret@127.0.0.1:6379/2"),
            "redis at 127.0.0.1:6379"
        );
        assert_eq!(
            describe("redis://127.0.0.1:6379"),
            "redis at 127.0.0.1:6379"
        );
    }

    #[test]
    fn a_url_that_is_not_one_is_a_problem() {
        let mut problems = Vec::new();
        check_url("redis://127.0.0.1:6379", &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        check_url("", &mut problems);
        check_url("http://x", &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
