//! Topic patterns: the pattern matcher, the trie and the topic exchange against a naive matcher
//! written here from RabbitMQ's rules.
//!
//! The input is two lines: patterns separated by `|`, then subjects separated by `|` (so an
//! empty pattern or subject can be written). The rules, as RabbitMQ's topic exchange has them:
//! a subject or pattern is split on `.` into words, the empty string being zero words; `*` takes
//! exactly one word, `#` zero or more, any other word itself. eip adds two refusals of its own:
//! a pattern word mixing a wildcard with other characters (`a*`), and a pattern over 255 bytes;
//! a subject over 255 bytes matches nothing.
//!
//! What must hold, for every pattern and subject: `TopicPattern::parse` refuses exactly what
//! the rules refuse, and `matches` answers what the naive matcher answers; a `TopicTrie`
//! holding every pattern finds exactly the patterns that match, each once (one pattern is
//! stored twice under the same value); a `TopicExchange` with a binding per pattern routes to
//! exactly the targets of the matching bindings, each once, ordered by name. All of it again
//! after every other pattern was removed from the trie and unbound from the exchange.

#![no_main]

use eip_core::channel::{Channel, PointToPoint};
use eip_core::topic::{Binding, BindingId, TopicError, TopicExchange, TopicPattern, TopicTrie};
use libfuzzer_sys::fuzz_target;

/// The longest pattern or subject, in bytes, as in AMQP.
const MAX_LEN: usize = 255;
/// How many patterns and subjects of one input are used.
const MAX_ITEMS: usize = 24;
/// How many channels the bindings share (binding `i` goes to `t{i % TARGETS}`).
const TARGETS: usize = 5;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(2, '\n');
    let patterns: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split('|')
        .take(MAX_ITEMS)
        .collect();
    let subjects: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split('|')
        .take(MAX_ITEMS)
        .collect();
    let mut parsed = Vec::new();
    for (i, source) in patterns.iter().enumerate() {
        if let Some(pattern) = check_parse(source) {
            for subject in &subjects {
                assert_eq!(
                    pattern.matches(subject),
                    naive(source, subject),
                    "pattern `{source}`, subject `{subject}`"
                );
            }
            parsed.push((i, pattern));
        }
    }
    check_collections(&parsed, &subjects);
});

/// Parses `source`, checking that it is refused exactly when the rules refuse it.
fn check_parse(source: &str) -> Option<TopicPattern> {
    let mixed = words(source).any(|w| w != "*" && w != "#" && w.contains(['*', '#']));
    match TopicPattern::parse(source) {
        Ok(pattern) => {
            assert!(
                source.len() <= MAX_LEN,
                "`{source}` over {MAX_LEN} bytes taken"
            );
            assert!(
                !mixed,
                "`{source}` mixes a wildcard into a word, yet was taken"
            );
            assert_eq!(pattern.as_str(), source);
            Some(pattern)
        }
        Err(TopicError::TooLong { len }) => {
            assert_eq!(len, source.len());
            assert!(len > MAX_LEN, "`{source}` refused as too long");
            None
        }
        Err(TopicError::MixedWildcard { word, .. }) => {
            assert!(mixed, "`{source}` refused for word `{word}`");
            assert!(source.len() <= MAX_LEN);
            None
        }
    }
}

/// The words of a subject or pattern: none for the empty string, else the `.`-separated parts.
fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split('.').filter(move |_| !s.is_empty())
}

/// Whether `subject` matches `pattern`, straight from the rules: `at[i][j]` says whether the
/// pattern's words from `i` on match the subject's words from `j` on.
fn naive(pattern: &str, subject: &str) -> bool {
    if subject.len() > MAX_LEN {
        return false;
    }
    let p: Vec<&str> = words(pattern).collect();
    let s: Vec<&str> = words(subject).collect();
    let mut at = vec![vec![false; s.len() + 1]; p.len() + 1];
    at[p.len()][s.len()] = true;
    for i in (0..p.len()).rev() {
        for j in (0..=s.len()).rev() {
            let more = j < s.len();
            at[i][j] = match p[i] {
                "#" => at[i + 1][j] || (more && at[i][j + 1]),
                "*" => more && at[i + 1][j + 1],
                word => more && s[j] == word && at[i + 1][j + 1],
            };
        }
    }
    at[0][0]
}

/// The trie and the exchange against the naive matcher, before and after removing half.
fn check_collections(parsed: &[(usize, TopicPattern)], subjects: &[&str]) {
    let targets: Vec<Channel> = (0..TARGETS)
        .map(|t| PointToPoint::new(&format!("t{t}"), 1).map(Channel::from))
        .collect::<Result<_, _>>()
        .expect("channels with plain names");
    let mut trie = TopicTrie::new();
    let exchange = TopicExchange::new("fuzz");
    let mut bound: Vec<(usize, &TopicPattern, BindingId)> = Vec::new();
    for (i, pattern) in parsed {
        trie.insert(pattern, *i);
        let binding = Binding::with_key(Some(pattern.clone()), [targets[i % TARGETS].clone()])
            .expect("a binding with a target");
        bound.push((*i, pattern, exchange.bind(binding)));
    }
    if let Some((i, pattern)) = parsed.first() {
        trie.insert(pattern, *i); // the same value under the same pattern: still found once
    }
    let live: Vec<(usize, &TopicPattern)> = bound.iter().map(|(i, p, _)| (*i, *p)).collect();
    check_against_naive(&trie, &exchange, &live, subjects);

    let mut kept = Vec::new();
    for (n, (i, pattern, id)) in bound.iter().enumerate() {
        if n % 2 == 1 {
            kept.push((*i, *pattern));
            continue;
        }
        let copies = if n == 0 { 2 } else { 1 };
        for _ in 0..copies {
            assert!(trie.remove(pattern, i), "`{pattern}` ({i}) not removed");
        }
        assert!(
            !trie.remove(pattern, i),
            "`{pattern}` ({i}) removed once too often"
        );
        assert!(exchange.unbind(*id).is_ok(), "binding {id} not unbound");
        assert!(exchange.unbind(*id).is_err(), "binding {id} unbound twice");
    }
    assert_eq!(trie.len(), kept.len());
    assert_eq!(exchange.binding_count(), kept.len());
    check_against_naive(&trie, &exchange, &kept, subjects);
}

fn check_against_naive(
    trie: &TopicTrie<usize>,
    exchange: &TopicExchange,
    live: &[(usize, &TopicPattern)],
    subjects: &[&str],
) {
    for subject in subjects {
        let matching: Vec<usize> = live
            .iter()
            .filter(|(_, p)| naive(p.as_str(), subject))
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(trie.matches(subject), matching, "trie, subject `{subject}`");
        let mut names: Vec<String> = matching
            .iter()
            .map(|i| format!("t{}", i % TARGETS))
            .collect();
        names.sort();
        names.dedup();
        let routed: Vec<String> = exchange
            .route(subject)
            .iter()
            .map(|c| c.name().to_owned())
            .collect();
        assert_eq!(routed, names, "exchange, subject `{subject}`");
    }
}
