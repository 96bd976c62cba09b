//! The Delayer as a step: a `tower::Service` and its `Layer`.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use eip_core::Message;
use futures::future::BoxFuture;
use tower::{Layer, Service, ServiceExt};

use super::{StepError, Wait};

/// Waits as its [`Wait`] says, then passes the message to the inner service. A message that
/// names no time it may wait for is not passed on: it comes back at once in
/// [`StepError::Failed`](crate::error::StepError::Failed).
///
/// The service is always ready: the inner service is asked for readiness once the wait is
/// over (so it is cloned for each call, as tower's `Retry` does).
///
/// ```
/// use std::time::Duration;
/// use eip_core::Message;
/// use eip_steps::delay::{Delay, Wait};
/// use tokio::time::Instant;
/// use tower::{ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let echo = service_fn(|m: Message| async move { Ok::<_, std::convert::Infallible>(m) });
/// let step = Delay::new(echo, Wait::fixed(Duration::from_secs(5)));
///
/// let started = Instant::now();
/// let out = step.oneshot(Message::new("late")).await.unwrap();
/// assert_eq!(out.payload_str(), Some("late"));
/// assert_eq!(started.elapsed(), Duration::from_secs(5));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Delay<S> {
    inner: S,
    wait: Arc<Wait>,
}

impl<S> Delay<S> {
    /// A delay of `wait` in front of `inner`.
    pub fn new(inner: S, wait: Wait) -> Self {
        Delay {
            inner,
            wait: Arc::new(wait),
        }
    }

    /// A layer that puts a delay of `wait` in front of a service.
    pub fn layer(wait: Wait) -> DelayLayer {
        DelayLayer::new(wait)
    }

    /// How long each message waits.
    pub fn wait(&self) -> &Wait {
        &self.wait
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

impl<S> Service<Message> for Delay<S>
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
        match self.wait.from(&msg, SystemTime::now()) {
            Ok(wait) => {
                let until = tokio::time::Instant::now() + wait;
                wait_then_call(until, self.inner.clone(), msg)
            }
            Err(error) => refuse(error, msg),
        }
    }
}

/// The future of a step's call: the inner service's answer, or the step's failure.
pub(crate) type Called<R, E, F> = BoxFuture<'static, Result<R, crate::error::StepError<E, F>>>;

/// The future of a step that waits inside the call: until `until`, then `inner` is asked for
/// readiness and called with `msg`.
pub(crate) fn wait_then_call<S, F>(
    until: tokio::time::Instant,
    inner: S,
    msg: Message,
) -> Called<S::Response, S::Error, F>
where
    S: Service<Message> + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    Box::pin(async move {
        tokio::time::sleep_until(until).await;
        inner
            .oneshot(msg)
            .await
            .map_err(crate::error::StepError::Inner)
    })
}

/// The future of a step that did not take `msg`: the message back at once, with why.
pub(crate) fn refuse<R, E, F: Send + 'static>(error: F, msg: Message) -> Called<R, E, F>
where
    R: Send + 'static,
    E: Send + 'static,
{
    let failed = crate::error::StepError::Failed {
        error,
        message: msg,
    };
    Box::pin(std::future::ready(Err(failed)))
}

/// Puts a [`Delay`] in front of a service. Every delay it makes shares one [`Wait`].
#[derive(Clone, Debug)]
pub struct DelayLayer {
    wait: Arc<Wait>,
}

impl DelayLayer {
    /// A layer of delays of `wait`.
    pub fn new(wait: Wait) -> Self {
        DelayLayer {
            wait: Arc::new(wait),
        }
    }

    /// How long each message waits.
    pub fn wait(&self) -> &Wait {
        &self.wait
    }
}

impl<S> Layer<S> for DelayLayer {
    type Service = Delay<S>;

    fn layer(&self, inner: S) -> Delay<S> {
        Delay {
            inner,
            wait: self.wait.clone(),
        }
    }
}
