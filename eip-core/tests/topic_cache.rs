//! The match cache under concurrent binding changes: a [`TopicIndex`] and a [`TopicExchange`]
//! changed by two writer threads while two reader threads match subjects.
//!
//! The property checked is linearizability of each match against each writer's changes. Every
//! change and every match takes a ticket from one global counter when it starts and another when
//! it ends, so tickets order them as real time does. One writer's changes run one after another,
//! so its bindings go through states 0, 1, 2, …; a match may see state `k` only if change `k`
//! could have taken effect before the match ended (it started before) and change `k + 1` could
//! have taken effect after the match started (it ended after). The values of each writer are
//! its own, so a match's result, restricted to one writer's values, must equal that writer's
//! state `k` for some allowed `k`. Once everything has stopped, every subject must match
//! exactly what a naive scan of the final bindings gives, and by its third match it must be a hit
//! (a subject is stored at its second miss).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use eip_core::channel::{Channel, PointToPoint};
use eip_core::topic::{Binding, BindingId, TopicExchange, TopicIndex, TopicPattern};
use proptest::prelude::*;

const WRITERS: usize = 2;
const READERS: usize = 2;
/// A writer's values are `writer * SPAN + pattern`.
const SPAN: usize = 100;
/// Matches a reader records at most (checking them is the slow part).
const MOST_MATCHES: usize = 4000;
const SUBJECTS: [&str; 8] = ["a", "b", "a.b", "b.a", "a.a.b", "", "c.a", "a.b.c.d"];

/// What the test changes and matches: an index or an exchange.
trait Shared: Sync {
    /// What undoes one bind.
    type Handle: Send;
    fn bind(&self, pattern: &TopicPattern, value: usize) -> Self::Handle;
    fn unbind(&self, pattern: &TopicPattern, value: usize, handle: Self::Handle);
    fn matches(&self, subject: &str) -> BTreeSet<usize>;
    /// Cache hits so far.
    fn hits(&self) -> u64;
}

impl Shared for TopicIndex<usize> {
    type Handle = ();
    fn bind(&self, pattern: &TopicPattern, value: usize) {
        self.insert(pattern, value);
    }
    fn unbind(&self, pattern: &TopicPattern, value: usize, (): ()) {
        assert!(self.remove(pattern, &value), "{pattern} {value} was bound");
    }
    fn matches(&self, subject: &str) -> BTreeSet<usize> {
        TopicIndex::matches(self, subject).iter().copied().collect()
    }
    fn hits(&self) -> u64 {
        self.cache_stats().hits
    }
}

/// Value `n` is the target named `t{n}`.
impl Shared for TopicExchange {
    type Handle = BindingId;
    fn bind(&self, pattern: &TopicPattern, value: usize) -> BindingId {
        let target: Channel = PointToPoint::new(&format!("t{value}"), 1).unwrap().into();
        TopicExchange::bind(
            self,
            Binding::with_key(Some(pattern.clone()), [target]).unwrap(),
        )
    }
    fn unbind(&self, _: &TopicPattern, _: usize, id: BindingId) {
        TopicExchange::unbind(self, id).unwrap();
    }
    fn matches(&self, subject: &str) -> BTreeSet<usize> {
        self.route(subject)
            .iter()
            .map(|c| c.name()[1..].parse().unwrap())
            .collect()
    }
    fn hits(&self) -> u64 {
        self.cache_stats().hits
    }
}

/// One change a writer made: its tickets, and the pattern bound (`add`) or unbound.
struct Change {
    start: u64,
    end: u64,
    pattern: usize,
    add: bool,
}

/// One match a reader made.
struct Seen {
    start: u64,
    end: u64,
    subject: &'static str,
    found: BTreeSet<usize>,
}

/// The values of `writer`'s bindings (`counts[pattern]` copies bound) that match `subject`.
fn expected(
    patterns: &[TopicPattern],
    counts: &[usize],
    writer: usize,
    subject: &str,
) -> BTreeSet<usize> {
    (0..patterns.len())
        .filter(|i| counts[*i] > 0 && patterns[*i].matches(subject))
        .map(|i| writer * SPAN + i)
        .collect()
}

/// Runs the writers' `ops` (pattern, bind?) against `shared` while readers match, and checks
/// the property of the module documentation.
fn check<S: Shared>(
    shared: &S,
    patterns: &[TopicPattern],
    ops: &[Vec<(usize, bool)>],
) -> Result<(), TestCaseError> {
    let clock = AtomicU64::new(0);
    let tick = || clock.fetch_add(1, Ordering::SeqCst);
    let done = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(5);
    let (changes, seen) = std::thread::scope(|scope| {
        let writers: Vec<_> = ops
            .iter()
            .enumerate()
            .map(|(w, ops)| {
                scope.spawn(move || {
                    let mut held: BTreeMap<usize, Vec<S::Handle>> = BTreeMap::new();
                    let mut log = Vec::new();
                    for &(pattern, add) in ops {
                        let value = w * SPAN + pattern;
                        let start = tick();
                        if add {
                            let handle = shared.bind(&patterns[pattern], value);
                            held.entry(pattern).or_default().push(handle);
                        } else if let Some(handle) = held.get_mut(&pattern).and_then(Vec::pop) {
                            shared.unbind(&patterns[pattern], value, handle);
                        } else {
                            continue;
                        }
                        let end = tick();
                        log.push(Change {
                            start,
                            end,
                            pattern,
                            add,
                        });
                        std::thread::yield_now();
                    }
                    log
                })
            })
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (done, tick) = (&done, &tick);
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    let mut n = r;
                    while !done.load(Ordering::SeqCst)
                        && seen.len() < MOST_MATCHES
                        && Instant::now() < deadline
                    {
                        let subject = SUBJECTS[n % SUBJECTS.len()];
                        n += 1;
                        let start = tick();
                        let found = shared.matches(subject);
                        let end = tick();
                        seen.push(Seen {
                            start,
                            end,
                            subject,
                            found,
                        });
                        std::thread::yield_now();
                    }
                    seen
                })
            })
            .collect();
        let changes: Vec<Vec<Change>> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::SeqCst);
        let seen: Vec<Seen> = readers
            .into_iter()
            .flat_map(|r| r.join().unwrap())
            .collect();
        (changes, seen)
    });

    for (w, log) in changes.iter().enumerate() {
        // The writer's states: `states[k]` is the bound counts after its first `k` changes.
        let mut states = vec![vec![0; patterns.len()]];
        for c in log {
            let mut next = states[states.len() - 1].clone();
            if c.add {
                next[c.pattern] += 1;
            } else {
                next[c.pattern] -= 1;
            }
            states.push(next);
        }
        for s in &seen {
            let first = log.iter().filter(|c| c.end < s.start).count();
            let last = log.iter().filter(|c| c.start < s.end).count();
            let mine: BTreeSet<usize> = s.found.iter().copied().filter(|v| v / SPAN == w).collect();
            let allowed: Vec<BTreeSet<usize>> = (first..=last)
                .map(|k| expected(patterns, &states[k], w, s.subject))
                .collect();
            prop_assert!(
                allowed.contains(&mine),
                "writer {w}: {:?} matched {:?}, but between its start and end only {:?} existed (states {first}..={last})",
                s.subject,
                mine,
                allowed
            );
        }
    }

    // Quiescence: every match is the scan of the final bindings, and the third one a hit (a
    // subject is stored at its second miss at the latest).
    for subject in SUBJECTS {
        let mut want = BTreeSet::new();
        for (w, log) in changes.iter().enumerate() {
            let mut counts = vec![0; patterns.len()];
            for c in log {
                if c.add {
                    counts[c.pattern] += 1;
                } else {
                    counts[c.pattern] -= 1;
                }
            }
            want.extend(expected(patterns, &counts, w, subject));
        }
        prop_assert_eq!(&shared.matches(subject), &want, "{:?} at rest", subject);
        prop_assert_eq!(&shared.matches(subject), &want, "{:?} at rest", subject);
        let hits = shared.hits();
        prop_assert_eq!(&shared.matches(subject), &want);
        prop_assert_eq!(
            shared.hits(),
            hits + 1,
            "{:?}: the third match is a hit",
            subject
        );
    }
    Ok(())
}

fn patterns() -> impl Strategy<Value = Vec<TopicPattern>> {
    let word = prop_oneof![Just("a"), Just("b"), Just("*"), Just("#")];
    proptest::collection::vec(proptest::collection::vec(word, 0..4), 1..10).prop_map(|ps| {
        ps.iter()
            .map(|w| TopicPattern::parse(&w.join(".")).unwrap())
            .collect()
    })
}

fn ops() -> impl Strategy<Value = Vec<Vec<(usize, bool)>>> {
    proptest::collection::vec(
        proptest::collection::vec((0..10usize, any::<bool>()), 1..60),
        WRITERS,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn an_index_matches_as_one_state_of_each_writer(patterns in patterns(), ops in ops()) {
        let ops: Vec<Vec<(usize, bool)>> = ops
            .into_iter()
            .map(|o| o.into_iter().map(|(p, add)| (p % patterns.len(), add)).collect())
            .collect();
        // A small cache, so entries are also evicted while the writers run.
        check(&TopicIndex::with_cache_capacity(16), &patterns, &ops)?;
    }

    #[test]
    fn an_exchange_routes_as_one_state_of_each_writer(patterns in patterns(), ops in ops()) {
        let ops: Vec<Vec<(usize, bool)>> = ops
            .into_iter()
            .map(|o| o.into_iter().map(|(p, add)| (p % patterns.len(), add)).collect())
            .collect();
        check(&TopicExchange::new("x"), &patterns, &ops)?;
    }
}
