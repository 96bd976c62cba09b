//! The topic exchange against RabbitMQ's rules written out: a hundred thousand bindings
//! against a scan of their patterns, and random bindings (some unbound again) against a direct
//! reading of the rules. The behaviour case by case is in `topic_exchange.rs`.

use std::collections::BTreeSet;

use eip_core::channel::Channel;
use eip_core::topic::{Binding, BindingChanges, TopicExchange, TopicPattern, subject_words};
use proptest::prelude::*;

mod topic_support;
use topic_support::{channel, names_of};

/// A deterministic generator, so the large test is the same every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn a_hundred_thousand_bindings_route_like_a_scan() {
    const WORDS: [&str; 12] = [
        "stock", "bond", "nyse", "lse", "ibm", "vod", "buy", "sell", "eu", "us", "q1", "q2",
    ];
    let targets: Vec<Channel> = (0..100).map(|i| channel(&format!("t{i:02}"))).collect();
    let mut rng = Lcg(7);
    let mut patterns = Vec::new();
    let mut changes = BindingChanges::new();
    for i in 0..100_000 {
        let len = 3 + rng.next(3);
        let mut words: Vec<&str> = (0..len).map(|_| WORDS[rng.next(WORDS.len())]).collect();
        if i % 10 == 0 {
            words[rng.next(len)] = "*";
        }
        if i % 100 == 0 {
            words[rng.next(len)] = "#";
        }
        let pattern = TopicPattern::parse(&words.join(".")).unwrap();
        let target = rng.next(targets.len());
        changes = changes
            .bind(Binding::with_key(Some(pattern.clone()), [targets[target].clone()]).unwrap());
        patterns.push((pattern, target));
    }
    let x = TopicExchange::new("big");
    assert_eq!(x.update(changes).unwrap().len(), 100_000);
    for _ in 0..200 {
        let len = 1 + rng.next(5);
        let subject: Vec<&str> = (0..len).map(|_| WORDS[rng.next(WORDS.len())]).collect();
        let subject = subject.join(".");
        let words: Vec<&str> = subject_words(&subject).collect();
        let expected: BTreeSet<String> = patterns
            .iter()
            .filter(|(p, _)| p.matches_words(&words))
            .map(|(_, t)| targets[*t].name().to_owned())
            .collect();
        let got: BTreeSet<String> = names_of(&x, &subject).into_iter().collect();
        assert_eq!(got, expected, "{subject}");
    }
}

/// The rules, written as directly as possible (exponential, for small inputs only).
fn reference(pattern: &[&str], subject: &[&str]) -> bool {
    match pattern.split_first() {
        None => subject.is_empty(),
        Some((&"#", rest)) => (0..=subject.len()).any(|k| reference(rest, &subject[k..])),
        Some((&"*", rest)) => !subject.is_empty() && reference(rest, &subject[1..]),
        Some((w, rest)) => subject.first() == Some(w) && reference(rest, &subject[1..]),
    }
}

fn pattern_words() -> impl Strategy<Value = Option<Vec<&'static str>>> {
    let word = prop_oneof![Just("a"), Just("b"), Just(""), Just("*"), Just("#")];
    prop_oneof![
        1 => Just(None),
        9 => proptest::collection::vec(word, 0..5).prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random bindings (some keyless, some repeated, several targets each), some of them then
    /// unbound; every subject goes to exactly the targets the rules say, each once.
    #[test]
    fn the_exchange_routes_by_the_rules(
        bindings in proptest::collection::vec(
            (pattern_words(), proptest::collection::vec(0..4usize, 1..3), any::<bool>()),
            0..14,
        ),
        subjects in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("")], 0..6),
            1..10,
        ),
    ) {
        let targets: Vec<Channel> = (0..4).map(|i| channel(&format!("t{i}"))).collect();
        let x = TopicExchange::new("x");
        let mut kept = Vec::new();
        for (key, to, keep) in &bindings {
            let key = key.as_ref().map(|w| w.join("."));
            let pattern = key.as_deref().map(|k| TopicPattern::parse(k).unwrap());
            let id = x.bind(
                Binding::with_key(pattern, to.iter().map(|t| targets[*t].clone())).unwrap(),
            );
            if *keep {
                kept.push((key, to));
            } else {
                x.unbind(id).unwrap();
            }
        }
        for s in subjects {
            let subject = s.join(".");
            let sw: Vec<&str> = subject_words(&subject).collect();
            let expected: BTreeSet<String> = kept
                .iter()
                .filter(|(key, _)| match key {
                    None => true,
                    Some(k) => reference(&subject_words(k).collect::<Vec<_>>(), &sw),
                })
                .flat_map(|(_, to)| to.iter().map(|t| format!("t{t}")))
                .collect();
            let got = names_of(&x, &subject);
            let got_set: BTreeSet<String> = got.iter().cloned().collect();
            prop_assert_eq!(got.len(), got_set.len(), "a target twice: {:?}", got);
            prop_assert_eq!(got_set, expected, "subject {:?}", subject);
        }
    }
}
