//! Message Filter: only messages the predicate accepts go on.
//!
//! [`MessageFilter`] wraps a service (typically a channel's [sender](crate::channel::ChannelSender)
//! or the next step of a flow). A message its predicate matches is passed to that service; any
//! other is, by default, dropped and counted — a successful outcome, so a consumer acks it — or,
//! with a discard channel, sent there (Spring Integration's `discardChannel`). Readiness is the
//! wrapped service's, as for tower's own `Filter`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::BoxFuture;
use crate::channel::{Channel, Outcome, SendError};
use crate::message::Message;
use crate::predicate::Predicate;

/// Passes the messages its predicate matches to the inner service; drops or diverts the others.
///
/// ```
/// use eip_core::{Message, channel::PointToPoint, predicate::Predicate};
/// use eip_core::router::{Filtered, MessageFilter};
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let orders = PointToPoint::new("orders", 10).unwrap();
/// let mut filter = MessageFilter::new(orders.sender(), Predicate::parse("$.qty > 0").unwrap());
/// let passed = filter.ready().await.unwrap().call(Message::new(r#"{"qty": 3}"#)).await.unwrap();
/// assert!(matches!(passed, Filtered::Passed(_)));
/// let dropped = filter.ready().await.unwrap().call(Message::new(r#"{"qty": 0}"#)).await.unwrap();
/// assert_eq!(dropped, Filtered::Dropped);
/// assert_eq!(filter.stats().dropped, 1);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MessageFilter<S> {
    inner: S,
    predicate: Predicate,
    discard: Option<Channel>,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    passed: AtomicU64,
    dropped: AtomicU64,
    discarded: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> FilterStats {
        FilterStats {
            passed: self.passed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
        }
    }
}

/// A filter's counters (shared by its clones and by every filter one [`FilterLayer`] made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// Messages the predicate matched, passed on.
    pub passed: u64,
    /// Messages it did not match, dropped.
    pub dropped: u64,
    /// Messages it did not match, sent to the discard channel.
    pub discarded: u64,
}

/// What a filter did with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filtered<R> {
    /// Matched: the inner service's response.
    Passed(R),
    /// Not matched, dropped (and counted).
    Dropped,
    /// Not matched, sent to the discard channel.
    Discarded(Outcome),
}

/// The inner service failed, or the discard channel is closed.
#[derive(Debug, thiserror::Error)]
pub enum FilterError<E> {
    /// The inner service's error.
    #[error(transparent)]
    Inner(E),
    /// The discard channel is closed; the message is in the error.
    #[error("discard channel: {0}")]
    Discard(#[source] SendError),
}

impl<S> MessageFilter<S> {
    /// A filter in front of `inner` that drops (and counts) what `predicate` does not match.
    pub fn new(inner: S, predicate: Predicate) -> Self {
        MessageFilter {
            inner,
            predicate,
            discard: None,
            counters: Arc::default(),
        }
    }

    /// Sends what the predicate does not match to `channel` instead of dropping it.
    pub fn discard_to(mut self, channel: impl Into<Channel>) -> Self {
        self.discard = Some(channel.into());
        self
    }

    /// A layer that puts this filter in front of a service.
    pub fn layer(predicate: Predicate) -> FilterLayer {
        FilterLayer::new(predicate)
    }

    /// The predicate.
    pub fn predicate(&self) -> &Predicate {
        &self.predicate
    }

    /// The discard channel, if any.
    pub fn discard_channel(&self) -> Option<&Channel> {
        self.discard.as_ref()
    }

    /// The counters.
    pub fn stats(&self) -> FilterStats {
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

impl<S> Service<Message> for MessageFilter<S>
where
    S: Service<Message>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Filtered<S::Response>;
    type Error = FilterError<S::Error>;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(FilterError::Inner)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        if self.predicate.matches(&msg) {
            self.counters.passed.fetch_add(1, Ordering::Relaxed);
            let future = self.inner.call(msg);
            return Box::pin(async move {
                future
                    .await
                    .map(Filtered::Passed)
                    .map_err(FilterError::Inner)
            });
        }
        match &self.discard {
            None => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                Box::pin(std::future::ready(Ok(Filtered::Dropped)))
            }
            Some(channel) => {
                let channel = channel.clone();
                let counters = self.counters.clone();
                Box::pin(async move {
                    let outcome = channel.send(msg).await.map_err(FilterError::Discard)?;
                    counters.discarded.fetch_add(1, Ordering::Relaxed);
                    Ok(Filtered::Discarded(outcome))
                })
            }
        }
    }
}

/// Puts a [`MessageFilter`] in front of a service. Every filter it makes shares its counters.
#[derive(Clone, Debug)]
pub struct FilterLayer {
    predicate: Predicate,
    discard: Option<Channel>,
    counters: Arc<Counters>,
}

impl FilterLayer {
    /// A layer of filters that drop what `predicate` does not match.
    pub fn new(predicate: Predicate) -> Self {
        FilterLayer {
            predicate,
            discard: None,
            counters: Arc::default(),
        }
    }

    /// Sends what the predicate does not match to `channel` instead of dropping it.
    pub fn discard_to(mut self, channel: impl Into<Channel>) -> Self {
        self.discard = Some(channel.into());
        self
    }

    /// The counters of all the filters this layer made.
    pub fn stats(&self) -> FilterStats {
        self.counters.snapshot()
    }
}

impl<S> Layer<S> for FilterLayer {
    type Service = MessageFilter<S>;

    fn layer(&self, inner: S) -> MessageFilter<S> {
        MessageFilter {
            inner,
            predicate: self.predicate.clone(),
            discard: self.discard.clone(),
            counters: self.counters.clone(),
        }
    }
}
