//! The topic trie's edge cases, each against the single-pattern matcher (itself checked against
//! RabbitMQ): subject words no pattern uses, `#` at the start, middle and end, `#.#`, empty
//! words, bindings removed and added again, many targets for one subject, long subjects, the
//! cached index in front of the same trie, and what the walk yields before deduplication.

use std::collections::BTreeSet;

use eip_core::topic::{TopicIndex, TopicPattern, TopicTrie, subject_words};
use proptest::prelude::*;

fn p(s: &str) -> TopicPattern {
    TopicPattern::parse(s).unwrap()
}

/// A trie with value `i` under `patterns[i]`.
fn trie(patterns: &[&str]) -> TopicTrie<usize> {
    let mut t = TopicTrie::new();
    for (i, s) in patterns.iter().enumerate() {
        t.insert(&p(s), i);
    }
    t
}

/// The values of the patterns that match `subject`, by testing each pattern on its own.
fn scan(patterns: &[&str], subject: &str) -> Vec<usize> {
    (0..patterns.len())
        .filter(|i| p(patterns[*i]).matches(subject))
        .collect()
}

fn assert_like_scan(patterns: &[&str], subjects: &[&str]) {
    let t = trie(patterns);
    for s in subjects {
        assert_eq!(t.matches(s), scan(patterns, s), "subject {s:?}");
    }
}

#[test]
fn subject_words_no_pattern_uses_take_only_wildcards() {
    let patterns = ["a.b", "*.b", "a.*", "#", "#.zz", "unused.#"];
    assert_like_scan(
        &patterns,
        &[
            "a.b", "x.b", "a.x", "x.y", "zz", "q.zz", "a.b.zz", "unknown",
        ],
    );
    let t = trie(&patterns);
    assert_eq!(t.matches("never.seen.words"), [3]);
}

#[test]
fn hash_at_the_start_middle_and_end_takes_zero_or_more_words() {
    let patterns = ["#.c", "a.#.c", "a.#", "#.b.#", "a.#.b.#.c"];
    assert_like_scan(
        &patterns,
        &[
            "c",
            "a.c",
            "a.b.c",
            "a.x.y.c",
            "a",
            "a.b",
            "b",
            "x.b.y",
            "a.b.c.b.c",
            "c.a",
            "",
        ],
    );
}

#[test]
fn hash_hash_is_hash() {
    let t = trie(&["#.#", "a.#.#.b", "#.#.#.c"]);
    let same = trie(&["#", "a.#.b", "#.c"]);
    for s in ["", "a", "a.b", "a.x.b", "c", "x.y.c", "a.b.c"] {
        assert_eq!(t.matches(s), same.matches(s), "subject {s:?}");
    }
    let mut t = t;
    assert!(t.remove(&p("#"), &0), "`#.#` was stored as `#`");
}

#[test]
fn empty_words_are_words_in_patterns_and_subjects() {
    let patterns = ["", "a.", ".a", "a..b", "*.*", "#.", "..", "*"];
    assert_like_scan(
        &patterns,
        &["", ".", "a.", ".a", "a..b", "a.b", "..", "...", "a"],
    );
}

#[test]
fn bindings_removed_then_added_again_match_again() {
    let mut t = TopicTrie::new();
    let patterns = ["stock.*.nyse", "stock.#", "#.nyse", "stock.ibm.nyse"];
    for round in 0..3 {
        for (i, s) in patterns.iter().enumerate() {
            t.insert(&p(s), i);
        }
        assert_eq!(t.matches("stock.ibm.nyse"), [0, 1, 2, 3], "round {round}");
        for (i, s) in patterns.iter().enumerate() {
            assert!(t.remove(&p(s), &i));
        }
        assert!(t.is_empty());
        assert!(t.matches("stock.ibm.nyse").is_empty(), "round {round}");
    }
    // A word freed with its last pattern and numbered again later still matches.
    t.insert(&p("x.y"), 9);
    assert!(t.remove(&p("x.y"), &9));
    t.insert(&p("y.x"), 8);
    assert_eq!(t.matches("y.x"), [8]);
    assert!(t.matches("x.y").is_empty());
}

#[test]
fn many_targets_for_one_subject_come_once_each_in_order() {
    // 400 bindings all matching `a.b.c`, to 150 targets, most of them several times.
    let shapes = [
        "a.b.c", "*.b.c", "a.*.c", "a.b.*", "#", "a.#", "#.c", "*.*.*",
    ];
    let mut t = TopicTrie::new();
    let mut want = BTreeSet::new();
    for i in 0..400 {
        let target = (i * 37) % 150;
        t.insert(&p(shapes[i % shapes.len()]), target);
        want.insert(target);
    }
    let want: Vec<usize> = want.into_iter().collect();
    assert_eq!(t.matches("a.b.c"), want);
    let mut calls = 0;
    t.for_each_match("a.b.c", |_| calls += 1);
    assert_eq!(calls, 400, "for_each_match yields every stored entry");
}

#[test]
fn subjects_of_more_words_than_fit_on_the_stack_match_too() {
    let long = vec!["w"; 100].join(".");
    let longer = format!("{long}.end");
    let patterns = ["#.end", "w.#", "#.w.#", "*.#.end", "w.w.#.w.end"];
    assert_like_scan(&patterns, &[&long, &longer]);
    let words: Vec<&str> = subject_words(&longer).collect();
    let mut found = BTreeSet::new();
    trie(&patterns).for_each_match_words(&words, |v| {
        found.insert(*v);
    });
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        scan(&patterns, &longer)
    );
}

#[test]
fn the_index_answers_like_the_trie_before_and_after_it_caches() {
    let patterns = ["a.*", "#.b", "a.#", "c"];
    let index = TopicIndex::new();
    for (i, s) in patterns.iter().enumerate() {
        index.insert(&p(s), i);
    }
    let t = trie(&patterns);
    let mut found = Vec::new();
    for _ in 0..4 {
        for s in ["a.b", "a", "x.b", "c", "d"] {
            index.matches_into(s, &mut found);
            assert_eq!(found, t.matches(s), "subject {s:?}");
            assert_eq!(&*index.matches(s), t.matches(s).as_slice());
        }
    }
    assert!(index.cache_stats().hits > 0);
}

fn word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("a"),
        Just("b"),
        Just(""),
        Just("long-word-over-sixteen-bytes"),
        Just("*"),
        Just("#")
    ]
}

fn subject_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("a"),
        Just("b"),
        Just(""),
        Just("long-word-over-sixteen-bytes"),
        Just("long-word-over-sixteen-byteZ"),
        Just("c")
    ]
}

proptest! {
    /// Patterns added, removed and added again in random order: after each step the trie and
    /// the index answer what a scan of the patterns bound at that moment answers.
    #[test]
    fn changes_in_any_order_keep_the_trie_and_index_like_a_scan(
        patterns in proptest::collection::vec(proptest::collection::vec(word(), 0..5), 1..8),
        ops in proptest::collection::vec((0..8usize, any::<bool>()), 0..24),
        subjects in proptest::collection::vec(
            proptest::collection::vec(subject_word(), 0..6), 1..6),
    ) {
        let patterns: Vec<String> = patterns.iter().map(|w| w.join(".")).collect();
        let subjects: Vec<String> = subjects.iter().map(|w| w.join(".")).collect();
        let mut t = TopicTrie::new();
        let index = TopicIndex::with_cache_capacity(64);
        let mut bound = vec![0_usize; patterns.len()];
        for (n, add) in ops {
            let i = n % patterns.len();
            let pattern = p(&patterns[i]);
            if add {
                t.insert(&pattern, i);
                index.insert(&pattern, i);
                bound[i] += 1;
            } else {
                prop_assert_eq!(t.remove(&pattern, &i), bound[i] > 0);
                prop_assert_eq!(index.remove(&pattern, &i), bound[i] > 0);
                bound[i] = bound[i].saturating_sub(1);
            }
            for s in &subjects {
                let want: Vec<usize> = (0..patterns.len())
                    .filter(|i| bound[*i] > 0 && p(&patterns[*i]).matches(s))
                    .collect();
                prop_assert_eq!(&t.matches(s), &want, "subject {:?}", s);
                prop_assert_eq!(&*index.matches(s), want.as_slice(), "subject {:?}", s);
            }
        }
    }

    /// `for_each_match` (the walk itself, before any sorting or deduplicating) yields each
    /// value once per bound copy of a matching pattern, however the walk orders its branches:
    /// the same multiset as a scan, after random adds and removes.
    #[test]
    fn the_walk_yields_each_bound_copy_of_a_matching_pattern_once(
        patterns in proptest::collection::vec(proptest::collection::vec(word(), 0..6), 1..10),
        ops in proptest::collection::vec((0..10usize, any::<bool>()), 0..30),
        subjects in proptest::collection::vec(
            proptest::collection::vec(subject_word(), 0..8), 1..6),
    ) {
        let patterns: Vec<String> = patterns.iter().map(|w| w.join(".")).collect();
        let mut t = TopicTrie::new();
        let mut bound = vec![0_usize; patterns.len()];
        for (n, add) in ops {
            let i = n % patterns.len();
            if add {
                t.insert(&p(&patterns[i]), i);
                bound[i] += 1;
            } else if t.remove(&p(&patterns[i]), &i) {
                bound[i] -= 1;
            }
        }
        for s in subjects.iter().map(|w| w.join(".")) {
            let mut want: Vec<usize> = (0..patterns.len())
                .filter(|i| p(&patterns[*i]).matches(&s))
                .flat_map(|i| std::iter::repeat_n(i, bound[i]))
                .collect();
            let mut got = Vec::new();
            t.for_each_match(&s, |v| got.push(*v));
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want, "subject {:?}", s);
        }
    }
}
