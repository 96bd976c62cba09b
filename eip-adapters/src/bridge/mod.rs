//! Messaging bridges: an eip channel connected to a broker's destination, each way.
//!
//! A bridge is a pair of channel adapters whose outside system is another messaging system.
//! Every broker module (`amqp`, `nats`, `mqtt`, `redis`, one cargo feature each) provides the
//! same two halves:
//! - **outbound**, channel → broker: an [`Outbound`], the `tower::Service<Message>` over the
//!   broker's [`Publisher`], which publishes and answers `Ok` only once the broker confirmed
//!   (publisher confirm, JetStream ack, PUBACK, the `XADD` reply), driven by a consumer
//!   endpoint like any outbound adapter (`Err` is redelivered with the channel's backoff, then
//!   dead-lettered); the publisher owns its connection ([`Reconnect`], or MQTT's own task)
//!   and reconnects after a failure, so a broker restart costs retries, not messages; where
//!   it publishes is a [`DestinationTemplate`] (fixed, or made from the message: an eip
//!   template);
//! - **inbound**, broker → channel: a [`Source`] run by [`InboundBridge`], which acknowledges
//!   to the broker only once the channel accepted the message, keeps at most a window of
//!   deliveries unacknowledged, and reconnects with [`Backoff`].
//!
//! Headers travel both ways: [`envelope`] says how on brokers that carry text headers only.
//! Delivery is at least once: a broker restart or a lost connection can deliver a message
//! twice, never lose one that was confirmed.

pub mod envelope;

mod backoff;
#[cfg(any(feature = "nats", feature = "redis"))]
pub(crate) mod config;
mod destination;
mod inbound;
mod outbound;
mod reconnect;

pub use crate::health::{ConnectionHealth, HealthReport, LastError};
pub use backoff::Backoff;
#[cfg(any(feature = "nats", feature = "mqtt", feature = "redis"))]
pub(crate) use destination::destination_error;
pub use destination::{DestinationError, DestinationTemplate};
pub use inbound::{Delivery, InboundBridge, InboundBridgeHandle, Source};
pub use outbound::{Outbound, Publisher};
pub use reconnect::Reconnect;

/// What can go wrong in a bridge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The broker could not be reached, refused the login, or the connection was lost.
    #[error("{broker}: {reason}")]
    Connection {
        /// Which broker and where (`rabbitmq at 127.0.0.1:5672`), with any password hidden.
        broker: String,
        /// What happened.
        reason: String,
    },
    /// The broker refused a declaration or a publish (a missing exchange, a message too
    /// large, a negative confirm).
    #[error("{broker} refused {what}: {reason}")]
    Refused {
        /// Which broker.
        broker: String,
        /// What was refused (`publish to exchange orders`).
        what: String,
        /// The broker's answer.
        reason: String,
        /// Whether trying again would fail the same way (the consumer then dead-letters the
        /// message at once).
        permanent: bool,
    },
    /// The configuration can not work (a missing environment variable, a bad URL).
    #[error("configuration: {0}")]
    Config(String),
    /// The channel the bridge feeds was closed.
    #[error("channel `{0}` is closed")]
    ChannelClosed(String),
    /// The channel did not take a message (its store failed); the broker keeps it.
    #[error("the channel did not take a message: {0}")]
    Send(String),
    /// The bridge's task failed.
    #[error("bridge task: {0}")]
    Task(String),
}

impl BridgeError {
    /// `broker` refused `what` with `reason`; `permanent` when asking again gets the same
    /// answer.
    pub fn refused(
        broker: impl Into<String>,
        what: impl Into<String>,
        reason: impl std::fmt::Display,
        permanent: bool,
    ) -> Self {
        BridgeError::Refused {
            broker: broker.into(),
            what: what.into(),
            reason: reason.to_string(),
            permanent,
        }
    }

    /// Whether trying again would fail the same way.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            BridgeError::Refused {
                permanent: true,
                ..
            } | BridgeError::Config(_)
        )
    }
}
