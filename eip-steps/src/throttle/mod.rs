//! Throttler: messages go on at no more than a rate; one that comes sooner waits for its turn
//! (none is dropped, none refused).
//!
//! A [`Rate`] is a count per time (`100` per second). The throttle is a token bucket of
//! `burst` tokens (default 1), one more every [`Rate::interval`]:
//!
//! - **`burst` 1** spaces messages evenly: at 100 per second, one goes on every 10 ms.
//! - **A larger burst** lets that many through at once after a quiet time; over any longer
//!   stretch the rate holds.
//! - **Order.** Each message reserves its turn as it is called, under a lock held for no
//!   await, then waits for it: messages go on in the order they came.
//! - **Sharing.** Every [`Throttle`] a [`ThrottleLayer`] makes (and every clone of one) takes
//!   its turns from the same bucket: the rate is for all of them together.
//! - **Per key.** With a [`Key`] each key has its own bucket (`5` per
//!   second per tenant). A key whose bucket is full again is forgotten, so memory holds only the
//!   keys seen within the last `burst / rate`. A message whose key can not be computed is handed
//!   back as failed ([`ThrottleError`]), taking no turn.
//!
//! Unlike tower's `RateLimit` (a fixed number of calls per window, told by `poll_ready`), the
//! wait is inside the call, after the turn was reserved: the throttle is always ready, and asks
//! the inner service for readiness once the turn came.
//!
//! ```
//! use std::time::Duration;
//! use eip_core::Message;
//! use eip_steps::throttle::{Rate, Throttle, ThrottleConfig};
//! use tokio::time::Instant;
//! use tower::{ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let echo = service_fn(|m: Message| async move { Ok::<_, std::convert::Infallible>(m) });
//! let rate = Rate::new(10, Duration::from_secs(1)).unwrap(); // one every 100 ms
//! let step = Throttle::new(echo, ThrottleConfig::new(rate));
//!
//! let started = Instant::now();
//! for _ in 0..3 {
//!     step.clone().oneshot(Message::new("tick")).await.unwrap();
//! }
//! // The first at once, then one every 100 ms.
//! assert_eq!(started.elapsed(), Duration::from_millis(200));
//! # }
//! ```

mod bucket;
mod service;

use std::time::Duration;

use crate::aggregate::{Key, KeyError};

pub use service::{Throttle, ThrottleLayer};

/// The error a [`Throttle`] returns: the message's key could not be computed (the message
/// handed back), or the inner service failed.
pub type StepError<E> = crate::error::StepError<E, ThrottleError>;

/// A count of messages per time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// How many.
    pub count: u64,
    /// In how long.
    pub per: Duration,
}

impl Rate {
    /// `count` messages per `per`; `None` for a count or a time of zero, or a rate faster than
    /// one message a nanosecond.
    ///
    /// ```
    /// use std::time::Duration;
    /// use eip_steps::throttle::Rate;
    ///
    /// assert_eq!(Rate::new(100, Duration::from_secs(1)).unwrap().interval(), Duration::from_millis(10));
    /// assert!(Rate::new(0, Duration::from_secs(1)).is_none());
    /// assert!(Rate::new(2_000_000_000, Duration::from_secs(1)).is_none());
    /// ```
    pub fn new(count: u64, per: Duration) -> Option<Rate> {
        let rate = Rate { count, per };
        (count > 0 && !rate.interval().is_zero()).then_some(rate)
    }

    /// The time one message takes of the rate: `per / count`.
    pub fn interval(&self) -> Duration {
        let nanos = self.per.as_nanos() / u128::from(self.count.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A message whose throttle key could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("throttle key {0}")]
pub struct ThrottleError(#[source] pub KeyError);

/// A throttle's configuration: its rate, its burst and, if any, the key of its buckets.
#[derive(Debug, Clone)]
pub struct ThrottleConfig {
    pub(crate) rate: Rate,
    pub(crate) burst: u32,
    pub(crate) key: Option<Key>,
}

impl ThrottleConfig {
    /// At most `rate`, one message at a time (a burst of 1), one bucket for all.
    pub fn new(rate: Rate) -> Self {
        ThrottleConfig {
            rate,
            burst: 1,
            key: None,
        }
    }

    /// Lets up to `burst` messages through at once after a quiet time (at least 1).
    #[must_use]
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = burst.max(1);
        self
    }

    /// A bucket for each value of `key`.
    #[must_use]
    pub fn key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// The rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The burst.
    pub fn burst_size(&self) -> u32 {
        self.burst
    }
}
