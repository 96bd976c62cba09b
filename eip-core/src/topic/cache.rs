//! A bounded cache of recent match results: subject → the values it matched, tagged with the
//! generation of the bindings they were computed from.

use std::sync::{Arc, Mutex, MutexGuard};

use super::MAX_TOPIC_LEN;
use super::hash::{hash_bytes, random_seeds};
use crate::sync::lock;

/// Entries per set: a subject is looked for in these only.
const WAYS: usize = 4;

/// Shards (a power of two): enough that two threads rarely want the same lock at once.
const SHARDS: usize = 16;

/// Doorkeeper bits per entry: with at most an eighth of them set, a subject seen for the first
/// time finds its bit set (and is stored anyway) about once in sixteen.
const DOORKEEPER_BITS: usize = 8;

/// What a [`MatchCache`] has answered, summed over its shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that found no entry, or one from another generation.
    pub misses: u64,
    /// Entries holding a result now.
    pub entries: usize,
}

/// A fixed-size, sharded cache of match results keyed by subject and checked against a
/// generation.
///
/// The cache never decides whether an entry is still true: the caller passes the generation of
/// the bindings it is matching against, and an entry counts only if it was stored with that same
/// generation. A binding change bumps the generation, so every older entry turns into a miss at
/// once, with nothing to clear and no window in which a reader could see a result from before
/// the change next to bindings from after it.
///
/// It is split into shards, each behind its own lock, chosen by the subject's hash: threads
/// matching different subjects rarely touch the same lock, and nothing on the way is shared by
/// all of them. Within a shard a subject can sit in one set of four entries; a full set
/// evicts by the clock rule (an entry read since the hand last passed gets a second chance),
/// after entries that are empty or from an older generation. The capacity is fixed when the
/// cache is made, so memory is bounded: at most `capacity` subjects of up to
/// [`MAX_TOPIC_LEN`] bytes, each with its result.
///
/// **Admission.** A subject seen once is not worth storing: in a stream of mostly distinct
/// subjects, storing each would cost a copy per miss and push out the subjects that do come
/// back. So a miss only stores its result ([`get_or_insert_with`](MatchCache::get_or_insert_with))
/// if the subject has missed before, recently: each shard keeps a doorkeeper, one bit per hash
/// value of a few times as many subjects as it holds, set at a subject's first miss and all
/// cleared once an eighth of them are set. A subject whose entry is only stale (an older
/// generation) is stored again at once. A hit allocates nothing: the result is an `Arc<[T]>`
/// shared by every reader of the entry, or copied into the caller's buffer.
///
/// One lookup, one lock: the hash is computed once, and a miss learns under the same lock
/// whether its result will be stored.
pub struct MatchCache<T> {
    shards: Box<[Shard<T>]>,
    /// Sets per shard, minus one (a power of two minus one).
    set_mask: usize,
    seeds: [u64; 3],
}

/// One shard, on a cache line of its own so that two shards' locks never share one.
#[repr(align(64))]
struct Shard<T>(Mutex<Sets<T>>);

struct Sets<T> {
    /// `WAYS` entries per set, set after set.
    entries: Box<[Entry<T>]>,
    /// The hash of the subject in each entry, beside the others of its set: a lookup compares
    /// a set's four in one cache line and reads only the entry whose hash is its subject's.
    tags: Box<[u64]>,
    /// The clock hand, a way number: where the next eviction in any set of the shard starts.
    hand: usize,
    hits: u64,
    misses: u64,
    /// The doorkeeper: a bit per hash value, set at a subject's first miss.
    seen: Box<[u64]>,
    /// Bits set since the doorkeeper was last cleared.
    sightings: usize,
}

struct Entry<T> {
    generation: u64,
    /// Reused from one subject to the next, so replacing an entry rarely allocates for it.
    subject: String,
    /// `None` while the entry is empty.
    found: Option<Arc<[T]>>,
    /// Read since the clock hand last passed.
    recent: bool,
}

impl<T> Entry<T> {
    fn empty() -> Self {
        Entry {
            generation: 0,
            subject: String::new(),
            found: None,
            recent: false,
        }
    }

    fn holds(&self, subject: &str) -> bool {
        self.found.is_some() && self.subject == subject
    }
}

/// A lookup that missed: the subject's hash, and whether its result should be stored.
#[derive(Debug, Clone, Copy)]
pub(super) struct Miss {
    hash: u64,
    admit: bool,
}

impl Miss {
    /// Whether the result is worth storing (the subject has missed before, recently).
    pub(super) fn admit(&self) -> bool {
        self.admit
    }
}

impl<T> Sets<T> {
    /// The entry of `set` (a range of entries) that holds `subject`, whose hash is `hash`.
    #[inline]
    fn way(&self, set: std::ops::Range<usize>, hash: u64, subject: &str) -> Option<usize> {
        let tags = self.tags.get(set.clone())?;
        tags.iter()
            .zip(set)
            .filter(|(tag, _)| **tag == hash)
            .map(|(_, way)| way)
            .find(|way| self.entries.get(*way).is_some_and(|e| e.holds(subject)))
    }

    /// Records a miss of the subject with `hash`; whether it was seen before: `stale` (its set
    /// holds an entry for it from another generation), or the doorkeeper has its bit.
    fn sighted(&mut self, hash: u64, stale: bool) -> bool {
        self.misses += 1;
        if stale {
            return true;
        }
        let bits = self.seen.len() * 64;
        let bit = (hash.rotate_right(40) as usize) & (bits - 1);
        let mask = 1_u64 << (bit % 64);
        if self.seen.get(bit / 64).is_some_and(|w| w & mask != 0) {
            return true;
        }
        // Cleared before a bit is set, not after, so the latest sighting is always remembered.
        if (self.sightings + 1) * DOORKEEPER_BITS > bits {
            self.seen.iter_mut().for_each(|w| *w = 0);
            self.sightings = 0;
        }
        if let Some(word) = self.seen.get_mut(bit / 64) {
            *word |= mask;
        }
        self.sightings += 1;
        false
    }
}

impl<T> MatchCache<T> {
    /// A cache of about `capacity` entries: rounded up so each shard has a power-of-two number
    /// of sets, and at least one set per shard (64 entries).
    pub fn new(capacity: usize) -> Self {
        let sets = capacity.div_ceil(SHARDS * WAYS).max(1).next_power_of_two();
        let seen_words = (sets * WAYS * DOORKEEPER_BITS).div_ceil(64).max(1);
        let shards = (0..SHARDS)
            .map(|_| {
                Shard(Mutex::new(Sets {
                    entries: (0..sets * WAYS).map(|_| Entry::empty()).collect(),
                    tags: vec![0; sets * WAYS].into_boxed_slice(),
                    hand: 0,
                    hits: 0,
                    misses: 0,
                    seen: vec![0; seen_words].into_boxed_slice(),
                    sightings: 0,
                }))
            })
            .collect();
        MatchCache {
            shards,
            set_mask: sets - 1,
            seeds: random_seeds(),
        }
    }

    /// How many entries it holds at most.
    pub fn capacity(&self) -> usize {
        self.shards.len() * (self.set_mask + 1) * WAYS
    }

    /// The result stored for `subject` at `generation`, if there is one. Subjects over
    /// [`MAX_TOPIC_LEN`] bytes are never stored.
    pub fn get(&self, subject: &str, generation: u64) -> Option<Arc<[T]>> {
        self.lookup(subject, generation, Arc::clone).ok()
    }

    /// Looks `subject` up at `generation`: on a hit, `read` is given the stored result under
    /// the shard's lock (to clone or copy it out); on a miss, what [`store`](Self::store)
    /// needs. A subject over [`MAX_TOPIC_LEN`] bytes always misses and is never admitted.
    pub(super) fn lookup<R>(
        &self,
        subject: &str,
        generation: u64,
        read: impl FnOnce(&Arc<[T]>) -> R,
    ) -> Result<R, Miss> {
        if subject.len() > MAX_TOPIC_LEN {
            return Err(Miss {
                hash: 0,
                admit: false,
            });
        }
        let hash = hash_bytes(subject.as_bytes(), self.seeds);
        let (mut sets, set) = self.set(hash);
        let sets = &mut *sets;
        let mut stale = false;
        if let Some(entry) = sets
            .way(set, hash, subject)
            .and_then(|way| sets.entries.get_mut(way))
        {
            if entry.generation == generation
                && let Some(found) = &entry.found
            {
                entry.recent = true;
                let hit = read(found);
                sets.hits += 1;
                return Ok(hit);
            }
            stale = true;
        }
        let admit = sets.sighted(hash, stale);
        Err(Miss { hash, admit })
    }

    /// Stores `found` as the result for `subject` at `generation`. An entry for the subject
    /// from a later generation is kept (this result is older); otherwise the subject takes an
    /// empty entry of its set, else one from an older generation, else the clock's choice.
    /// Stores whether or not the subject was seen before; see
    /// [`get_or_insert_with`](Self::get_or_insert_with) for the admission rule.
    pub fn insert(&self, subject: &str, generation: u64, found: Arc<[T]>) {
        if subject.len() > MAX_TOPIC_LEN {
            return;
        }
        let hash = hash_bytes(subject.as_bytes(), self.seeds);
        self.store(subject, Miss { hash, admit: true }, generation, found);
    }

    /// Stores the result of a lookup that missed, if the miss admits it.
    pub(super) fn store(&self, subject: &str, miss: Miss, generation: u64, found: Arc<[T]>) {
        if !miss.admit || subject.len() > MAX_TOPIC_LEN {
            return;
        }
        let (mut sets, set) = self.set(miss.hash);
        let held = sets.way(set.clone(), miss.hash, subject);
        let Sets {
            entries,
            tags,
            hand,
            ..
        } = &mut *sets;
        let Some(ways) = entries.get_mut(set.clone()) else {
            return;
        };
        let way = match held.map(|way| way - set.start) {
            Some(way) if ways[way].generation > generation => return,
            Some(way) => way,
            None => victim(ways, generation, hand),
        };
        if let Some(tag) = tags.get_mut(set.start + way) {
            *tag = miss.hash;
        }
        let entry = &mut ways[way];
        if entry.subject != subject {
            entry.subject.clear();
            entry.subject.push_str(subject);
        }
        entry.generation = generation;
        entry.found = Some(found);
        entry.recent = false;
    }

    /// The result for `subject` at `generation`: from the cache, or computed by `compute`
    /// (called without any lock held) and stored if the subject has missed before recently
    /// (see [`MatchCache`]).
    pub fn get_or_insert_with(
        &self,
        subject: &str,
        generation: u64,
        compute: impl FnOnce() -> Vec<T>,
    ) -> Arc<[T]> {
        match self.lookup(subject, generation, Arc::clone) {
            Ok(found) => found,
            Err(miss) => {
                let found: Arc<[T]> = compute().into();
                if miss.admit {
                    self.store(subject, miss, generation, found.clone());
                }
                found
            }
        }
    }

    /// Hits, misses and entries so far.
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats::default();
        for shard in &self.shards {
            let sets = lock(&shard.0);
            stats.hits += sets.hits;
            stats.misses += sets.misses;
            stats.entries += sets.entries.iter().filter(|e| e.found.is_some()).count();
        }
        stats
    }

    /// The locked shard of `hash` and the index of its set there (as `WAYS`-sized chunks).
    fn set(&self, hash: u64) -> (MutexGuard<'_, Sets<T>>, std::ops::Range<usize>) {
        let shard = &self.shards[hash as usize & (SHARDS - 1)];
        let set = (hash >> 32) as usize & self.set_mask;
        (lock(&shard.0), set * WAYS..(set + 1) * WAYS)
    }
}

impl<T> std::fmt::Debug for MatchCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchCache")
            .field("capacity", &self.capacity())
            .field("stats", &self.stats())
            .finish()
    }
}

/// The way of a full set to reuse: an empty one, else one from an older generation than
/// `generation`, else the first the clock hand finds not read since its last pass.
fn victim<T>(ways: &mut [Entry<T>], generation: u64, hand: &mut usize) -> usize {
    if let Some(way) = ways
        .iter()
        .position(|e| e.found.is_none() || e.generation < generation)
    {
        return way;
    }
    // Two turns at most: the first clears every `recent` it passes.
    for _ in 0..2 * ways.len() {
        let way = *hand % ways.len();
        *hand = (way + 1) % ways.len();
        match ways.get_mut(way) {
            Some(e) if e.recent => e.recent = false,
            Some(_) => return way,
            None => break,
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arc(v: &[u32]) -> Arc<[u32]> {
        v.into()
    }

    #[test]
    fn an_entry_answers_only_for_its_own_generation() {
        let c = MatchCache::new(64);
        assert_eq!(c.get("a.b", 1), None);
        c.insert("a.b", 1, arc(&[1, 2]));
        assert_eq!(c.get("a.b", 1).as_deref(), Some(&[1, 2][..]));
        assert_eq!(c.get("a.b", 2), None, "a change made it stale");
        assert_eq!(c.get("a.c", 1), None);
        c.insert("a.b", 2, arc(&[3]));
        assert_eq!(c.get("a.b", 2).as_deref(), Some(&[3][..]));
        c.insert("a.b", 1, arc(&[9]));
        assert_eq!(
            c.get("a.b", 2).as_deref(),
            Some(&[3][..]),
            "an older result does not replace a newer one"
        );
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 3,
                misses: 3,
                entries: 1
            }
        );
    }

    #[test]
    fn a_subject_is_stored_at_its_second_miss_and_then_shared() {
        let c = MatchCache::new(64);
        let mut computed = 0;
        let mut compute = || {
            computed += 1;
            vec![7]
        };
        let first = c.get_or_insert_with("x", 0, &mut compute);
        assert_eq!(c.stats().entries, 0, "one sighting is not stored");
        let second = c.get_or_insert_with("x", 0, &mut compute);
        let third = c.get_or_insert_with("x", 0, || unreachable!("computed three times"));
        assert_eq!(computed, 2);
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(
            Arc::ptr_eq(&second, &third),
            "a hit shares the stored result"
        );
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 1,
                misses: 2,
                entries: 1
            }
        );
    }

    #[test]
    fn a_stale_entry_is_replaced_at_its_first_miss() {
        let c = MatchCache::new(64);
        c.insert("x", 0, arc(&[1]));
        assert_eq!(&*c.get_or_insert_with("x", 1, || vec![2]), &[2]);
        assert_eq!(c.get("x", 1).as_deref(), Some(&[2][..]));
    }

    #[test]
    fn subjects_seen_once_are_mostly_not_stored() {
        let c = MatchCache::new(4096);
        for i in 0..10_000 {
            c.get_or_insert_with(&format!("once.{i}"), 0, || vec![1]);
        }
        // At most an eighth of the doorkeeper's bits are ever set, so about one first sighting
        // in sixteen looks like a second one; far fewer than an eighth are stored.
        let stored = c.stats().entries;
        assert!(stored < 10_000 / 8, "{stored} stored");
        c.get_or_insert_with("once.9999", 0, || vec![1]);
        assert_eq!(
            c.get("once.9999", 0).as_deref(),
            Some(&[1][..]),
            "a recent one comes back"
        );
    }

    #[test]
    fn memory_stays_within_the_capacity_and_recent_entries_survive() {
        let c = MatchCache::new(256);
        assert_eq!(c.capacity(), 256);
        c.insert("hot", 0, arc(&[1]));
        for i in 0..10_000 {
            assert_eq!(c.get("hot", 0).as_deref(), Some(&[1][..]), "after {i}");
            c.insert(&format!("cold.{i}"), 0, arc(&[2]));
        }
        assert!(c.stats().entries <= 256);
        assert!(c.stats().entries > 200, "the sets fill up");
    }

    #[test]
    fn stale_entries_are_evicted_before_current_ones() {
        let c = MatchCache::new(1);
        assert_eq!(c.capacity(), SHARDS * WAYS);
        // One set: two current entries, then two from an older generation; a fifth subject
        // must push out an old one, though the clock hand points at a current one.
        let place = |s: &str| {
            let hash = hash_bytes(s.as_bytes(), c.seeds);
            (
                hash as usize & (SHARDS - 1),
                (hash >> 32) as usize & c.set_mask,
            )
        };
        let same_set: Vec<String> = (0..)
            .map(|i| format!("s{i}"))
            .filter(|s| place(s) == place("s0"))
            .take(WAYS + 1)
            .collect();
        for (i, s) in same_set[..WAYS].iter().enumerate() {
            c.insert(s, u64::from(i < 2), arc(&[0]));
        }
        c.insert(&same_set[WAYS], 1, arc(&[1]));
        for s in same_set[..2].iter().chain(&same_set[WAYS..]) {
            assert!(c.get(s, 1).is_some(), "{s} kept");
        }
        assert_eq!(c.stats().entries, WAYS);
    }

    #[test]
    fn subjects_over_255_bytes_are_not_stored() {
        let c = MatchCache::new(64);
        let long = "a".repeat(256);
        assert_eq!(&*c.get_or_insert_with(&long, 0, || vec![1]), &[1]);
        assert_eq!(c.get(&long, 0), None);
        assert_eq!(c.stats().entries, 0);
    }
}
