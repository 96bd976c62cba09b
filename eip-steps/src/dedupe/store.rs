//! Where an idempotent receiver keeps the keys it has seen.
//!
//! `record` is one change: "seen now, unless seen within the window". A durable store makes it
//! atomic with the acknowledgement of the message, so a crash between the two can neither let
//! a duplicate through nor lose an original. `forget` undoes a record whose message the next
//! step refused (so that its redelivery is not taken for a duplicate).

use std::collections::hash_map::{Entry, RandomState};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use eip_core::message::MessageId;
use tokio::time::Instant;

pub use crate::Keeping;

/// Whether a key was seen within the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not seen within the window: the message is an original.
    New,
    /// Seen this long ago (less than the window).
    Duplicate {
        /// How long ago.
        age: Duration,
    },
}

/// The keys an idempotent receiver has seen.
pub trait SeenStore: Send + 'static {
    /// Whether `key` was seen less than `window` before `now`, changing nothing.
    fn seen(&self, key: &str, now: Instant, window: Duration) -> Seen;

    /// Records `key` as seen at `now`, unless it was seen less than `window` before (then it
    /// says so and keeps the first time: a duplicate does not stretch the window).
    fn record(&mut self, key: &str, now: Instant, window: Duration) -> Seen;

    /// Forgets `key` (its message was not accepted after all).
    fn forget(&mut self, key: &str);

    /// Makes the record of `key` last, once its message (`message`) was accepted downstream:
    /// a durable store writes it, for `window`, in the commit that acknowledges the message,
    /// and this completes once that is on disk. So a crash leaves either both (a redelivery
    /// can not happen) or neither (the message comes again and passes). An error fails the
    /// call, and the message is redelivered. In memory there is nothing to do.
    fn keep(&self, key: &str, window: Duration, message: MessageId) -> Keeping {
        let _ = (key, window, message);
        Box::pin(std::future::ready(Ok(())))
    }

    /// How many keys are kept.
    fn len(&self) -> usize;

    /// Whether no key is kept.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A key with its hash, computed once with a keyed hasher (SipHash with random keys, so keys
/// chosen to collide do not help an attacker), so that growing the map never hashes the text
/// again.
#[derive(Debug, Clone)]
struct HashedKey {
    hash: u64,
    text: Arc<str>,
}

impl PartialEq for HashedKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.text == other.text
    }
}

impl Eq for HashedKey {}

impl Hash for HashedKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Hands a [`HashedKey`]'s hash to the map as it is.
#[derive(Debug, Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; anything else still gets a deterministic mix.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Seen keys in memory, at most `capacity` of them: past that, the oldest go first, as do keys
/// older than the window (checked on each record).
#[derive(Debug)]
pub struct InMemorySeen {
    keys: HashMap<HashedKey, Instant, BuildHasherDefault<PassThrough>>,
    /// Keys in the order they were recorded; an entry whose time no longer matches `keys`
    /// was forgotten and is skipped.
    order: VecDeque<(Instant, HashedKey)>,
    hasher: RandomState,
    capacity: usize,
}

impl InMemorySeen {
    /// At most `capacity` keys (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        InMemorySeen {
            keys: HashMap::default(),
            order: VecDeque::new(),
            hasher: RandomState::new(),
            capacity: capacity.max(1),
        }
    }

    fn hashed(&self, key: &str) -> HashedKey {
        HashedKey {
            hash: self.hasher.hash_one(key),
            text: Arc::from(key),
        }
    }

    /// Drops the oldest entry; returns false when there is none.
    fn pop_oldest(&mut self) -> bool {
        let Some((at, key)) = self.order.pop_front() else {
            return false;
        };
        if self.keys.get(&key) == Some(&at) {
            self.keys.remove(&key);
        }
        true
    }

    fn expire(&mut self, now: Instant, window: Duration) {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_duration_since(*at) < window {
                break;
            }
            self.pop_oldest();
        }
    }
}

impl SeenStore for InMemorySeen {
    fn seen(&self, key: &str, now: Instant, window: Duration) -> Seen {
        match self.keys.get(&self.hashed(key)) {
            Some(at) if now.saturating_duration_since(*at) < window => Seen::Duplicate {
                age: now.saturating_duration_since(*at),
            },
            _ => Seen::New,
        }
    }

    fn record(&mut self, key: &str, now: Instant, window: Duration) -> Seen {
        self.expire(now, window);
        let key = self.hashed(key);
        match self.keys.entry(key) {
            Entry::Occupied(entry) => {
                let age = now.saturating_duration_since(*entry.get());
                if age < window {
                    return Seen::Duplicate { age };
                }
                // Past the window (expired but not yet dropped): seen anew.
                let key = entry.key().clone();
                *entry.into_mut() = now;
                self.order.push_back((now, key));
            }
            Entry::Vacant(entry) => {
                self.order.push_back((now, entry.key().clone()));
                entry.insert(now);
            }
        }
        while self.keys.len() > self.capacity && self.pop_oldest() {}
        Seen::New
    }

    fn forget(&mut self, key: &str) {
        let key = self.hashed(key);
        self.keys.remove(&key);
    }

    fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_secs(10);

    #[test]
    fn a_forgotten_and_re_recorded_key_survives_its_old_entry_expiring() {
        let t0 = Instant::now();
        let mut s = InMemorySeen::with_capacity(10);
        assert_eq!(s.record("a", t0, W), Seen::New);
        s.forget("a");
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(s.record("a", t1, W), Seen::New);
        // The first entry (t0) expires at t0 + 10 s; the second one must still count.
        let t2 = t0 + Duration::from_secs(11);
        assert_eq!(s.record("b", t2, W), Seen::New);
        assert!(matches!(s.seen("a", t2, W), Seen::Duplicate { .. }));
    }

    #[test]
    fn keys_past_the_window_are_dropped_when_recording() {
        let t0 = Instant::now();
        let mut s = InMemorySeen::with_capacity(10);
        s.record("a", t0, W);
        s.record("b", t0 + W, W);
        assert_eq!(s.len(), 1);
    }
}
