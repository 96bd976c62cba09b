//! The token bucket of a throttle, one per key, kept as the time its next token is due.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::Rate;

/// A token bucket kept as the time its next token is due (GCRA): `burst` tokens, one more
/// every `interval`. Shared by every call; a turn is reserved under a lock held for no await.
#[derive(Debug)]
pub(super) struct TokenBucket {
    interval: Duration,
    /// How far ahead of its due time a token may be taken: `(burst - 1) * interval`.
    slack: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the bucket without a key is full again.
    due: Option<Instant>,
    /// The same for each key.
    keys: HashMap<String, Instant>,
    /// The number of keys at which the full buckets are forgotten next.
    forget_at: usize,
}

/// Keys kept before the first sweep for full buckets.
const KEYS_BEFORE_SWEEP: usize = 1024;

impl TokenBucket {
    pub(super) fn new(rate: Rate, burst: u32) -> Self {
        let interval = rate.interval();
        TokenBucket {
            interval,
            slack: interval.saturating_mul(burst.saturating_sub(1)),
            state: Mutex::new(State {
                forget_at: KEYS_BEFORE_SWEEP,
                ..State::default()
            }),
        }
    }

    /// Takes the next token of `key`'s bucket for a message arriving at `now`: the instant it
    /// may go on (`now`, or later when the bucket is empty).
    pub(super) fn take(&self, key: Option<&str>, now: Instant) -> Instant {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let due = match key {
            None => state.due.get_or_insert(now),
            Some(key) => {
                if state.keys.len() >= state.forget_at {
                    // A bucket due by now is full: the same as one never used.
                    state.keys.retain(|_, due| *due > now);
                    state.forget_at = (state.keys.len() * 2).max(KEYS_BEFORE_SWEEP);
                }
                state.keys.entry(key.to_owned()).or_insert(now)
            }
        };
        let start = (*due).max(now);
        *due = start + self.interval;
        start.checked_sub(self.slack).map_or(now, |at| at.max(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_second(count: u64) -> Rate {
        Rate::new(count, Duration::from_secs(1)).unwrap()
    }

    fn bucket(rate: Rate, burst: u32) -> TokenBucket {
        TokenBucket::new(rate, burst)
    }

    #[test]
    fn turns_are_spaced_by_the_rate_in_arrival_order() {
        let b = bucket(per_second(10), 1);
        let now = Instant::now();
        let ms = Duration::from_millis;
        let turns: Vec<Duration> = (0..4).map(|_| b.take(None, now) - now).collect();
        assert_eq!(turns, [ms(0), ms(100), ms(200), ms(300)]);
        // After a quiet second the bucket is full again: no wait.
        let later = now + ms(2000);
        assert_eq!(b.take(None, later), later);
    }

    #[test]
    fn a_burst_goes_at_once_then_the_rate_holds() {
        let b = bucket(per_second(10), 3);
        let now = Instant::now();
        let ms = Duration::from_millis;
        let turns: Vec<Duration> = (0..5).map(|_| b.take(None, now) - now).collect();
        assert_eq!(turns, [ms(0), ms(0), ms(0), ms(100), ms(200)]);
    }

    #[test]
    fn each_key_has_its_own_bucket_and_full_ones_are_forgotten() {
        let b = bucket(per_second(1), 1);
        let now = Instant::now();
        assert_eq!(b.take(Some("a"), now), now);
        assert_eq!(b.take(Some("b"), now), now);
        assert_eq!(b.take(Some("a"), now), now + Duration::from_secs(1));
        let later = now + Duration::from_secs(10);
        for n in 0..KEYS_BEFORE_SWEEP {
            b.take(Some(&n.to_string()), later);
        }
        let state = b.state.lock().unwrap();
        assert!(
            !state.keys.contains_key("a") && !state.keys.contains_key("b"),
            "the full buckets of a and b were forgotten"
        );
        assert!(state.keys.len() <= KEYS_BEFORE_SWEEP);
    }
}
