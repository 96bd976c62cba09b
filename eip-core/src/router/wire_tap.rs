//! Wire Tap: a copy of every message to a tap channel, the main flow untouched.
//!
//! [`WireTap`] wraps a service. For each message it offers a copy (sharing payload and headers,
//! no bytes copied) to the tap channel, then calls the wrapped service with the message: same
//! readiness, same response, same errors, same future as without the tap. The copy is offered
//! once, without waiting: when the tap channel is full or closed the copy is dropped and counted
//! in [`WireTapStats::dropped`], and the main flow carries on. A tap is for observing (audit,
//! debugging, metrics); a flow that must not lose any copy wants a
//! [Recipient List](super::RecipientList) or a publish-subscribe channel instead.
//!
//! On a publish-subscribe tap channel the copy is published only when every subscription has
//! room; one that fills up at that very moment may miss it (counted as dropped, though the
//! others got it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tower::{Layer, Service};

use crate::channel::Channel;
use crate::message::Message;

/// Sends a copy of each message to a tap channel, without waiting, then calls the inner service.
///
/// ```
/// use eip_core::{Message, channel::PointToPoint};
/// use eip_core::router::WireTap;
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let orders = PointToPoint::new("orders", 10).unwrap();
/// let audit = PointToPoint::new("audit", 1).unwrap();
/// let mut tapped = WireTap::new(orders.sender(), audit.clone());
/// for n in 0..3 {
///     tapped.ready().await.unwrap().call(Message::new(format!("order {n}"))).await.unwrap();
/// }
/// assert_eq!(orders.stats().accepted, 3, "the main flow got every message");
/// assert_eq!(tapped.stats().tapped, 1, "the tap had room for one copy");
/// assert_eq!(tapped.stats().dropped, 2);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct WireTap<S> {
    inner: S,
    tap: Channel,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    tapped: AtomicU64,
    dropped: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WireTapStats {
        WireTapStats {
            tapped: self.tapped.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

/// A wire tap's counters (shared by its clones and by every tap one [`WireTapLayer`] made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireTapStats {
    /// Copies the tap channel accepted.
    pub tapped: u64,
    /// Copies dropped because the tap channel was full or closed.
    pub dropped: u64,
}

impl<S> WireTap<S> {
    /// Taps the messages going into `inner`, copying them to `tap`.
    pub fn new(inner: S, tap: impl Into<Channel>) -> Self {
        WireTap {
            inner,
            tap: tap.into(),
            counters: Arc::default(),
        }
    }

    /// A layer that taps the messages going into a service.
    pub fn layer(tap: impl Into<Channel>) -> WireTapLayer {
        WireTapLayer::new(tap)
    }

    /// The tap channel.
    pub fn tap_channel(&self) -> &Channel {
        &self.tap
    }

    /// The counters.
    pub fn stats(&self) -> WireTapStats {
        self.counters.snapshot()
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, for change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// Offers a copy of `msg` to `tap` without waiting; counts what became of it.
fn offer(tap: &Channel, msg: &Message, counters: &Counters) {
    let accepted = tap.offer(msg.clone());
    let counter = if accepted {
        &counters.tapped
    } else {
        &counters.dropped
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

impl<S> Service<Message> for WireTap<S>
where
    S: Service<Message>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, msg: Message) -> S::Future {
        offer(&self.tap, &msg, &self.counters);
        self.inner.call(msg)
    }
}

/// Puts a [`WireTap`] in front of a service. Every tap it makes shares its counters.
#[derive(Clone, Debug)]
pub struct WireTapLayer {
    tap: Channel,
    counters: Arc<Counters>,
}

impl WireTapLayer {
    /// A layer of taps copying to `tap`.
    pub fn new(tap: impl Into<Channel>) -> Self {
        WireTapLayer {
            tap: tap.into(),
            counters: Arc::default(),
        }
    }

    /// The counters of all the taps this layer made.
    pub fn stats(&self) -> WireTapStats {
        self.counters.snapshot()
    }
}

impl<S> Layer<S> for WireTapLayer {
    type Service = WireTap<S>;

    fn layer(&self, inner: S) -> WireTap<S> {
        WireTap {
            inner,
            tap: self.tap.clone(),
            counters: self.counters.clone(),
        }
    }
}
