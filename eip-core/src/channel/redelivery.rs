//! Redelivery policy: how often, and how far apart, a failed message is tried again.
//!
//! It is part of a channel's configuration ([`ChannelBuilder::redelivery`]): every
//! [`Delivery`] carries its channel's policy, and the [consumer](crate::endpoint) that processes
//! it applies that policy (or one of its own) when processing fails.
//!
//! [`ChannelBuilder::redelivery`]: super::ChannelBuilder::redelivery
//! [`Delivery`]: super::Delivery

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How a consumer endpoint retries a message whose processing failed.
///
/// `max_attempts` counts deliveries, the first included: with 5, a message is processed at most
/// five times, then goes to the dead letter channel with reason `max-redeliveries` and the last
/// error. Between attempts the endpoint waits `initial_backoff * multiplier^(n-1)` (capped at
/// `max_backoff`), less a random part of up to `jitter` of it, so that many consumers failing
/// together do not retry in lock-step.
#[derive(Debug, Clone, PartialEq)]
pub struct RedeliveryPolicy {
    /// Deliveries in all, at least 1.
    pub max_attempts: u32,
    /// The wait before the first redelivery.
    pub initial_backoff: Duration,
    /// The longest wait.
    pub max_backoff: Duration,
    /// How much each wait grows.
    pub multiplier: f64,
    /// The largest fraction of a wait taken off at random, 0.0 to 1.0.
    pub jitter: f64,
}

impl Default for RedeliveryPolicy {
    fn default() -> Self {
        RedeliveryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

impl RedeliveryPolicy {
    /// No redelivery: the first failure dead-letters the message.
    pub fn none() -> Self {
        RedeliveryPolicy {
            max_attempts: 1,
            ..RedeliveryPolicy::default()
        }
    }

    /// `max_attempts` deliveries with a fixed wait and no jitter.
    pub fn fixed(max_attempts: u32, wait: Duration) -> Self {
        RedeliveryPolicy {
            max_attempts,
            initial_backoff: wait,
            max_backoff: wait,
            multiplier: 1.0,
            jitter: 0.0,
        }
    }

    /// Whether a message delivered `attempts` times may be delivered again.
    pub fn allows_another(&self, attempts: u32) -> bool {
        attempts < self.max_attempts.max(1)
    }

    /// The wait before redelivery after `attempts` failed deliveries, without jitter.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(64) as i32;
        let factor = self.multiplier.max(1.0).powi(exp);
        let secs = self.initial_backoff.as_secs_f64() * factor;
        let capped = secs.min(self.max_backoff.as_secs_f64());
        Duration::try_from_secs_f64(capped).unwrap_or(self.max_backoff)
    }

    /// The wait with jitter applied, given a random number in `[0, 1)`.
    pub fn backoff_jittered(&self, attempts: u32, random: f64) -> Duration {
        let base = self.backoff(attempts);
        let cut = self.jitter.clamp(0.0, 1.0) * random.clamp(0.0, 1.0);
        base.mul_f64(1.0 - cut)
    }

    /// The wait with jitter applied from a fresh random number.
    pub fn next_backoff(&self, attempts: u32) -> Duration {
        // RandomState is seeded per process and bumped per instance: random enough for jitter,
        // without a dependency.
        let bits = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let random = (bits >> 11) as f64 / (1u64 << 53) as f64;
        self.backoff_jittered(attempts, random)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_up_to_the_cap() {
        let p = RedeliveryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(500),
            multiplier: 2.0,
            jitter: 0.0,
        };
        let waits: Vec<u128> = (1..=5).map(|a| p.backoff(a).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        assert_eq!(p.backoff(u32::MAX), Duration::from_millis(500));
    }

    #[test]
    fn jitter_only_shortens_the_wait_within_its_fraction() {
        let p = RedeliveryPolicy {
            jitter: 0.5,
            ..RedeliveryPolicy::fixed(3, Duration::from_millis(1000))
        };
        assert_eq!(p.backoff_jittered(1, 0.0), Duration::from_millis(1000));
        assert_eq!(
            p.backoff_jittered(1, 0.999_999),
            Duration::from_micros(500_000) + Duration::from_nanos(500)
        );
        for _ in 0..100 {
            let w = p.next_backoff(1);
            assert!(
                w <= Duration::from_millis(1000) && w >= Duration::from_millis(500),
                "{w:?}"
            );
        }
    }

    #[test]
    fn attempts_are_bounded() {
        let p = RedeliveryPolicy::fixed(3, Duration::ZERO);
        assert!(p.allows_another(1));
        assert!(p.allows_another(2));
        assert!(!p.allows_another(3));
        assert!(!RedeliveryPolicy::none().allows_another(1));
    }
}
