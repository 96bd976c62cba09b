//! What a kind hands the compiler once connected: an inbound adapter ready to feed its
//! channel, or an outbound one's service, ready for a consumer to drive.
//!
//! The compiler does the rest the same way for every kind: it puts an outbound service behind
//! the entry's layers (`rate-limit`, `timeout`) and a consumer of its channel (`concurrency`,
//! `redelivery`), and starts, lists and stops the inbound ones.

use std::net::SocketAddr;

use eip_adapters::health::ConnectionHealth;
use eip_core::channel::{Channel, DeadLetterChannel, InvalidMessageChannel};
use eip_core::endpoint::PauseGate;
use eip_core::message::Message;
use futures::future::BoxFuture;
use tower::util::BoxService;
use tower::{BoxError, Service, ServiceExt};

/// Where an adapter connects: its name and its channel.
#[derive(Debug, Clone)]
pub struct Site<'a> {
    /// The adapter's name.
    pub name: &'a str,
    /// The channel it feeds or consumes.
    pub channel: &'a Channel,
    /// The invalid message channel of the channel's datatype, if it has one: where an inbound
    /// adapter puts what it read but could not make a message of.
    pub invalid: Option<InvalidMessageChannel>,
    /// The adapter's pause switch, as its inbound side watches it (see
    /// [`Detours`](crate::compile::Detours)); an outbound adapter is paused by its consumer.
    pub pause: PauseGate,
}

/// Where an inbound adapter puts what it read but could not make a message of (a malformed
/// CSV row, a JSON line that is not JSON), so the rest of what it read goes on.
#[derive(Debug, Clone)]
pub enum Rejects {
    /// The invalid message channel of the channel's datatype.
    Invalid(InvalidMessageChannel),
    /// The channel's dead letter channel (the flow's `dead-letters`, or the one the channel
    /// names), for a channel without a datatype: a dead letter with reason `invalid`, as a
    /// route buries a part its splitter could not read.
    DeadLetters(DeadLetterChannel),
}

impl Site<'_> {
    /// Where rejected input goes: the invalid message channel if the channel's datatype has
    /// one, or else the channel's dead letter channel (`None` only for a channel made outside
    /// a flow without one).
    pub fn rejects(&self) -> Option<Rejects> {
        match &self.invalid {
            Some(invalid) => Some(Rejects::Invalid(invalid.clone())),
            None => self
                .channel
                .dead_letter_channel()
                .map(|dead_letters| Rejects::DeadLetters(dead_letters.clone())),
        }
    }
}

/// A connected adapter, not yet moving messages.
pub enum Endpoint {
    /// It feeds its channel once started.
    Inbound(Box<dyn Inbound>),
    /// A service a consumer of its channel drives: `Ok` acknowledges the message.
    Outbound {
        /// The adapter.
        service: BoxService<Message, (), BoxError>,
        /// Whether an error says that trying again would fail the same way (the message is
        /// then dead-lettered at once).
        permanent: fn(&BoxError) -> bool,
        /// A bridge's record of its connection, for the flow's watchers.
        health: Option<ConnectionHealth>,
    },
}

impl Endpoint {
    /// An outbound adapter's endpoint.
    pub fn outbound<S>(service: S, permanent: fn(&BoxError) -> bool) -> Self
    where
        S: Service<Message> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
    {
        Endpoint::Outbound {
            service: BoxService::new(service.map_response(drop).map_err(Into::into)),
            permanent,
            health: None,
        }
    }

    /// An outbound endpoint that keeps its connection's record in `health` (a bridge's).
    pub fn with_health(self, health: Option<ConnectionHealth>) -> Self {
        match self {
            Endpoint::Outbound {
                service, permanent, ..
            } => Endpoint::Outbound {
                service,
                permanent,
                health,
            },
            inbound => inbound,
        }
    }

    /// The record of its connection's ups and downs, for a bridge.
    pub fn health(&self) -> Option<ConnectionHealth> {
        match self {
            Endpoint::Inbound(inbound) => inbound.health(),
            Endpoint::Outbound { health, .. } => health.clone(),
        }
    }
}

/// An inbound adapter, connected (an HTTP server bound, a broker answering).
pub trait Inbound: Send {
    /// Where it reads, once connected, when that says more than the plan: an HTTP server's
    /// bound address (so port 0 shows the port taken).
    fn endpoint(&self) -> Option<String> {
        None
    }

    /// The address an HTTP server is bound to.
    fn local_addr(&self) -> Option<SocketAddr> {
        None
    }

    /// A bridge's record of its connection's ups and downs.
    fn health(&self) -> Option<ConnectionHealth> {
        None
    }

    /// Starts feeding its channel.
    fn start(self: Box<Self>) -> Box<dyn Started>;

    /// Lets go of what connecting took, when the flow does not start after all (a later
    /// adapter failed to connect).
    fn abandon(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// A started inbound adapter.
pub trait Started: Send {
    /// Stops taking anything new; what was accepted is in its channel.
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()>;
}
