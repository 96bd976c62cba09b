//! The limits of a step that calls out (`process`, `enrich`): a deadline per call, at most N
//! calls at once, a circuit breaker, and (for `enrich`) retries.
//!
//! ```yaml
//! steps:
//!   - process: {service: pricing, timeout: 2s, concurrency: 4, circuit-breaker: {failures: 5, reset: 30s}}
//! ```
//!
//! - `timeout: 2s`: a call that has not answered within it fails ("no answer within 2s").
//! - `concurrency: 4`: at most 4 calls of this step at once, whatever the number of messages
//!   in processing; a fifth waits for one of them to end (it is not refused). (A flow file's
//!   route takes one message at a time; the limit bites when a program drives the route from
//!   several tasks or with a consumer of concurrency above 1.)
//! - `circuit-breaker: {failures: 5, reset: 30s}` (both optional, these are the defaults):
//!   after 5 failed calls in a row the breaker opens, and for 30 s every call fails at once,
//!   without calling, with an error naming the last failure. Then one call is let through (the
//!   others still fail fast): if it succeeds the breaker closes, if it fails it opens again
//!   for 30 s. A success closes it and starts the count again.
//! - `retry: {max-attempts: 3, backoff: 100ms}` (enrich only): a failed call is made again, up
//!   to 3 attempts in all, `backoff` apart. A call the breaker refused is not retried.
//!
//! A call that still fails fails the route for the message, which then follows the
//! channel's redelivery policy (and is dead-lettered with reason `max-redeliveries` and the
//! error at the end); that includes a call the open breaker refused. Each limit is a tower
//! layer around the step's service, outermost first: retry, circuit breaker, concurrency
//! limit ([`tower::limit::ConcurrencyLimit`]), deadline ([`tower::timeout::Timeout`]). So
//! the deadline is per attempt and does not count the wait for a permit, and a breaker that
//! is open fails fast without waiting for one.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::limit::ConcurrencyLimit;
use tower::retry::{Policy, Retry};
use tower::timeout::Timeout;
use tower::timeout::error::Elapsed;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceExt};

use crate::diagnostic::Check;
use crate::settings::Settings;

/// The keys of `circuit-breaker:`.
const BREAKER_KEYS: &[&str] = &["failures", "reset"];

/// The keys of `retry:`.
const RETRY_KEYS: &[&str] = &["max-attempts", "backoff"];

/// A step's service behind its limits.
pub(crate) type Call<Req, Res> = BoxCloneSyncService<Req, Res, BoxError>;

/// The limits of one step, as its settings say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallLimits {
    /// The deadline of one call (one attempt).
    pub timeout: Option<Duration>,
    /// The most calls at once.
    pub concurrency: Option<usize>,
    /// The circuit breaker.
    pub breaker: Option<BreakerSettings>,
    /// The retries.
    pub retry: Option<RetrySettings>,
}

/// When a circuit breaker opens, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Failed calls in a row that open it.
    pub failures: u32,
    /// How long it stays open before one call may try.
    pub reset: Duration,
}

/// How often a failed call is made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The wait between two attempts.
    pub backoff: Duration,
}

/// Why a call failed, besides what the service said.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The call did not answer within the step's `timeout`.
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    /// The circuit breaker is open: the call was not made.
    #[error(
        "circuit breaker open after {failures} failed calls in a row, calls fail fast for {reset:?}; the last failure: {last}"
    )]
    Open {
        /// The failures that opened it.
        failures: u32,
        /// How long it stays open.
        reset: Duration,
        /// The last failure's error.
        last: String,
    },
    /// Every attempt failed; the last one's error.
    #[error("{last} (after {attempts} attempts)")]
    Exhausted {
        /// How many attempts were made.
        attempts: u32,
        /// The last one's error.
        last: BoxError,
    },
}

/// Reads the limits among a step's settings: `timeout`, `concurrency`, `circuit-breaker`,
/// and `retry` when `with_retry`. `None` when one was wrong (it is reported).
pub(crate) fn read(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    with_retry: bool,
) -> Option<CallLimits> {
    let before = check.problems.len();
    let mut limits = CallLimits {
        timeout: settings.positive_duration(check, "timeout"),
        concurrency: settings
            .whole(check, "concurrency", 1)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        ..CallLimits::default()
    };
    if settings.get("circuit-breaker").is_some()
        && let Some(breaker) = settings.map(check, "circuit-breaker", BREAKER_KEYS)
    {
        let failures = breaker.whole(check, "failures", 1).unwrap_or(5);
        limits.breaker = Some(BreakerSettings {
            failures: u32::try_from(failures).unwrap_or(u32::MAX),
            reset: breaker
                .positive_duration(check, "reset")
                .unwrap_or(Duration::from_secs(30)),
        });
    }
    if with_retry
        && settings.get("retry").is_some()
        && let Some(retry) = settings.map(check, "retry", RETRY_KEYS)
    {
        let attempts = retry.whole(check, "max-attempts", 1).unwrap_or(3);
        limits.retry = Some(RetrySettings {
            max_attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
            backoff: retry
                .duration(check, "backoff")
                .unwrap_or(Duration::from_millis(100)),
        });
    }
    (check.problems.len() == before).then_some(limits)
}

impl CallLimits {
    /// The limits in a few words (`timeout 2s, at most 4 at once`), empty when there are none.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = self.timeout {
            parts.push(format!("timeout {d:?}"));
        }
        if let Some(n) = self.concurrency {
            parts.push(format!("at most {n} at once"));
        }
        if let Some(r) = self.retry {
            parts.push(format!("{} attempts", r.max_attempts));
        }
        if let Some(b) = self.breaker {
            parts.push(format!(
                "circuit breaker after {} failures for {:?}",
                b.failures, b.reset
            ));
        }
        parts.join(", ")
    }

    /// `service` behind these limits. Built once per step: clones of what it gives share the
    /// concurrency permits and the breaker's state.
    pub(crate) fn wrap<S, Req, Res>(&self, service: S) -> Call<Req, Res>
    where
        S: Service<Req, Response = Res, Error = BoxError> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        Req: Clone + Send + Sync + 'static,
        Res: Send + Sync + 'static,
    {
        let mut call: Call<Req, Res> = BoxCloneSyncService::new(service);
        if let Some(limit) = self.timeout {
            let timed =
                Timeout::new(call, limit).map_err(move |e: BoxError| match e.is::<Elapsed>() {
                    true => Box::new(CallError::TimedOut(limit)) as BoxError,
                    false => e,
                });
            call = BoxCloneSyncService::new(timed);
        }
        if let Some(n) = self.concurrency {
            call = BoxCloneSyncService::new(ConcurrencyLimit::new(call, n));
        }
        if let Some(settings) = self.breaker {
            call = BoxCloneSyncService::new(CircuitBreaker::new(call, settings));
        }
        if let Some(settings) = self.retry {
            call = BoxCloneSyncService::new(Retry::new(Attempts::new(settings), call));
        }
        call
    }
}

/// A circuit breaker around a service; see the [module](self).
#[derive(Clone)]
pub(crate) struct CircuitBreaker<S> {
    inner: S,
    settings: BreakerSettings,
    state: Arc<Mutex<Breaker>>,
}

/// A breaker's state, shared by its clones.
#[derive(Debug, Default)]
struct Breaker {
    /// Failed calls in a row while closed.
    failures: u32,
    /// While open: until when.
    open_until: Option<Instant>,
    /// A call is trying whether the service is back (the breaker was open and its reset time
    /// passed).
    trying: bool,
    /// The last failure's error, for the errors of calls refused while open.
    last: String,
}

impl<S> CircuitBreaker<S> {
    pub(crate) fn new(inner: S, settings: BreakerSettings) -> Self {
        CircuitBreaker {
            inner,
            settings,
            state: Arc::new(Mutex::new(Breaker::default())),
        }
    }
}

impl Breaker {
    /// Whether a call may be made now; whether it is the trial call.
    fn admit(&mut self, now: Instant, settings: BreakerSettings) -> Result<bool, CallError> {
        let refused = |last: &str| CallError::Open {
            failures: settings.failures,
            reset: settings.reset,
            last: last.to_owned(),
        };
        match self.open_until {
            None => Ok(false),
            Some(until) if now < until || self.trying => Err(refused(&self.last)),
            Some(_) => {
                self.trying = true;
                Ok(true)
            }
        }
    }

    /// What a call's outcome does to the breaker.
    fn settle(&mut self, trial: bool, error: Option<String>, settings: BreakerSettings) {
        if trial {
            self.trying = false;
        }
        match error {
            None => {
                self.failures = 0;
                self.open_until = None;
            }
            Some(error) => {
                self.last = error;
                self.failures = self.failures.saturating_add(1);
                if trial || self.failures >= settings.failures {
                    self.failures = 0;
                    self.open_until = Some(Instant::now() + settings.reset);
                }
            }
        }
    }
}

/// Clears a trial mark if the trial call's future is dropped before it settled, so the
/// breaker lets the next call try.
struct Trial {
    state: Arc<Mutex<Breaker>>,
    armed: bool,
}

impl Drop for Trial {
    fn drop(&mut self) {
        if self.armed {
            self.state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .trying = false;
        }
    }
}

impl<S, Req> Service<Req> for CircuitBreaker<S>
where
    S: Service<Req, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    /// Always ready: the inner service's readiness (a concurrency permit) is waited for in the
    /// call, so a call the open breaker refuses waits for nothing.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let settings = self.settings;
        let state = self.state.clone();
        let admitted = state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit(Instant::now(), settings);
        let inner = self.inner.clone();
        Box::pin(async move {
            let trial = admitted?;
            let mut guard = Trial {
                state: state.clone(),
                armed: trial,
            };
            let outcome = inner.oneshot(req).await;
            guard.armed = false;
            let error = outcome.as_ref().err().map(ToString::to_string);
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .settle(trial, error, settings);
            outcome
        })
    }
}

/// The retry policy: up to `max_attempts`, `backoff` apart, not after a refusal of the breaker.
#[derive(Debug, Clone)]
struct Attempts {
    settings: RetrySettings,
    made: u32,
}

impl Attempts {
    fn new(settings: RetrySettings) -> Self {
        Attempts { settings, made: 1 }
    }
}

impl<Req: Clone, Res> Policy<Req, Res, BoxError> for Attempts {
    type Future = Pin<Box<tokio::time::Sleep>>;

    fn retry(
        &mut self,
        _req: &mut Req,
        result: &mut Result<Res, BoxError>,
    ) -> Option<Self::Future> {
        let Err(error) = result else {
            return None;
        };
        let refused = matches!(error.downcast_ref(), Some(CallError::Open { .. }));
        if refused {
            return None;
        }
        if self.made >= self.settings.max_attempts {
            if self.made > 1 {
                let last = std::mem::replace(error, Box::from(""));
                *error = Box::new(CallError::Exhausted {
                    attempts: self.made,
                    last,
                });
            }
            return None;
        }
        self.made += 1;
        Some(Box::pin(tokio::time::sleep(self.settings.backoff)))
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A service that fails while `failing` is set, counting its calls.
    fn flaky(
        calls: Arc<AtomicU32>,
        failing: Arc<std::sync::atomic::AtomicBool>,
    ) -> impl Service<u32, Response = u32, Error = BoxError, Future: Send> + Clone + Send + Sync
    {
        tower::service_fn(move |n: u32| {
            calls.fetch_add(1, Ordering::SeqCst);
            let fail = failing.load(Ordering::SeqCst);
            async move {
                match fail {
                    true => Err::<u32, BoxError>("down".into()),
                    false => Ok(n),
                }
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_breaker_opens_after_failures_in_a_row_and_closes_after_a_good_trial() {
        let calls = Arc::new(AtomicU32::new(0));
        let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let limits = CallLimits {
            breaker: Some(BreakerSettings {
                failures: 2,
                reset: Duration::from_secs(30),
            }),
            ..CallLimits::default()
        };
        let call = limits.wrap(flaky(calls.clone(), failing.clone()));
        for _ in 0..2 {
            assert_eq!(
                call.clone().oneshot(1).await.unwrap_err().to_string(),
                "down"
            );
        }
        let refused = call.clone().oneshot(1).await.unwrap_err().to_string();
        assert!(
            refused.starts_with("circuit breaker open after 2"),
            "{refused}"
        );
        assert!(refused.ends_with("the last failure: down"), "{refused}");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "refused without calling");

        // After the reset time one call tries; a failed trial opens it again at once.
        tokio::time::advance(Duration::from_secs(31)).await;
        assert_eq!(
            call.clone().oneshot(1).await.unwrap_err().to_string(),
            "down"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(call.clone().oneshot(1).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 3, "open again");

        // A good trial closes it: calls go through, and failures count from zero.
        tokio::time::advance(Duration::from_secs(31)).await;
        failing.store(false, Ordering::SeqCst);
        assert_eq!(call.clone().oneshot(7).await.unwrap(), 7);
        assert_eq!(call.clone().oneshot(8).await.unwrap(), 8);
        failing.store(true, Ordering::SeqCst);
        assert_eq!(
            call.clone().oneshot(1).await.unwrap_err().to_string(),
            "down"
        );
        assert_eq!(
            call.clone().oneshot(1).await.unwrap_err().to_string(),
            "down"
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            7,
            "one failure did not open it"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_max_attempts_and_say_how_many() {
        let calls = Arc::new(AtomicU32::new(0));
        let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let limits = CallLimits {
            retry: Some(RetrySettings {
                max_attempts: 3,
                backoff: Duration::from_millis(100),
            }),
            ..CallLimits::default()
        };
        let call = limits.wrap(flaky(calls.clone(), failing));
        let started = Instant::now();
        let e = call.oneshot(1).await.unwrap_err();
        assert_eq!(e.to_string(), "down (after 3 attempts)");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(started.elapsed(), Duration::from_millis(200), "two waits");
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_fails_saying_so() {
        let limits = CallLimits {
            timeout: Some(Duration::from_secs(2)),
            ..CallLimits::default()
        };
        let slow = tower::service_fn(|n: u32| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<u32, BoxError>(n)
        });
        let e = limits.wrap(slow).oneshot(1).await.unwrap_err();
        assert_eq!(e.to_string(), "no answer within 2s");
    }

    #[tokio::test]
    async fn no_more_calls_than_the_limit_run_at_once() {
        let running = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let (r, m) = (running.clone(), most.clone());
        let service = tower::service_fn(move |n: u32| {
            let (r, m) = (r.clone(), m.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok::<u32, BoxError>(n)
            }
        });
        let limits = CallLimits {
            concurrency: Some(2),
            ..CallLimits::default()
        };
        let call = limits.wrap(service);
        let all = (0..20).map(|n| call.clone().oneshot(n));
        let answers = futures::future::join_all(all).await;
        assert!(answers.iter().all(Result::is_ok));
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
