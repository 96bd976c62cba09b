//! What every messaging bridge kind shares: an inbound bridge's subscription and its window,
//! how it connects (once to prove the broker answers, then for good), and which of a
//! bridge's errors are for good.

use eip_adapters::bridge::{
    BridgeError, ConnectionHealth, InboundBridge, InboundBridgeHandle, Outbound, Publisher, Source,
};
use eip_core::log::Escaped;
use futures::future::BoxFuture;
use tower::BoxError;

use super::{Endpoint, Inbound, Site, Started};
use crate::diagnostic::Check;
use crate::settings::Settings;

/// An inbound bridge's source and how many of its deliveries may be unacknowledged at once.
#[derive(Debug, Clone)]
pub struct Subscription<C> {
    /// The queue, stream or subscription, as the adapter crate configures it.
    pub source: C,
    /// `window:` deliveries unacknowledged at most.
    pub window: usize,
}

impl<C> Subscription<C> {
    /// `source`, with its `window:` read from `settings` (`default` when not written).
    pub(super) fn read(
        check: &mut Check<'_>,
        settings: &Settings<'_>,
        source: C,
        default: usize,
    ) -> Self {
        Subscription {
            source,
            window: settings.window(check, default),
        }
    }
}

impl<C: Clone + Send + 'static> Subscription<C> {
    /// Connects this subscription as an inbound bridge over the sources `make` makes of its
    /// source: one connects now, to prove the broker answers, then the bridge gets its own.
    pub(super) fn connect_bridge<'a, S: Source>(
        &'a self,
        site: Site<'a>,
        make: fn(C) -> Result<S, BridgeError>,
    ) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(inbound(site, self.source.clone(), make, self.window))
    }
}

/// An inbound bridge over the sources `make` makes of `source`: one connects now, so a wrong
/// URL or a refused declaration stops the start, and is let go; the bridge then gets a fresh
/// one and keeps its own connection, reconnecting as it must.
async fn inbound<C: Clone, S: Source>(
    site: Site<'_>,
    source: C,
    make: fn(C) -> Result<S, BridgeError>,
    window: usize,
) -> Result<Endpoint, BoxError> {
    let mut probe = make(source.clone())?;
    probe.connect(window).await?;
    drop(probe);
    let source = make(source)?;
    let channel = site.channel.clone();
    let name = site.name.to_owned();
    let health = ConnectionHealth::new();
    let record = health.clone();
    let gate = site.pause;
    Ok(Endpoint::Inbound(Box::new(Ready {
        start: Box::new(move || {
            InboundBridge::new(source, channel, window)
                .with_health(record)
                .pause_gate(gate)
                .spawn()
        }),
        name,
        health,
    })))
}

/// An outbound bridge's endpoint: its publisher, with the record of its connection.
pub(super) fn outbound<P: Publisher>(publisher: Outbound<P>) -> Endpoint {
    let health = publisher.health();
    Endpoint::outbound(publisher, refused_for_good).with_health(health)
}

/// Whether a bridge's error says that trying again would fail the same way.
pub(super) fn refused_for_good(error: &BoxError) -> bool {
    error
        .downcast_ref::<BridgeError>()
        .is_some_and(BridgeError::is_permanent)
}

/// A connected inbound bridge, and how to start it.
struct Ready {
    start: Box<dyn FnOnce() -> InboundBridgeHandle + Send>,
    name: String,
    health: ConnectionHealth,
}

impl Inbound for Ready {
    fn health(&self) -> Option<ConnectionHealth> {
        Some(self.health.clone())
    }

    fn start(self: Box<Self>) -> Box<dyn Started> {
        Box::new(Bridging {
            handle: (self.start)(),
            name: self.name,
        })
    }
}

struct Bridging {
    handle: InboundBridgeHandle,
    name: String,
}

impl Started for Bridging {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Err(error) = self.handle.shutdown().await {
                tracing::warn!(adapter = %self.name, error = %Escaped(&error), "bridge stopped with an error");
            }
        })
    }
}
