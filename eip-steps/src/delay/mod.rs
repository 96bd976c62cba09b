//! Delayer: each message waits before it goes on, a fixed time or until a time it names.
//!
//! A [`Wait`] says how long a message waits: the same time for every message
//! ([`Wait::fixed`]), or until the time a function reads from the message ([`Wait::until`];
//! with the cargo feature `jq`, a jq program, [`Wait::until_jq`]). [`Wait::from`] is the
//! decision, pure and the same for a running route and a dry run: how long from now, or why
//! the message names no time it may wait for.
//!
//! - **A time past** means no wait: the message goes on at once.
//! - **A time too far ahead** (past the wait's `max`) is a mistake, not a wait: the message is
//!   handed back as failed ([`DelayError::TooFar`]), as is one whose time can not be read.
//! - **Times** a jq program gives are RFC 3339 text (`2026-12-01T18:30:00Z`) or seconds since
//!   1970-01-01 UTC, a fraction kept ([`time::read`]).
//!
//! As a step, [`DelayLayer`] wraps a service: [`Delay`] waits, then asks the inner service for
//! readiness and calls it. The wait comes first, so a waiting message holds none of the inner
//! service's capacity; every call waits on its own (bound how many wait at once with tower's
//! `ConcurrencyLimitLayer` outside, or call one at a time, as a route does: a route with a
//! delay of five seconds then sends at most one message every five seconds).
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use eip_core::Message;
//! use eip_steps::delay::Wait;
//!
//! let now = SystemTime::now();
//! assert_eq!(Wait::fixed(Duration::from_secs(5)).from(&Message::new("{}"), now), Ok(Duration::from_secs(5)));
//!
//! // Until the time a header names, at most an hour ahead.
//! let at = Wait::until(Duration::from_secs(3600), |m: &Message| {
//!     let secs = m.headers().get("deliver-at").and_then(|v| v.as_int()).ok_or("no `deliver-at`")?;
//!     Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64))
//! });
//! let in_a_minute = now.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() + 60;
//! let msg = Message::builder("{}").header("deliver-at", in_a_minute as i64).build();
//! assert!(at.from(&msg, now).unwrap() <= Duration::from_secs(60));
//! assert_eq!(at.from(&Message::new("{}"), now).unwrap_err().to_string(), "no `deliver-at`");
//! ```

pub(crate) mod service;
pub mod time;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use eip_core::Message;

pub use service::{Delay, DelayLayer};

/// The error a [`Delay`] returns: the message names no time it may wait for (the message handed
/// back), or the inner service failed.
pub type StepError<E> = crate::error::StepError<E, DelayError>;

/// A caller's function reading the time a message goes on; `Err` says why it names none.
pub type TimeFn = dyn Fn(&Message) -> Result<SystemTime, String> + Send + Sync;

/// How long each message waits: see the [module](self).
#[derive(Clone)]
pub struct Wait(Kind);

#[derive(Clone)]
enum Kind {
    For(Duration),
    Until {
        at: Arc<TimeFn>,
        max: Duration,
        /// What reads the time (a jq program), named in the errors.
        by: Option<Arc<str>>,
    },
}

impl fmt::Debug for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::For(d) => f.debug_tuple("For").field(d).finish(),
            Kind::Until { max, by, .. } => f
                .debug_struct("Until")
                .field("by", by)
                .field("max", max)
                .finish_non_exhaustive(),
        }
    }
}

/// Why a message can not wait.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DelayError {
    /// The time could not be read from the message: the reason, as the reader gave it.
    #[error("{0}")]
    NoTime(String),
    /// The time is further ahead than the wait's `max`.
    #[error("{}{}", by.as_deref().map(|by| format!("`{by}`: ")).unwrap_or_default(), time::TimeError::TooFar { ahead: *ahead, max: *max })]
    TooFar {
        /// What read the time, if it has a name (a jq program's source).
        by: Option<String>,
        /// How far ahead the time is.
        ahead: Duration,
        /// The most a message may wait.
        max: Duration,
    },
}

impl Wait {
    /// The same time `d` for every message.
    pub fn fixed(d: Duration) -> Self {
        Wait(Kind::For(d))
    }

    /// Until the time `at` reads from each message, at most `max` from now.
    pub fn until(
        max: Duration,
        at: impl Fn(&Message) -> Result<SystemTime, String> + Send + Sync + 'static,
    ) -> Self {
        Wait(Kind::Until {
            at: Arc::new(at),
            max,
            by: None,
        })
    }

    /// Until the time jq program `jq` gives for each message (RFC 3339 text or seconds since
    /// 1970, [`time::read`]), at most `max` from now. Errors name the program.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use eip_core::Message;
    /// use eip_steps::delay::Wait;
    /// use eip_steps::expr::Jq;
    ///
    /// let wait = Wait::until_jq(Jq::compile(".at").unwrap(), Duration::from_secs(3600));
    /// let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_315_200);
    /// let msg = Message::new(r#"{"at": "2026-06-01T12:00:30Z"}"#);
    /// assert_eq!(wait.from(&msg, noon), Ok(Duration::from_secs(30)));
    /// let past = Message::new(r#"{"at": 1780315100}"#);
    /// assert_eq!(wait.from(&past, noon), Ok(Duration::ZERO));
    /// let err = wait.from(&Message::new(r#"{"at": null}"#), noon).unwrap_err();
    /// assert_eq!(err.to_string(), "`.at`: gave null, not a time (RFC 3339 text or seconds since 1970)");
    /// ```
    #[cfg(feature = "jq")]
    pub fn until_jq(jq: crate::expr::Jq, max: Duration) -> Self {
        let by: Arc<str> = Arc::from(jq.source());
        let at = move |msg: &Message| {
            let value = jq.one(msg).map_err(|e| e.to_string())?;
            time::read(&value).map_err(|e| format!("`{}`: {e}", jq.source()))
        };
        Wait(Kind::Until {
            at: Arc::new(at),
            max,
            by: Some(by),
        })
    }

    /// The fixed time, for a wait made by [`fixed`](Self::fixed).
    pub fn fixed_time(&self) -> Option<Duration> {
        match self.0 {
            Kind::For(d) => Some(d),
            Kind::Until { .. } => None,
        }
    }

    /// How long `msg` waits from `now`, or why it can not. Pure: the dry run asks it too.
    pub fn from(&self, msg: &Message, now: SystemTime) -> Result<Duration, DelayError> {
        match &self.0 {
            Kind::For(d) => Ok(*d),
            Kind::Until { at, max, by } => {
                let at = at(msg).map_err(DelayError::NoTime)?;
                time::until(at, now, *max).map_err(|_| DelayError::TooFar {
                    by: by.as_deref().map(str::to_owned),
                    ahead: at.duration_since(now).unwrap_or(Duration::ZERO),
                    max: *max,
                })
            }
        }
    }

    /// A layer that puts this wait in front of a service.
    pub fn layer(self) -> DelayLayer {
        DelayLayer::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_too_far_names_what_read_it() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let hour = Duration::from_secs(3600);
        let wait = Wait::until(hour, move |_| Ok(now + 2 * hour));
        let err = wait.from(&Message::new("{}"), now).unwrap_err();
        assert_eq!(
            err,
            DelayError::TooFar {
                by: None,
                ahead: 2 * hour,
                max: hour
            }
        );
        assert_eq!(
            err.to_string(),
            "the time is 2h from now, past the delay's `max` of 1h"
        );
    }
}
