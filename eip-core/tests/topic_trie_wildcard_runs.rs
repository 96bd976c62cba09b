//! Patterns dense in `#` and `*` against the topic rules written out directly (not through
//! [`TopicPattern::matches`]): a run of wildcards is stored in one canonical order (its stars,
//! then one `#`), and the trie walks `#` nodes on that assumption, so these tests check the
//! trie against an independent reference with many runs like `#.*.#`, `*.#.*` and `#.#`,
//! bindings removed (also under another spelling of the same run) and added again.

use eip_core::topic::{TopicIndex, TopicPattern, TopicTrie, subject_words};
use proptest::prelude::*;

fn p(s: &str) -> TopicPattern {
    TopicPattern::parse(s).unwrap()
}

/// The rules, as directly as possible: `#` takes any number of words, `*` one, a literal
/// itself (exponential; for small inputs only).
fn rules(pattern: &[&str], subject: &[&str]) -> bool {
    match pattern.split_first() {
        None => subject.is_empty(),
        Some((&"#", rest)) => (0..=subject.len()).any(|k| rules(rest, &subject[k..])),
        Some((&"*", rest)) => !subject.is_empty() && rules(rest, &subject[1..]),
        Some((w, rest)) => subject.first() == Some(w) && rules(rest, &subject[1..]),
    }
}

fn matches_by_rules(pattern: &str, subject: &str) -> bool {
    let pw: Vec<&str> = subject_words(pattern).collect();
    let sw: Vec<&str> = subject_words(subject).collect();
    rules(&pw, &sw)
}

#[test]
fn wildcard_runs_in_any_order_match_alike() {
    let spellings = ["#.*", "*.#", "#.*.#", "#.#.*", "*.#.#"];
    let mut t = TopicTrie::new();
    for (i, s) in spellings.iter().enumerate() {
        t.insert(&p(&format!("a.{s}.b")), i);
    }
    assert!(t.matches("a.b").is_empty(), "each run needs one word");
    assert_eq!(t.matches("a.x.b"), [0, 1, 2, 3, 4]);
    assert_eq!(t.matches("a.x.y.z.b"), [0, 1, 2, 3, 4]);
    assert!(t.matches("a.x.y").is_empty());
}

#[test]
fn a_binding_is_removed_under_any_spelling_of_its_run() {
    let mut t = TopicTrie::new();
    t.insert(&p("x.#.*.y"), 1);
    assert!(
        t.remove(&p("x.*.#.y"), &1),
        "the same pattern, written another way"
    );
    assert!(t.is_empty());
    assert!(t.matches("x.q.y").is_empty());
}

#[test]
fn stars_after_a_hash_at_the_start_and_the_end() {
    let patterns = ["#.*", "#.*.*", "*.#.*", "#.*.a", "a.#.*", "#.*.#.*.#"];
    let mut t = TopicTrie::new();
    for (i, s) in patterns.iter().enumerate() {
        t.insert(&p(s), i);
    }
    for subject in ["", "a", "b", "a.b", "b.a", "a.a.a", "x.y.z.a", "."] {
        let want: Vec<usize> = (0..patterns.len())
            .filter(|i| matches_by_rules(patterns[*i], subject))
            .collect();
        assert_eq!(t.matches(subject), want, "subject {subject:?}");
    }
}

/// Mostly wildcards: runs of several `#` and `*` in every order.
fn wild_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        3 => Just("#"),
        3 => Just("*"),
        1 => Just("a"),
        1 => Just("b"),
        1 => Just(""),
    ]
}

fn subject_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("a"), Just("b"), Just(""), Just("c")]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `#`-heavy patterns added, removed and added again in random order: after each step the
    /// trie and the index answer exactly what the rules answer for the patterns bound then.
    #[test]
    fn hash_heavy_bindings_changed_in_any_order_match_by_the_rules(
        patterns in proptest::collection::vec(proptest::collection::vec(wild_word(), 0..7), 1..10),
        ops in proptest::collection::vec((0..10usize, 0..3u8), 1..30),
        subjects in proptest::collection::vec(
            proptest::collection::vec(subject_word(), 0..8), 1..6),
    ) {
        let patterns: Vec<String> = patterns.iter().map(|w| w.join(".")).collect();
        let subjects: Vec<String> = subjects.iter().map(|w| w.join(".")).collect();
        let mut t = TopicTrie::new();
        let index = TopicIndex::with_cache_capacity(64);
        let mut bound = vec![0_usize; patterns.len()];
        for (n, op) in ops {
            let i = n % patterns.len();
            let pattern = p(&patterns[i]);
            if op > 0 {
                t.insert(&pattern, i);
                index.insert(&pattern, i);
                bound[i] += 1;
            } else {
                prop_assert_eq!(t.remove(&pattern, &i), bound[i] > 0);
                prop_assert_eq!(index.remove(&pattern, &i), bound[i] > 0);
                bound[i] = bound[i].saturating_sub(1);
            }
            prop_assert_eq!(t.len(), bound.iter().sum::<usize>());
            for s in &subjects {
                let want: Vec<usize> = (0..patterns.len())
                    .filter(|i| bound[*i] > 0 && matches_by_rules(&patterns[*i], s))
                    .collect();
                prop_assert_eq!(&t.matches(s), &want, "subject {:?}", s);
                prop_assert_eq!(&*index.matches(s), want.as_slice(), "subject {:?}", s);
            }
        }
        for (i, n) in bound.iter().enumerate() {
            for _ in 0..*n {
                prop_assert!(t.remove(&p(&patterns[i]), &i));
            }
        }
        prop_assert!(t.is_empty());
        for s in &subjects {
            prop_assert!(t.matches(s).is_empty());
        }
    }
}
