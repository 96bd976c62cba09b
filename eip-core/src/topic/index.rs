//! A [`TopicTrie`] shared between threads, with a [`MatchCache`] in front: patterns are added and
//! removed while other threads match subjects.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::cache::{CacheStats, MatchCache};
use super::{TopicPattern, TopicTrie};

/// Entries a [`TopicIndex`] caches unless told otherwise.
pub const DEFAULT_CACHE_CAPACITY: usize = 4096;

/// Values bound to topic patterns, shared by threads that change the patterns and threads that
/// match subjects, with recent results cached.
///
/// Every change bumps a generation counter, and a cached result is used only for the generation
/// it was computed at, so the cache never answers with bindings that have changed since.
///
/// **What a match returns.** Each change takes effect at one instant, when the counter moves
/// (while the change holds the trie's write lock, after editing it), and a match returns exactly
/// the values the patterns had at one instant between its start and its end: the counter value
/// it read first, for a hit, or the state of the trie it read under the read lock, for a miss.
/// So a change that returned before a match started is always seen by it, and one that starts
/// after the match returned never is; a change running meanwhile is seen entirely or not at all.
///
/// ```
/// use eip_core::topic::{TopicIndex, TopicPattern};
///
/// let index = TopicIndex::new();
/// index.insert(&TopicPattern::parse("stock.#")?, 1);
/// assert_eq!(&*index.matches("stock.ibm"), [1]);
/// index.insert(&TopicPattern::parse("*.ibm")?, 2);
/// assert_eq!(&*index.matches("stock.ibm"), [1, 2], "the cached [1] is not used");
/// # Ok::<(), eip_core::topic::TopicError>(())
/// ```
pub struct TopicIndex<T> {
    trie: RwLock<TopicTrie<T>>,
    /// Bumped by each change, under the write lock; read without the lock for a cache hit.
    generation: AtomicU64,
    cache: MatchCache<T>,
}

impl<T: Ord + Clone> Default for TopicIndex<T> {
    fn default() -> Self {
        TopicIndex::new()
    }
}

impl<T: Ord + Clone> TopicIndex<T> {
    /// An empty index caching [`DEFAULT_CACHE_CAPACITY`] results.
    pub fn new() -> Self {
        TopicIndex::with_cache_capacity(DEFAULT_CACHE_CAPACITY)
    }

    /// An empty index caching about `capacity` results (see [`MatchCache::new`]).
    pub fn with_cache_capacity(capacity: usize) -> Self {
        TopicIndex {
            trie: RwLock::new(TopicTrie::new()),
            generation: AtomicU64::new(0),
            cache: MatchCache::new(capacity),
        }
    }

    /// Stores `value` under `pattern` (see [`TopicTrie::insert`]).
    pub fn insert(&self, pattern: &TopicPattern, value: T) {
        self.change(|trie| {
            trie.insert(pattern, value);
            true
        });
    }

    /// Removes one copy of `value` from under `pattern`; whether there was one (see
    /// [`TopicTrie::remove`]).
    pub fn remove(&self, pattern: &TopicPattern, value: &T) -> bool {
        self.change(|trie| trie.remove(pattern, value))
    }

    /// The values whose patterns match `subject`, each once, ascending (see
    /// [`TopicTrie::matches`]). A cache hit allocates nothing: the slice is shared.
    pub fn matches(&self, subject: &str) -> Arc<[T]> {
        let generation = self.generation.load(Ordering::SeqCst);
        match self.cache.lookup(subject, generation, Arc::clone) {
            Ok(found) => found,
            Err(miss) => {
                let mut found = Vec::new();
                let generation = self.search(subject, &mut found);
                let found: Arc<[T]> = found.into();
                if miss.admit() {
                    self.cache.store(subject, miss, generation, found.clone());
                }
                found
            }
        }
    }

    /// [`matches`](Self::matches) into `found` (cleared first): a cache hit copies the stored
    /// values, and a miss whose result is not stored allocates nothing but what `found` needs
    /// to grow. For a caller matching many subjects with one buffer.
    pub fn matches_into(&self, subject: &str, found: &mut Vec<T>) {
        let generation = self.generation.load(Ordering::SeqCst);
        let hit = self.cache.lookup(subject, generation, |stored| {
            found.clear();
            found.extend_from_slice(stored);
        });
        if let Err(miss) = hit {
            let generation = self.search(subject, found);
            if miss.admit() {
                self.cache
                    .store(subject, miss, generation, found.as_slice().into());
            }
        }
    }

    /// Matches `subject` against the trie into `found`; the generation of the state searched.
    fn search(&self, subject: &str, found: &mut Vec<T>) -> u64 {
        let trie = self.read();
        // Changes bump the counter under the write lock: under the read lock it names exactly
        // the state this search sees.
        let generation = self.generation.load(Ordering::SeqCst);
        trie.matches_into(subject, found);
        generation
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The number of changes made so far: the generation results are cached under.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The cache's hits, misses and entries.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Applies `edit`, and moves the generation on if it says it changed something.
    fn change(&self, edit: impl FnOnce(&mut TopicTrie<T>) -> bool) -> bool {
        let mut trie = self.write();
        let changed = edit(&mut trie);
        if changed {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        changed
    }

    fn read(&self) -> RwLockReadGuard<'_, TopicTrie<T>> {
        self.trie.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, TopicTrie<T>> {
        self.trie.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> std::fmt::Debug for TopicIndex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicIndex")
            .field("generation", &self.generation.load(Ordering::SeqCst))
            .field("cache", &self.cache)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> TopicPattern {
        TopicPattern::parse(s).unwrap()
    }

    #[test]
    fn matches_into_copies_what_matches_shares() {
        let index = TopicIndex::new();
        index.insert(&p("a.#"), 2);
        index.insert(&p("*.b"), 1);
        let mut found = vec![9];
        for _ in 0..3 {
            index.matches_into("a.b", &mut found);
            assert_eq!(found, [1, 2]);
        }
        assert_eq!(index.cache_stats().hits, 1);
        assert_eq!(&*index.matches("a.b"), [1, 2]);
        index.matches_into("c.d", &mut found);
        assert!(found.is_empty(), "cleared first");
    }

    #[test]
    fn a_change_makes_every_cached_result_a_miss() {
        let index = TopicIndex::new();
        index.insert(&p("a.*"), 1);
        for _ in 0..3 {
            assert_eq!(&*index.matches("a.b"), [1]);
        }
        assert_eq!(index.cache_stats().hits, 1, "stored at the second miss");
        assert!(index.remove(&p("a.*"), &1));
        assert!(index.matches("a.b").is_empty());
        assert!(!index.remove(&p("a.*"), &1));
        assert_eq!(
            index.generation(),
            2,
            "a removal that found nothing changes nothing"
        );
        assert_eq!(index.cache_stats().misses, 3);
    }
}
