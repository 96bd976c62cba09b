//! A trie of topic patterns, matched against a subject in one walk instead of one test per
//! pattern.
//!
//! Each pattern is a path from the root: a literal word follows the child labelled with the
//! word's id ([`words`], [`children`]), `*` the node's star child and `#` its hash child. A run
//! of wildcards is parsed into its stars followed by at most one `#` (`#.#` is `#`, `#.*` is
//! `*.#`: they match the same subjects), so such spellings end at the same node, and a `#` node
//! never has a wildcard child: after a `#` comes a literal word or the end. A value
//! stored at the end of the path belongs to that pattern. Matching looks each subject word's id
//! up once, then walks down every edge that can take the words ([`search`]).
//!
//! A `#` edge can take any number of words, so the same node may be reached at the same subject
//! position along several routes (`#.*.#.*.#.a` against thirty words has thousands). The walk
//! remembers, for each `#` node below another `#`, the lowest position it has already expanded
//! from and never expands a position twice, so it visits each (node, position) pair at most
//! once: its cost is bounded by the nodes that can match a prefix of the subject times the
//! subject's length, whatever the patterns. A node with no `#` above it is reached by one
//! route of a fixed number of words, so at most once a search: a first `#` needs no memo, and
//! a trie without `#.…#` patterns (the usual case) makes a search keep none. Each node also knows the fewest and most words the patterns below it
//! need, and the walk skips nodes that can not fit the words left.

mod children;
mod node;
mod search;
mod sorted;
mod words;

use std::fmt;

use self::node::{IdPool, NO_MEMO, Node, UNBOUNDED, plus_one};
use self::search::{MEMO, Memo, Search};
use self::words::{UNKNOWN, WordId, Words};
#[cfg(doc)]
use super::subject_words;
use super::{MAX_TOPIC_LEN, TopicPattern, Word};

/// Values bound to topic patterns, found by matching a subject.
///
/// `T` is what a match yields: a topic exchange stores the index of a target, a subscription
/// registry an id. The same pattern may hold many values and the same value may sit under many
/// patterns; [`matches`](Self::matches) returns each matching value once.
///
/// ```
/// use eip_core::topic::{TopicPattern, TopicTrie};
///
/// let mut trie = TopicTrie::new();
/// trie.insert(&TopicPattern::parse("stock.*.nyse")?, 1);
/// trie.insert(&TopicPattern::parse("stock.#")?, 2);
/// trie.insert(&TopicPattern::parse("#.nyse")?, 2);
/// assert_eq!(trie.matches("stock.ibm.nyse"), [1, 2]);
/// assert_eq!(trie.matches("stock"), [2]);
/// assert!(trie.matches("bond.ibm.lse").is_empty());
/// # Ok::<(), eip_core::topic::TopicError>(())
/// ```
#[derive(Clone)]
pub struct TopicTrie<T> {
    root: Node<T>,
    len: usize,
    hash_ids: IdPool,
    words: Words,
}

impl<T> Default for TopicTrie<T> {
    fn default() -> Self {
        TopicTrie::new()
    }
}

impl<T> TopicTrie<T> {
    /// An empty trie.
    pub fn new() -> Self {
        TopicTrie {
            root: Node::new(),
            len: 0,
            hash_ids: IdPool::default(),
            words: Words::new(),
        }
    }

    /// How many values are stored (a value stored twice counts twice).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `value` under `pattern`. Storing the same value under the same pattern twice
    /// keeps both; a match still yields it once. (The values under one pattern are kept in
    /// order, hence `Ord`.)
    pub fn insert(&mut self, pattern: &TopicPattern, value: T)
    where
        T: Ord,
    {
        // The bounds of each suffix of the pattern: the fewest and most words it takes.
        let mut bounds = vec![(0, 0); pattern.words.len() + 1];
        for (d, word) in pattern.words.iter().enumerate().rev() {
            let (lo, hi) = bounds.get(d + 1).copied().unwrap_or_default();
            if let Some(b) = bounds.get_mut(d) {
                *b = match word {
                    Word::Any => (lo, UNBOUNDED),
                    _ => (plus_one(lo), plus_one(hi)),
                };
            }
        }
        let (words, ids) = (&mut self.words, &mut self.hash_ids);
        let mut node = &mut self.root;
        // Whether the path so far went through a `#`: a `#` node below one needs a memo id.
        let mut after_hash = false;
        for (word, bounds) in pattern.words.iter().zip(&bounds) {
            node.widen(*bounds);
            node = match word {
                Word::Literal(w) => {
                    let id = words.id(w);
                    let (child, made) = node.words.get_or_insert(id);
                    if made {
                        words.retain(id);
                    }
                    child
                }
                Word::One => node.wild_mut().star.get_or_insert_with(Node::new),
                Word::Any => {
                    let memo = std::mem::replace(&mut after_hash, true);
                    node.wild_mut()
                        .hash
                        .get_or_insert_with(|| Node::hash(if memo { ids.take() } else { NO_MEMO }))
                }
            };
        }
        node.widen((0, 0));
        node.values.push(value);
        self.len += 1;
    }

    /// Removes one copy of `value` from under `pattern`, and the nodes left empty. Returns
    /// whether there was one. Spellings of a pattern that differ only in the order of a run of
    /// wildcards (`#.*` and `*.#`, `#.#` and `#`) are the same pattern.
    pub fn remove(&mut self, pattern: &TopicPattern, value: &T) -> bool
    where
        T: PartialEq,
    {
        let removed = remove_at(
            &mut self.root,
            &pattern.words,
            value,
            &mut self.hash_ids,
            &mut self.words,
        );
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Calls `f` once with each value whose pattern matches `subject` (a value stored under
    /// several matching patterns comes once per pattern). A subject over [`MAX_TOPIC_LEN`]
    /// bytes matches nothing.
    pub fn for_each_match<'a>(&'a self, subject: &str, mut f: impl FnMut(&'a T)) {
        self.for_each_match_slice(subject, |values| values.iter().for_each(&mut f));
    }

    /// [`for_each_match`](Self::for_each_match), given the values of each matching node at
    /// once.
    fn for_each_match_slice<'a>(&'a self, subject: &str, f: impl FnMut(&'a [T])) {
        if subject.len() > MAX_TOPIC_LEN {
            return;
        }
        // The subject is scanned once: each word is looked up as soon as its end is found.
        let mut ids = WordIds::new();
        if !subject.is_empty() {
            self.words.scan(subject.as_bytes(), |id| ids.push(id));
        }
        self.search(ids.as_slice(), f);
    }

    /// [`for_each_match`](Self::for_each_match) for a subject already split into words (see
    /// [`subject_words`]). No length limit is applied here.
    pub fn for_each_match_words<'a>(&'a self, words: &[&str], mut f: impl FnMut(&'a T)) {
        let mut ids = WordIds::new();
        for w in words {
            ids.push(self.words.get_bytes(w.as_bytes()));
        }
        self.search(ids.as_slice(), |values| values.iter().for_each(&mut f));
    }

    /// Walks the trie for a subject given as word ids.
    fn search<'a>(&'a self, ids: &[WordId], mut f: impl FnMut(&'a [T])) {
        let memo_nodes = self.hash_ids.next as usize;
        if memo_nodes == 0 {
            // No `#` node needs a memo: an empty one (no allocation) is never consulted.
            Search::new(ids, &mut Memo::default(), &mut f).visit(&self.root, 0);
            return;
        }
        let mut run = |memo: &mut Memo| {
            memo.begin(memo_nodes);
            Search::new(ids, memo, &mut f).visit(&self.root, 0);
        };
        // The shared memo saves an allocation per search; it is busy only if `f` itself
        // searches, and unavailable while the thread shuts down: then use a fresh one.
        let shared = MEMO.try_with(|memo| match memo.try_borrow_mut() {
            Ok(mut memo) => {
                run(&mut memo);
                true
            }
            Err(_) => false,
        });
        if !matches!(shared, Ok(true)) {
            run(&mut Memo::default());
        }
    }

    /// The values whose patterns match `subject`, each once, in ascending order. A subject
    /// over [`MAX_TOPIC_LEN`] bytes matches nothing.
    pub fn matches(&self, subject: &str) -> Vec<T>
    where
        T: Ord + Clone,
    {
        let mut found = Vec::new();
        self.matches_into(subject, &mut found);
        found
    }

    /// [`matches`](Self::matches) into `found` (cleared first), so a caller matching many
    /// subjects can reuse one buffer.
    pub fn matches_into(&self, subject: &str, found: &mut Vec<T>)
    where
        T: Ord + Clone,
    {
        found.clear();
        self.for_each_match_slice(subject, |values| match values {
            [value] => found.push(value.clone()),
            _ => found.extend_from_slice(values),
        });
        sorted::sort_dedup(found);
    }
}

impl<T> fmt::Debug for TopicTrie<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TopicTrie")
            .field("len", &self.len)
            .field(
                "memo_nodes",
                &(self.hash_ids.next as usize - self.hash_ids.free.len()),
            )
            .finish()
    }
}

fn remove_at<T: PartialEq>(
    node: &mut Node<T>,
    words: &[Word],
    value: &T,
    ids: &mut IdPool,
    words_ids: &mut Words,
) -> bool {
    let Some((first, rest)) = words.split_first() else {
        if !node.values.remove(value) {
            return false;
        }
        node.recompute_bounds();
        return true;
    };
    let removed = match first {
        Word::Literal(w) => {
            let Some(id) = words_ids.get(w) else {
                return false;
            };
            let Some(child) = node.words.get_mut(id) else {
                return false;
            };
            let removed = remove_at(child, rest, value, ids, words_ids);
            if removed && child.is_empty() {
                node.words.remove(id);
                words_ids.release(id);
            }
            removed
        }
        Word::One => {
            let Some(wild) = node.wild.as_deref_mut() else {
                return false;
            };
            let Some(child) = wild.star.as_mut() else {
                return false;
            };
            let removed = remove_at(child, rest, value, ids, words_ids);
            if removed && child.is_empty() {
                wild.star = None;
                node.tidy_wild();
            }
            removed
        }
        Word::Any => {
            let Some(wild) = node.wild.as_deref_mut() else {
                return false;
            };
            let Some(child) = wild.hash.as_mut() else {
                return false;
            };
            let removed = remove_at(child, rest, value, ids, words_ids);
            if removed && child.is_empty() {
                if child.hash_id != NO_MEMO {
                    ids.release(child.hash_id);
                }
                wild.hash = None;
                node.tidy_wild();
            }
            removed
        }
    };
    if removed {
        node.recompute_bounds();
    }
    removed
}

/// Word ids kept on the stack for a typical subject; longer ones spill to the heap.
const INLINE_WORDS: usize = 32;

/// The ids of a subject's words, on the stack unless there are more than [`INLINE_WORDS`].
struct WordIds {
    inline: [WordId; INLINE_WORDS],
    len: usize,
    spilled: Vec<WordId>,
}

impl WordIds {
    fn new() -> Self {
        WordIds {
            inline: [UNKNOWN; INLINE_WORDS],
            len: 0,
            spilled: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, id: WordId) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = id,
            None => {
                if self.spilled.is_empty() {
                    self.spilled.extend_from_slice(&self.inline);
                }
                self.spilled.push(id);
            }
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[WordId] {
        match self.inline.get(..self.len) {
            Some(ids) => ids,
            None => &self.spilled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topic::subject_words;
    use proptest::prelude::*;

    fn p(s: &str) -> TopicPattern {
        TopicPattern::parse(s).unwrap()
    }

    fn trie(patterns: &[&str]) -> TopicTrie<usize> {
        let mut t = TopicTrie::new();
        for (i, s) in patterns.iter().enumerate() {
            t.insert(&p(s), i);
        }
        t
    }

    #[test]
    fn a_node_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Node<u32>>(), 64);
        assert_eq!(std::mem::size_of::<Node<u64>>(), 64);
    }

    #[test]
    fn each_pattern_matches_by_the_topic_rules() {
        let t = trie(&[
            "stock.*.nyse",
            "stock.#",
            "#",
            "",
            "*",
            "a..b",
            "a.*",
            "#.b",
        ]);
        assert_eq!(t.matches("stock.ibm.nyse"), [0, 1, 2]);
        assert_eq!(t.matches("stock"), [1, 2, 4]);
        assert_eq!(t.matches(""), [2, 3], "the empty subject is zero words");
        assert_eq!(t.matches("a..b"), [2, 5, 7], "an empty word is a word");
        assert_eq!(t.matches("a."), [2, 6], "a trailing dot adds an empty word");
    }

    #[test]
    fn a_value_under_several_matching_patterns_is_returned_once() {
        let mut t = TopicTrie::new();
        for s in ["a.*", "a.#", "#", "a.b", "a.b"] {
            t.insert(&p(s), 7);
        }
        assert_eq!(t.matches("a.b"), [7]);
        let mut calls = 0;
        t.for_each_match("a.b", |_| calls += 1);
        assert_eq!(calls, 5, "for_each_match yields once per pattern entry");
    }

    #[test]
    fn matches_come_sorted_and_once_however_many() {
        for n in [0, 1, 2, 5, 31, 32, 33, 34, 40, 100] {
            let mut t = TopicTrie::new();
            let mut want = Vec::new();
            for i in 0..n {
                // Out of order, and past 41 values repeated, under patterns that all match.
                let v = (i * 37) % 41;
                t.insert(&p(["#", "a.*", "*.b", "a.b"][i % 4]), v);
                want.push(v);
            }
            want.sort_unstable();
            want.dedup();
            assert_eq!(t.matches("a.b"), want, "{n} values");
            let mut found = vec![99; 3];
            t.matches_into("a.b", &mut found);
            assert_eq!(found, want, "{n} values, into a used buffer");
        }
    }

    #[test]
    fn subjects_over_255_bytes_match_nothing() {
        let t = trie(&["#"]);
        assert_eq!(t.matches(&"a".repeat(255)), [0]);
        assert!(t.matches(&"a".repeat(256)).is_empty());
    }

    #[test]
    fn removing_prunes_empty_nodes_and_reuses_hash_ids() {
        let mut t = TopicTrie::new();
        t.insert(&p("a.#.b.#"), 1);
        t.insert(&p("a.#.b.#"), 2);
        assert_eq!(t.hash_ids.next, 1, "only the second `#` needs a memo id");
        assert!(t.remove(&p("a.#.b.#"), &1));
        assert!(!t.remove(&p("a.#.b.#"), &1), "only one copy was stored");
        assert!(!t.remove(&p("a.*.b.#"), &2), "not under that pattern");
        assert_eq!(t.matches("a.x.y.b"), [2]);
        assert!(t.remove(&p("a.#.#.b.#"), &2), "`#.#` is `#`");
        assert!(t.is_empty());
        assert!(t.root.is_empty(), "every node was pruned");
        assert_eq!(t.words.len(), 0, "every word id was freed");
        assert_eq!(t.hash_ids.free, [0]);
        t.insert(&p("#.x.#"), 3);
        assert_eq!(t.hash_ids.next, 1, "the freed id was reused");
        assert!(t.hash_ids.free.is_empty());
        assert_eq!(t.matches("x"), [3]);
        assert!(t.remove(&p("#.x.#"), &3));
        assert_eq!(t.hash_ids.free, [0], "freed again with its node");
    }

    #[test]
    fn a_first_hash_takes_no_memo_id() {
        let mut t = TopicTrie::new();
        for (i, s) in ["#", "#.a", "a.#", "*.#.b", "a.*.#", "#.*"]
            .iter()
            .enumerate()
        {
            t.insert(&p(s), i);
        }
        assert_eq!(t.hash_ids.next, 0);
        assert_eq!(t.matches("a.b"), [0, 2, 3, 4, 5]);
        assert_eq!(t.matches("a"), [0, 1, 2, 5]);
        assert_eq!(t.matches(""), [0]);
        t.insert(&p("a.#.b.#"), 6);
        assert_eq!(t.hash_ids.next, 1);
        assert_eq!(t.matches("a.b"), [0, 2, 3, 4, 5, 6]);
        assert!(t.remove(&p("#"), &0));
        assert!(t.remove(&p("a.#"), &2));
        assert_eq!(t.hash_ids.next, 1, "removing first `#`s frees no memo id");
        assert!(t.hash_ids.free.is_empty());
        assert_eq!(t.matches("a.x.b"), [3, 4, 5, 6]);
    }

    #[test]
    fn many_hash_words_against_a_long_subject_stay_cheap() {
        let subject = vec!["x"; 30].join(".");
        let words: Vec<&str> = subject_words(&subject).collect();
        let mut t = TopicTrie::new();
        t.insert(&p("#.#.#.a"), 0);
        t.insert(&p("#.*.#.*.#.*.#.*.#.a"), 1);
        t.insert(&p("#.*.#.*.#.*.#.*.#.x"), 2);
        assert_eq!(t.matches(&subject), [2]);
        // Without the memo the last two patterns take millions of steps against 30 words; with
        // it each of the 13 nodes (the root included) is visited at most once per position.
        let mut memo = Memo::default();
        memo.begin(t.hash_ids.next as usize);
        let ids: Vec<WordId> = words
            .iter()
            .map(|w| t.words.get_bytes(w.as_bytes()))
            .collect();
        let mut search = Search::new(&ids, &mut memo, |_: &[usize]| {});
        search.visit(&t.root, 0);
        assert!(search.visits <= 13 * 31, "{} visits", search.visits);
    }

    #[test]
    fn a_search_with_more_visits_pending_than_the_stack_holds_finds_them_all() {
        // At each of the twelve words the `#` can end and `x` go on: twelve visits are found
        // before any is made, more than the stack keeps inline.
        let patterns: Vec<String> = (1..=12)
            .map(|n| format!("#.{}", vec!["x"; n].join(".")))
            .chain((1..=12).map(|n| format!("{}.#", vec!["*"; n].join("."))))
            .collect();
        let t = trie(&patterns.iter().map(String::as_str).collect::<Vec<_>>());
        let subject = ["x"; 12].join(".");
        assert_eq!(t.matches(&subject), (0..24).collect::<Vec<_>>());
        assert_eq!(t.matches("x.x"), [0, 1, 12, 13]);
        assert_eq!(t.matches("y.x"), [0, 12, 13]);
    }

    #[test]
    fn a_search_from_inside_a_search_gets_its_own_memo() {
        let t = trie(&["#.a", "#"]);
        let mut inner = Vec::new();
        t.for_each_match("x.a", |_| inner.push(t.matches("a")));
        assert_eq!(inner, [vec![0, 1], vec![0, 1]]);
    }

    /// The rules, written as directly as possible (exponential, for small inputs only).
    fn reference(p: &[&str], s: &[&str]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((&"#", rest)) => (0..=s.len()).any(|k| reference(rest, &s[k..])),
            Some((&"*", rest)) => !s.is_empty() && reference(rest, &s[1..]),
            Some((w, rest)) => s.first() == Some(w) && reference(rest, &s[1..]),
        }
    }

    fn word() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("a"), Just("b"), Just(""), Just("*"), Just("#")]
    }

    proptest! {
        /// Random patterns, some removed again, against random subjects: the trie yields
        /// exactly the values of the remaining patterns the rules match, each once.
        #[test]
        fn trie_agrees_with_the_rules(
            patterns in proptest::collection::vec(
                (proptest::collection::vec(word(), 0..5), any::<bool>()), 0..12),
            subjects in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("")], 0..6), 1..8),
        ) {
            let patterns: Vec<(String, bool)> =
                patterns.iter().map(|(w, keep)| (w.join("."), *keep)).collect();
            let mut t = TopicTrie::new();
            for (i, (s, _)) in patterns.iter().enumerate() {
                t.insert(&p(s), i % 4);
            }
            for (i, (s, keep)) in patterns.iter().enumerate() {
                if !keep {
                    prop_assert!(t.remove(&p(s), &(i % 4)));
                }
            }
            for s in subjects {
                let subject = s.join(".");
                let sw: Vec<&str> = subject_words(&subject).collect();
                let mut expected: Vec<usize> = patterns
                    .iter()
                    .enumerate()
                    .filter(|(_, (pat, keep))| {
                        *keep && reference(&subject_words(pat).collect::<Vec<_>>(), &sw)
                    })
                    .map(|(i, _)| i % 4)
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                prop_assert_eq!(t.matches(&subject), expected, "subject {:?}", subject);
            }
        }
    }
}
