//! Loop detection: a channel that takes part in joins never stores the same message id twice.
//!
//! Joins can form cycles and diamonds; without a check a message would circle until its hop
//! budget ran out, or arrive twice over two paths. Within one publish, eip follows joins breadth
//! first and stores at each channel at most once. Across publishes (the same message id sent
//! again later, say replayed from a broker) each such channel also remembers the ids it stored,
//! bounded by count and by age ([`LoopDetection`]): an id older than `max_age`, or pushed out by
//! `max_ids` newer ones, is forgotten, and a message with that id would be stored again. The
//! memory exists only for channels that are the source or destination of a join. Archival joins
//! skip the check at their destination queue on purpose (see [`crate::join`]).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::message::MessageId;

/// How much a channel remembers for loop detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopDetection {
    /// The most ids remembered (the oldest is forgotten first).
    pub max_ids: usize,
    /// How long an id is remembered.
    pub max_age: Duration,
}

impl Default for LoopDetection {
    /// 16 384 ids or one minute, whichever is shorter: about 1 MiB per channel when full. Within
    /// one publish loops are caught whatever these bounds; they only decide how long a channel
    /// recognises an id published to it again later (a replay, or a loop through a broker).
    fn default() -> Self {
        LoopDetection {
            max_ids: 16_384,
            max_age: Duration::from_secs(60),
        }
    }
}

struct RecentIds {
    seen: HashSet<MessageId, IdHash>,
    order: VecDeque<(MessageId, Instant)>,
}

/// Hashes a message id by its last eight bytes. Ids are UUID v7, whose low bits are random
/// (eip's generator) or a counter: already spread, so SipHash would only cost time.
#[derive(Default, Clone, Copy)]
struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Mix once: a counter in the low bits would otherwise fill buckets in order.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }
}

/// A channel's memory of the ids it stored, switched on by the first join that touches it.
#[derive(Default)]
pub(crate) struct LoopGuard {
    config: LoopDetection,
    recent: OnceLock<Mutex<RecentIds>>,
    duplicates: AtomicU64,
}

impl LoopGuard {
    pub(crate) fn new(config: LoopDetection) -> Self {
        LoopGuard {
            config,
            recent: OnceLock::new(),
            duplicates: AtomicU64::new(0),
        }
    }

    /// Starts remembering ids (idempotent).
    pub(crate) fn enable(&self) {
        self.recent.get_or_init(|| {
            Mutex::new(RecentIds {
                seen: HashSet::with_hasher(IdHash),
                order: VecDeque::new(),
            })
        });
    }

    /// Whether the guard remembers ids (a join has touched its channel).
    pub(crate) fn is_on(&self) -> bool {
        self.recent.get().is_some()
    }

    /// The time to check against, if the guard is on: senders read the clock only then.
    pub(crate) fn clock(&self) -> Option<Instant> {
        self.recent.get().map(|_| Instant::now())
    }

    /// Whether `id` may be stored: true the first time (and remembers it), false for an id
    /// stored before and not yet forgotten (counted as a duplicate). Always true when off.
    pub(crate) fn admit(&self, id: MessageId, now: Instant) -> bool {
        let Some(recent) = self.recent.get() else {
            return true;
        };
        let mut recent = recent.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(&(old, at)) = recent.order.front() {
            let too_many = recent.order.len() >= self.config.max_ids.max(1);
            if !too_many && now.duration_since(at) < self.config.max_age {
                break;
            }
            recent.order.pop_front();
            recent.seen.remove(&old);
        }
        if recent.seen.insert(id) {
            recent.order.push_back((id, now));
            true
        } else {
            drop(recent);
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            false
        }
    }

    /// Whether `id` would be admitted now, without remembering it (for dry runs).
    pub(crate) fn would_admit(&self, id: MessageId) -> bool {
        let Some(recent) = self.recent.get() else {
            return true;
        };
        let recent = recent.lock().unwrap_or_else(|p| p.into_inner());
        match recent.order.iter().find(|(seen, _)| *seen == id) {
            Some((_, at)) => at.elapsed() >= self.config.max_age,
            None => true,
        }
    }

    pub(crate) fn duplicates(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_until_enabled() {
        let guard = LoopGuard::new(LoopDetection::default());
        let id = MessageId::new();
        assert!(guard.admit(id, Instant::now()));
        assert!(guard.admit(id, Instant::now()));
        guard.enable();
        assert!(guard.admit(id, Instant::now()));
        assert!(!guard.admit(id, Instant::now()));
        assert_eq!(guard.duplicates(), 1);
    }

    #[test]
    fn memory_is_bounded_by_count() {
        let guard = LoopGuard::new(LoopDetection {
            max_ids: 3,
            max_age: Duration::from_secs(60),
        });
        guard.enable();
        let ids: Vec<MessageId> = (0..4).map(|_| MessageId::new()).collect();
        for id in &ids {
            assert!(guard.admit(*id, Instant::now()));
        }
        assert!(
            guard.admit(ids[0], Instant::now()),
            "the oldest was forgotten"
        );
        assert!(!guard.admit(ids[3], Instant::now()));
    }

    #[test]
    fn memory_is_bounded_by_age() {
        let guard = LoopGuard::new(LoopDetection {
            max_ids: 100,
            max_age: Duration::from_millis(20),
        });
        guard.enable();
        let id = MessageId::new();
        assert!(guard.admit(id, Instant::now()));
        assert!(!guard.would_admit(id));
        std::thread::sleep(Duration::from_millis(30));
        assert!(guard.would_admit(id));
        assert!(
            guard.admit(id, Instant::now()),
            "an id older than max_age is forgotten"
        );
    }
}
