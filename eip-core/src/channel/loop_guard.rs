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

use std::collections::{HashMap, VecDeque};
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

/// The ids a guard remembers, oldest first. Ids are time-ordered (UUID v7, strictly increasing
/// within a process), so nearly every id admitted is greater than all before it: those go to
/// `ascending`, sorted by construction, where one comparison with the last proves an id new and
/// a binary search finds an old one, touching no hash table. The rest (ids from elsewhere, or
/// replayed) go to `others`, with a hash map. Both keep each id's admission number, so the
/// oldest of the two is forgotten first: together they hold exactly the last `max_ids` ids
/// admitted, within `max_age`.
struct RecentIds {
    ascending: VecDeque<Remembered>,
    others: VecDeque<Remembered>,
    others_at: HashMap<u128, Instant, IdHash>,
    admitted: u64,
}

#[derive(Clone, Copy)]
struct Remembered {
    /// The id as a number: ordered as ids are (big-endian bytes), compared without `memcmp`.
    key: u128,
    at: Instant,
    number: u64,
}

fn key(id: MessageId) -> u128 {
    id.as_uuid().as_u128()
}

impl RecentIds {
    fn new() -> Self {
        RecentIds {
            ascending: VecDeque::new(),
            others: VecDeque::new(),
            others_at: HashMap::with_hasher(IdHash),
            admitted: 0,
        }
    }

    fn len(&self) -> usize {
        self.ascending.len() + self.others.len()
    }

    /// When the id admitted first was admitted, and whether it is in `ascending`.
    fn oldest(&self) -> Option<(Instant, bool)> {
        match (self.ascending.front(), self.others.front()) {
            (Some(a), Some(o)) if o.number < a.number => Some((o.at, false)),
            (Some(a), _) => Some((a.at, true)),
            (None, Some(o)) => Some((o.at, false)),
            (None, None) => None,
        }
    }

    fn forget_oldest(&mut self, in_ascending: bool) {
        if in_ascending {
            self.ascending.pop_front();
        } else if let Some(old) = self.others.pop_front() {
            self.others_at.remove(&old.key);
        }
    }

    /// When `id` was admitted, if it is remembered. For an id greater than all in `ascending`
    /// (the common case) and no `others`, one comparison.
    fn admitted_at(&self, id: MessageId) -> Option<Instant> {
        let id = key(id);
        if self.ascending.back().is_some_and(|newest| id <= newest.key)
            && let Ok(i) = self.ascending.binary_search_by(|r| r.key.cmp(&id))
        {
            return self.ascending.get(i).map(|r| r.at);
        }
        if self.others.is_empty() {
            return None;
        }
        self.others_at.get(&id).copied()
    }

    fn remember(&mut self, id: MessageId, at: Instant) {
        let id = key(id);
        let remembered = Remembered {
            key: id,
            at,
            number: self.admitted,
        };
        self.admitted += 1;
        if self.ascending.back().is_none_or(|newest| newest.key < id) {
            self.ascending.push_back(remembered);
        } else {
            self.others.push_back(remembered);
            self.others_at.insert(id, at);
        }
    }
}

/// Hashes a message id (as its number) by folding its 8-byte halves. Ids are UUID v7, whose low bits are random
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
        self.recent.get_or_init(|| Mutex::new(RecentIds::new()));
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
        // Remembered at `cutoff` or earlier means `max_age` old by `now`.
        let cutoff = now.checked_sub(self.config.max_age);
        let young = |at: Instant| cutoff.is_none_or(|cutoff| at > cutoff);
        let max_ids = self.config.max_ids.max(1);
        let mut recent = recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.others.is_empty() {
            // Every id remembered came in order (the common case): forget from the front,
            // and an id greater than the last is new.
            while let Some(oldest) = recent.ascending.front() {
                if recent.ascending.len() < max_ids && young(oldest.at) {
                    break;
                }
                recent.ascending.pop_front();
            }
            if recent
                .ascending
                .back()
                .is_none_or(|last| last.key < key(id))
            {
                recent.remember(id, now);
                return true;
            }
        }
        while let Some((oldest, in_ascending)) = recent.oldest() {
            if recent.len() < max_ids && young(oldest) {
                break;
            }
            recent.forget_oldest(in_ascending);
        }
        if recent.admitted_at(id).is_none() {
            recent.remember(id, now);
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
        match recent.admitted_at(id) {
            Some(at) => at.elapsed() >= self.config.max_age,
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
    fn ids_out_of_order_are_remembered_and_forgotten_oldest_first() {
        let guard = LoopGuard::new(LoopDetection {
            max_ids: 3,
            max_age: Duration::from_secs(60),
        });
        guard.enable();
        let ids: Vec<MessageId> = (0..4).map(|_| MessageId::new()).collect();
        // Admitted 2, 0, 3, 1: 0 and 1 arrive after a greater id.
        for i in [2, 0, 3, 1] {
            assert!(guard.admit(ids[i], Instant::now()), "{i}");
        }
        // Three remembered (0, 3, 1); 2, admitted first, is forgotten.
        for i in [0, 3, 1] {
            assert!(!guard.would_admit(ids[i]), "{i}");
        }
        assert!(guard.would_admit(ids[2]));
        assert!(
            guard.admit(ids[2], Instant::now()),
            "the oldest was forgotten"
        );
        // Now 3, 1, 2: admitting a new id forgets 3, then 1.
        assert!(guard.admit(MessageId::new(), Instant::now()));
        assert!(guard.would_admit(ids[3]) && !guard.would_admit(ids[1]));
        let newest = MessageId::new();
        assert!(guard.admit(newest, Instant::now()));
        assert!(guard.would_admit(ids[1]) && !guard.would_admit(ids[2]));
        assert!(!guard.admit(newest, Instant::now()));
        assert_eq!(guard.duplicates(), 1);
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
