//! The Throttler as a step: a `tower::Service` and its `Layer`.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use eip_core::Message;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::bucket::TokenBucket;
use super::{StepError, ThrottleConfig, ThrottleError};
use crate::delay::service::{refuse, wait_then_call};

/// What every throttle of one layer shares: the configuration and the buckets.
struct Shared {
    config: ThrottleConfig,
    bucket: TokenBucket,
}

impl Shared {
    fn new(config: ThrottleConfig) -> Arc<Self> {
        let bucket = TokenBucket::new(config.rate, config.burst);
        Arc::new(Shared { config, bucket })
    }

    fn key_of(&self, msg: &Message) -> Result<Option<String>, ThrottleError> {
        match &self.config.key {
            None => Ok(None),
            Some(key) => key
                .eval(msg)
                .map(|k| Some(k.into_owned()))
                .map_err(ThrottleError),
        }
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Takes each message's turn from the bucket as it is called, waits for it, then passes the
/// message to the inner service (see the [module](super)). A message whose key can not be
/// computed is not passed on: it comes back at once in
/// [`StepError::Failed`](crate::error::StepError::Failed).
///
/// Clones share the bucket. The service is always ready: the inner service is asked for
/// readiness once the turn came (so it is cloned for each call).
///
/// ```
/// use std::time::Duration;
/// use eip_core::Message;
/// use eip_steps::aggregate::Key;
/// use eip_steps::throttle::{Rate, Throttle, ThrottleConfig};
/// use tokio::time::Instant;
/// use tower::{ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let echo = service_fn(|m: Message| async move { Ok::<_, std::convert::Infallible>(m) });
/// let per_tenant = ThrottleConfig::new(Rate::new(1, Duration::from_secs(1)).unwrap())
///     .key(Key::header("tenant"));
/// let step = Throttle::new(echo, per_tenant);
/// let from = |tenant: &str| Message::builder("{}").header("tenant", tenant).build();
///
/// let started = Instant::now();
/// step.clone().oneshot(from("a")).await.unwrap();
/// step.clone().oneshot(from("b")).await.unwrap(); // its own bucket: no wait
/// assert_eq!(started.elapsed(), Duration::ZERO);
/// step.clone().oneshot(from("a")).await.unwrap(); // a's next turn, a second on
/// assert_eq!(started.elapsed(), Duration::from_secs(1));
///
/// let err = step.oneshot(Message::new("{}")).await.unwrap_err();
/// assert_eq!(err.to_string(), "throttle key header `tenant` is missing");
/// # }
/// ```
#[derive(Clone)]
pub struct Throttle<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: fmt::Debug> fmt::Debug for Throttle<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttle")
            .field("inner", &self.inner)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Throttle<()> {
    /// A layer that puts a throttle in front of a service.
    pub fn layer(config: ThrottleConfig) -> ThrottleLayer {
        ThrottleLayer::new(config)
    }
}

impl<S> Throttle<S> {
    /// A throttle in front of `inner`, with buckets of its own (and its clones').
    pub fn new(inner: S, config: ThrottleConfig) -> Self {
        Throttle {
            inner,
            shared: Shared::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ThrottleConfig {
        &self.shared.config
    }

    /// The bucket `msg` would take its turn from (`None`: the one bucket), taking no turn:
    /// the dry run. Else why its key can not be computed.
    pub fn key_of(&self, msg: &Message) -> Result<Option<String>, ThrottleError> {
        self.shared.key_of(msg)
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

impl<S> Service<Message> for Throttle<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = StepError<S::Error>;
    type Future = BoxFuture<'static, Result<S::Response, StepError<S::Error>>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        match self.shared.key_of(&msg) {
            Ok(key) => {
                // The turn is taken now, in arrival order; only the wait is awaited.
                let turn = self.shared.bucket.take(key.as_deref(), Instant::now());
                wait_then_call(turn, self.inner.clone(), msg)
            }
            Err(error) => refuse(error, msg),
        }
    }
}

/// Puts a [`Throttle`] in front of a service. Every throttle it makes shares the layer's
/// buckets: the rate is for all of them together.
#[derive(Clone, Debug)]
pub struct ThrottleLayer {
    shared: Arc<Shared>,
}

impl ThrottleLayer {
    /// A layer of throttles with this configuration, sharing one set of buckets.
    pub fn new(config: ThrottleConfig) -> Self {
        ThrottleLayer {
            shared: Shared::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ThrottleConfig {
        &self.shared.config
    }

    /// The bucket `msg` would take its turn from, taking no turn: the dry run.
    pub fn key_of(&self, msg: &Message) -> Result<Option<String>, ThrottleError> {
        self.shared.key_of(msg)
    }
}

impl<S> Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Throttle<S> {
        Throttle {
            inner,
            shared: self.shared.clone(),
        }
    }
}
