//! Topic patterns: matching a dotted subject against `*` and `#` wildcards, as RabbitMQ's topic
//! exchange does.
//!
//! A subject (and a pattern) is split on `.` into words. In a pattern, `*` matches exactly one
//! word and `#` matches zero or more words; any other word matches itself. The edge cases follow
//! RabbitMQ: the empty string is zero words (so it matches `#` and the empty pattern, but not
//! `*`); `a..b` is three words, the middle one empty; a trailing dot adds an empty word. A
//! pattern word that mixes a wildcard with other characters (`a*`, `#b`) is refused rather than
//! taken literally, since it is almost always a mistake. Subjects and patterns are at most 255
//! bytes, the AMQP limit for a routing key.
//!
//! The same matcher serves the [`MessageBus`](crate::bus::MessageBus)'s wildcard subscriptions
//! and the [`TopicExchange`], which routes messages to channels through [`Binding`]s. Many
//! patterns are matched at once by a [`TopicTrie`], in time that depends on the subject and the
//! patterns that can match it, not on how many patterns there are. A [`TopicIndex`] shares a
//! trie between threads that change it and threads that match, and answers repeated subjects
//! from a [`MatchCache`] that binding changes invalidate through a generation counter.

mod cache;
mod exchange;
mod hash;
mod index;
mod trie;

use std::fmt;

pub use cache::{CacheStats, MatchCache};
pub use exchange::{
    Binding, BindingChanges, BindingId, ExchangeError, ExchangeStats, PublishError, Route, Routed,
    TopicExchange,
};
pub use index::{DEFAULT_CACHE_CAPACITY, TopicIndex};
pub use trie::TopicTrie;

/// The longest subject or pattern, in bytes (AMQP's shortstr limit for a routing key).
pub const MAX_TOPIC_LEN: usize = 255;

/// A pattern that can not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// A word mixes `*` or `#` with other characters.
    #[error(
        "invalid topic pattern `{pattern}`: word {word_index} (`{word}`) mixes a wildcard with other characters; use `*` or `#` as a whole word"
    )]
    MixedWildcard {
        /// The pattern.
        pattern: String,
        /// The offending word.
        word: String,
        /// Its position, counting from 1.
        word_index: usize,
    },
    /// Longer than [`MAX_TOPIC_LEN`].
    #[error("topic pattern is {len} bytes long; at most {MAX_TOPIC_LEN} are allowed")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    Literal(Box<str>),
    /// `*`: exactly one word.
    One,
    /// `#`: zero or more words.
    Any,
}

/// The wildcards between two literal words of a pattern, kept in one canonical order.
///
/// A run of `*` and `#` words with at least one `#` matches any number of words from the number
/// of its stars up, whatever the order: `#.*`, `*.#` and `#.*.#` all mean "one word or more".
/// So a run is stored as its stars followed by one `#` (or just its stars). That keeps matching
/// linear (no `#.#`), and it means a `#` is never directly followed by another wildcard, which
/// the trie relies on: after a `#` only a literal word or the end of the pattern can come.
#[derive(Default)]
struct WildcardRun {
    stars: usize,
    hash: bool,
}

impl WildcardRun {
    fn flush(&mut self, words: &mut Vec<Word>) {
        words.extend(std::iter::repeat_n(Word::One, self.stars));
        if self.hash {
            words.push(Word::Any);
        }
        *self = WildcardRun::default();
    }
}

/// A parsed topic pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct TopicPattern {
    source: Box<str>,
    words: Box<[Word]>,
}

/// The words of a subject: none for the empty string, else the `.`-separated parts.
pub fn subject_words(subject: &str) -> impl Iterator<Item = &str> + Clone {
    let mut words = subject.split('.');
    if subject.is_empty() {
        words.next();
    }
    words
}

impl TopicPattern {
    /// Parses a pattern.
    pub fn parse(pattern: &str) -> Result<Self, TopicError> {
        if pattern.len() > MAX_TOPIC_LEN {
            return Err(TopicError::TooLong { len: pattern.len() });
        }
        let mut words: Vec<Word> = Vec::new();
        let mut run = WildcardRun::default();
        for (i, w) in subject_words(pattern).enumerate() {
            match w {
                "*" => run.stars += 1,
                "#" => run.hash = true,
                w if w.contains(['*', '#']) => {
                    return Err(TopicError::MixedWildcard {
                        pattern: pattern.to_owned(),
                        word: w.to_owned(),
                        word_index: i + 1,
                    });
                }
                w => {
                    run.flush(&mut words);
                    words.push(Word::Literal(w.into()));
                }
            }
        }
        run.flush(&mut words);
        Ok(TopicPattern {
            source: pattern.into(),
            words: words.into(),
        })
    }

    /// `#`: every subject.
    fn match_all() -> Self {
        TopicPattern {
            source: "#".into(),
            words: [Word::Any].into(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern has no wildcard (it matches one subject only).
    pub fn is_literal(&self) -> bool {
        self.words.iter().all(|w| matches!(w, Word::Literal(_)))
    }

    /// Whether `subject` matches. Subjects over [`MAX_TOPIC_LEN`] bytes match nothing.
    pub fn matches(&self, subject: &str) -> bool {
        if subject.len() > MAX_TOPIC_LEN {
            return false;
        }
        let subject: Vec<&str> = subject_words(subject).collect();
        self.matches_words(&subject)
    }

    /// Whether the subject, already split into words, matches.
    ///
    /// Wildcard matching with backtracking to the last `#` only: `*` is a single-word wildcard
    /// and `#` a multi-word one, so the classic greedy glob algorithm is exact, and with runs of
    /// wildcards put in canonical order at parse time (stars first, then at most one `#`) it takes
    /// O(pattern × subject) steps at worst.
    pub fn matches_words(&self, subject: &[&str]) -> bool {
        let p = &self.words;
        let (mut pi, mut si) = (0, 0);
        let mut resume: Option<(usize, usize)> = None;
        while si < subject.len() {
            match p.get(pi) {
                Some(Word::Any) => {
                    resume = Some((pi, si));
                    pi += 1;
                    continue;
                }
                Some(Word::One) => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                Some(Word::Literal(w)) if **w == *subject[si] => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
            match resume {
                Some((hash, start)) => {
                    pi = hash + 1;
                    si = start + 1;
                    resume = Some((hash, start + 1));
                }
                None => return false,
            }
        }
        p[pi..].iter().all(|w| *w == Word::Any)
    }
}

impl fmt::Debug for TopicPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicPattern({:?})", self.source)
    }
}

impl fmt::Display for TopicPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for TopicPattern {
    type Err = TopicError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TopicPattern::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(p: &str, s: &str) -> bool {
        TopicPattern::parse(p).unwrap().matches(s)
    }

    #[test]
    fn star_matches_exactly_one_word() {
        assert!(m("stock.*.nyse", "stock.ibm.nyse"));
        assert!(!m("stock.*.nyse", "stock.nyse"));
        assert!(!m("stock.*.nyse", "stock.a.b.nyse"));
        assert!(m("*", "a"));
        assert!(!m("*", "a.b"));
    }

    #[test]
    fn hash_matches_zero_or_more_words() {
        assert!(m("stock.#", "stock"));
        assert!(m("stock.#", "stock.ibm.nyse"));
        assert!(m("#.nyse", "nyse"));
        assert!(m("a.#.b", "a.b"));
        assert!(m("a.#.b", "a.x.y.b"));
        assert!(!m("a.#.b", "a.x.y.c"));
        assert!(m("#", "anything.at.all"));
    }

    #[test]
    fn empty_subject_is_zero_words() {
        assert!(m("#", ""));
        assert!(m("", ""));
        assert!(!m("*", ""));
        assert!(!m("", "a"));
    }

    #[test]
    fn empty_words_are_words() {
        assert!(m("a.*.b", "a..b"));
        assert!(m("a..b", "a..b"));
        assert!(!m("a.b", "a..b"));
        assert!(m("a.*", "a."));
        assert!(!m("a", "a."));
        assert!(m("*.*", "."));
    }

    #[test]
    fn mixed_wildcards_are_refused_with_their_position() {
        let err = TopicPattern::parse("stock.a*.nyse").unwrap_err();
        assert_eq!(
            err,
            TopicError::MixedWildcard {
                pattern: "stock.a*.nyse".into(),
                word: "a*".into(),
                word_index: 2
            }
        );
        assert!(TopicPattern::parse(&"a".repeat(256)).is_err());
        assert!(!m("#", &"a".repeat(256)));
    }

    #[test]
    fn a_run_of_wildcards_is_kept_as_its_stars_then_one_hash() {
        let words = |s: &str| TopicPattern::parse(s).unwrap().words;
        assert_eq!(words("#.*"), words("*.#"));
        assert_eq!(words("#.*.#.*.#.a.#.#"), words("*.*.#.a.#"));
        assert_eq!(
            &*words("a.#.*.b"),
            [
                Word::Literal("a".into()),
                Word::One,
                Word::Any,
                Word::Literal("b".into())
            ]
        );
        assert_eq!(TopicPattern::parse("#.*").unwrap().as_str(), "#.*");
        assert!(m("#.*", "a") && m("#.*", "a.b") && !m("#.*", ""));
    }

    #[test]
    fn many_hashes_stay_cheap() {
        let subject = vec!["x"; 30].join(".");
        assert!(!m("#.#.#.#.#.#.#.#.a", &subject));
        assert!(m("#.*.#.*.#.x", &subject));
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

    proptest! {
        #[test]
        fn matcher_agrees_with_the_rules(
            p in proptest::collection::vec(prop_oneof!["a", "b", "", "\\*", "#"], 0..7),
            s in proptest::collection::vec(prop_oneof!["a", "b", ""], 0..7),
        ) {
            let pattern = p.join(".");
            let subject = s.join(".");
            let pw: Vec<&str> = subject_words(&pattern).collect();
            let sw: Vec<&str> = subject_words(&subject).collect();
            prop_assert_eq!(
                TopicPattern::parse(&pattern).unwrap().matches(&subject),
                reference(&pw, &sw),
                "pattern {:?} subject {:?}", pattern, subject
            );
        }
    }
}
