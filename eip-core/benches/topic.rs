//! Topic matching with 1k, 10k and 100k bindings: eip's trie against a naive scan, measured in
//! the same run.
//!
//! The bindings follow the mix of RabbitMQ's published topic exchange tests: keys of 3 to 5
//! words from a market-data vocabulary (asset class, venue, symbol, event, detail), 10% of them
//! with a `*` and 1% with a `#` in place of one word, each bound to one of 1000 targets.
//! Subjects are 3 to 5 words: half are made from a random binding's key (wildcards filled in),
//! so they match at least one binding, and half are random, so most match only wildcards.
//!
//! Both sides answer the same question, the set of targets a subject goes to, deduplicated and
//! sorted, into a buffer reused from one subject to the next: eip with
//! [`TopicTrie::matches_into`]; the baseline by splitting the subject (into a reused buffer
//! too) and testing every pattern with [`TopicPattern::matches_words`]. A check pass asserts that they agree on
//! every subject (a sample of 200 at 100k bindings) before anything is timed. Everything runs on one thread (one core).
//!
//! After each size it prints
//! `compare: topic N: eip X ns/msg, baseline Y ns/msg (naive scan), ratio R` (R = X / Y, the
//! medians of alternating rounds, as in `channels.rs`; each round starts with an untimed pass
//! over its subjects), then eip's subjects per second. This is the trie alone, no cache, as a
//! topic exchange uses it: a `TopicTrie<u32>` of target slots, matched with `matches_into`
//! (the exchange calls `matches`, the same search and sort into a new buffer, when its cache
//! misses).
//!
//! At 100k bindings two more lines measure a [`TopicIndex`] (the trie shared between threads,
//! with its match cache of 4096 entries), matching into a reused buffer with
//! [`TopicIndex::matches_into`], against the trie without cache, on two streams:
//! - `topic 100k unique subjects`: 65536 distinct subjects, made as above, cycled in order, so
//!   a subject comes back only after 65535 others and is never in the cache (the hit rate is
//!   printed to show it): what the cache costs when it can not help;
//! - `topic 100k 80% repeated`: 65536 subjects of which each is, with probability 0.8, one of
//!   1000 "hot" subjects drawn uniformly, and otherwise a subject that occurs nowhere else in
//!   the stream: a realistic mix where most traffic goes to a working set that fits the cache.
//!
//! and the last line runs the repeated stream on two threads at once, sharing the index, for
//! the contention between readers (subjects/s over both threads together).
//!
//! For instruction counts, `EIP_TOPIC_PROFILE=N` makes the bench build only the 100k workload
//! and match `N` subjects (cycling through the 4096) with the trie in [`profile_matches`], then
//! stop: run it under `valgrind --tool=callgrind --toggle-collect=*profile_matches*` and divide
//! the count by `N`. It also prints the CPU time and wall time per subject of that loop. With
//! `EIP_TOPIC_SUBSET=K` as well, that loop cycles through the first `K` subjects only: with a
//! few dozen, everything it reads stays in the nearest caches and the branches repeat, which
//! shows how much of a subject's time goes to waiting for memory and to mispredictions.

use std::hint::black_box;
use std::time::{Duration, Instant};

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::topic::{TopicIndex, TopicPattern, TopicTrie, subject_words};
use support::{alternating_medians, measuring, print_compare};

const SIZES: [(usize, &str); 3] = [(1_000, "1k"), (10_000, "10k"), (100_000, "100k")];
const TARGETS: usize = 1000;
const SUBJECTS: usize = 4096;
/// Rounds of the alternating measurement behind each compare line.
const ROUNDS: usize = 9;
/// Subjects eip matches per round.
const EIP_ROUND: usize = 50_000;
/// Pattern tests the baseline makes per round (its subjects are this divided by the bindings):
/// at 100k bindings a scan takes milliseconds, so it gets few subjects.
const BASELINE_ROUND_TESTS: usize = 2_000_000;
/// Pattern tests the check pass may make (at least 200 subjects are checked).
const CHECK_TESTS: usize = 50_000_000;
/// Subjects in each stream of the cache lines.
const STREAM: usize = 65_536;
/// Distinct subjects that make up 80% of the repeated stream.
const HOT: usize = 1000;
/// Entries the index caches.
const CACHE: usize = 4096;

/// A small deterministic generator, so every run measures the same workload.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Words for each position of a key or subject.
struct Vocabulary {
    levels: Vec<Vec<String>>,
}

impl Vocabulary {
    fn new(rng: &mut Rng) -> Self {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let symbols = (0..1000)
            .map(|_| {
                (0..3 + rng.below(2))
                    .map(|_| char::from(b'a' + rng.below(26) as u8))
                    .collect()
            })
            .collect();
        let levels = vec![
            words(&[
                "stock",
                "bond",
                "fx",
                "option",
                "future",
                "crypto",
                "commodity",
                "index",
                "etf",
                "swap",
            ]),
            words(&[
                "nyse", "nasdaq", "lse", "tse", "hkex", "euronext", "xetra", "cme", "ice", "asx",
                "sgx", "bats", "arca", "six", "jpx", "krx", "bse", "nse", "tsx", "b3",
            ]),
            symbols,
            words(&[
                "trade", "quote", "order", "cancel", "fill", "halt", "open", "close",
            ]),
            words(&["buy", "sell", "bid", "ask", "l1", "l2"]),
        ];
        Vocabulary { levels }
    }

    fn word(&self, level: usize, rng: &mut Rng) -> &str {
        let list = &self.levels[level];
        &list[rng.below(list.len())]
    }
}

/// What a side reuses from one subject to the next.
#[derive(Default)]
struct Buffers<'s> {
    targets: Vec<u32>,
    words: Vec<&'s str>,
}

struct Workload {
    /// Each binding's key and target, for the naive scan.
    bindings: Vec<(TopicPattern, u32)>,
    trie: TopicTrie<u32>,
    subjects: Vec<String>,
    /// The same bindings with the cache in front, and its two streams (at 100k only).
    cached: Option<Cached>,
}

struct Cached {
    index: TopicIndex<u32>,
    unique: Vec<String>,
    repeated: Vec<String>,
}

/// A subject like those of the bench: even `i` from a random key (wildcards filled in), odd
/// `i` random words.
fn subject(keys: &[Vec<String>], vocabulary: &Vocabulary, rng: &mut Rng, i: usize) -> String {
    if i.is_multiple_of(2) {
        let key = &keys[rng.below(keys.len())];
        key.iter()
            .enumerate()
            .map(|(level, w)| match w.as_str() {
                "*" | "#" => vocabulary.word(level, rng).to_owned(),
                w => w.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(".")
    } else {
        (0..3 + rng.below(3))
            .map(|level| vocabulary.word(level, rng))
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl Cached {
    fn new(
        bindings: &[(TopicPattern, u32)],
        keys: &[Vec<String>],
        vocabulary: &Vocabulary,
        rng: &mut Rng,
    ) -> Self {
        let index = TopicIndex::with_cache_capacity(CACHE);
        for (pattern, target) in bindings {
            index.insert(pattern, *target);
        }
        let mut taken = std::collections::HashSet::new();
        let mut fresh = |rng: &mut Rng| loop {
            let kind = rng.below(2);
            let s = subject(keys, vocabulary, rng, kind);
            if taken.insert(s.clone()) {
                return s;
            }
        };
        let unique = (0..STREAM).map(|_| fresh(rng)).collect();
        let hot: Vec<String> = (0..HOT).map(|_| fresh(rng)).collect();
        let repeated = (0..STREAM)
            .map(|_| match rng.below(10) < 8 {
                true => hot[rng.below(HOT)].clone(),
                false => fresh(rng),
            })
            .collect();
        Cached {
            index,
            unique,
            repeated,
        }
    }
}

impl Workload {
    fn new(size: usize) -> Self {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ size as u64);
        let vocabulary = Vocabulary::new(&mut rng);
        let mut keys: Vec<Vec<String>> = Vec::with_capacity(size);
        let mut bindings = Vec::with_capacity(size);
        let mut trie = TopicTrie::new();
        for i in 0..size {
            let len = 3 + rng.below(3);
            let mut key: Vec<String> = (0..len)
                .map(|level| vocabulary.word(level, &mut rng).to_owned())
                .collect();
            if i % 10 == 0 {
                key[rng.below(len)] = "*".into();
            }
            if i % 100 == 0 {
                key[rng.below(len)] = "#".into();
            }
            let pattern = TopicPattern::parse(&key.join(".")).expect("a valid pattern");
            let target = rng.below(TARGETS) as u32;
            trie.insert(&pattern, target);
            bindings.push((pattern, target));
            keys.push(key);
        }
        let subjects = (0..SUBJECTS)
            .map(|i| subject(&keys, &vocabulary, &mut rng, i))
            .collect();
        let cached =
            (size == 100_000).then(|| Cached::new(&bindings, &keys, &vocabulary, &mut rng));
        Workload {
            bindings,
            trie,
            subjects,
            cached,
        }
    }

    /// Matches through the index (and its cache), into the reused buffer as the trie does.
    fn cached(&self, subject: &str, found: &mut Buffers) {
        if let Some(cached) = &self.cached {
            cached.index.matches_into(subject, &mut found.targets);
        }
    }

    fn eip(&self, subject: &str, found: &mut Buffers) {
        self.trie.matches_into(subject, &mut found.targets);
    }

    fn naive<'s>(&self, subject: &'s str, found: &mut Buffers<'s>) {
        found.words.clear();
        found.words.extend(subject_words(subject));
        found.targets.clear();
        for (pattern, target) in &self.bindings {
            if pattern.matches_words(&found.words) {
                found.targets.push(*target);
            }
        }
        found.targets.sort_unstable();
        found.targets.dedup();
    }

    /// Matches `count` of `subjects` (cycling through them from `start`) with `f`; time per
    /// subject. The same subjects are matched once, untimed, first: the other side's round has
    /// just filled the caches with its own data, and each side is measured as it runs when
    /// routing continuously.
    fn time<'s>(
        &'s self,
        subjects: &'s [String],
        start: usize,
        count: usize,
        f: impl Fn(&Self, &'s str, &mut Buffers<'s>),
    ) -> f64 {
        let mut buffers = Buffers::default();
        let n = subjects.len();
        for i in 0..count.min(n) {
            f(self, &subjects[(start + i) % n], &mut buffers);
            black_box(&buffers.targets);
        }
        let begin = Instant::now();
        for i in 0..count {
            f(self, &subjects[(start + i) % n], &mut buffers);
            black_box(&buffers.targets);
        }
        begin.elapsed().as_nanos() as f64 / count as f64
    }

    /// The targets of `subject` by both methods, for the check pass.
    fn both(&self, subject: &str) -> (Vec<u32>, Vec<u32>) {
        let (mut eip, mut naive) = (Buffers::default(), Buffers::default());
        self.eip(subject, &mut eip);
        self.naive(subject, &mut naive);
        (eip.targets, naive.targets)
    }
}

/// Matches `count` subjects with the trie alone, for the profiler (see the module
/// documentation); returns how many targets they went to, so nothing is optimised away.
#[inline(never)]
fn profile_matches(work: &Workload, count: usize) -> usize {
    let mut buffers = Buffers::default();
    let mut found = 0;
    let cycle = env_count("EIP_TOPIC_SUBSET")
        .unwrap_or(work.subjects.len())
        .clamp(1, work.subjects.len());
    for i in 0..count {
        work.eip(&work.subjects[i % cycle], &mut buffers);
        found += black_box(&buffers.targets).len();
    }
    found
}

/// The number the environment variable `name` holds, if it holds one.
fn env_count(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok()
}

/// Nanoseconds this thread has run on a CPU (Linux's `/proc/thread-self/schedstat`; 0
/// elsewhere): unlike wall time, it leaves out the time other processes held the core.
fn cpu_ns() -> u128 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn topic(c: &mut Criterion) {
    if let Some(count) = env_count("EIP_TOPIC_PROFILE") {
        let work = Workload::new(100_000);
        // A first, unprofiled pass: the buffers and the search's memo are allocated here.
        let (mut warm, mut emitted) = (0, 0);
        for subject in &work.subjects {
            warm += work.trie.matches(subject).len();
            work.trie.for_each_match(subject, |_| emitted += 1);
        }
        println!(
            "profile: {} subjects: {warm} targets, {emitted} values emitted",
            work.subjects.len()
        );
        let (cpu, begin) = (cpu_ns(), Instant::now());
        let targets = profile_matches(&work, count);
        let (cpu, wall) = (cpu_ns() - cpu, begin.elapsed().as_nanos());
        let per = |ns: u128| ns as f64 / count.max(1) as f64;
        println!(
            "profile: {count} subjects, {targets} targets, {:.1} ns/subject on the CPU, {:.1} ns/subject wall",
            per(cpu),
            per(wall)
        );
        return;
    }
    for (size, label) in SIZES {
        let work = Workload::new(size);
        // The scan is slow at 100k: check a sample there, every subject at smaller sizes.
        let checked = (CHECK_TESTS / size).clamp(200, SUBJECTS);
        for subject in &work.subjects[..checked] {
            let (eip, naive) = work.both(subject);
            assert_eq!(eip, naive, "subject {subject}");
        }
        let matched = work
            .subjects
            .iter()
            .filter(|s| !work.trie.matches(s).is_empty())
            .count();
        let name = format!("topic {label}");
        let mut group = c.benchmark_group(&name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        let mut ran = false;
        let mut next = 0;
        let mut buffers = Buffers::default();
        group.bench_function("eip", |b| {
            ran = true;
            b.iter(|| {
                next = (next + 1) % work.subjects.len();
                work.eip(&work.subjects[next], &mut buffers);
            })
        });
        if let Some(cached) = &work.cached {
            group.bench_function("eip cached 80% repeated", |b| {
                b.iter(|| {
                    next = (next + 1) % cached.repeated.len();
                    work.cached(&cached.repeated[next], &mut buffers);
                })
            });
        }
        group.bench_function("baseline", |b| {
            b.iter(|| {
                next = (next + 1) % work.subjects.len();
                work.naive(&work.subjects[next], &mut buffers);
            })
        });
        group.finish();
        if !ran || !measuring() {
            continue;
        }
        let baseline_subjects = (BASELINE_ROUND_TESTS / size).max(20);
        let (x, y) = alternating_medians(
            ROUNDS,
            |round| work.time(&work.subjects, round * 7919, EIP_ROUND, Workload::eip),
            |round| {
                work.time(
                    &work.subjects,
                    round * 104_729,
                    baseline_subjects,
                    Workload::naive,
                )
            },
        );
        print_compare(&name, x, y, "naive scan");
        println!(
            "throughput: {name}: eip {:.0} subjects/s on one core ({matched} of {} subjects match a binding)",
            1e9 / x,
            work.subjects.len()
        );
        if let Some(cached) = &work.cached {
            cache_lines(&work, cached);
        }
    }
}

/// The lines of the cached index at 100k bindings (see the module documentation).
fn cache_lines(work: &Workload, cached: &Cached) {
    for (label, stream) in [
        ("unique subjects", &cached.unique),
        ("80% repeated", &cached.repeated),
    ] {
        let name = format!("topic 100k {label}");
        let before = cached.index.cache_stats();
        let (x, y) = alternating_medians(
            ROUNDS,
            |round| work.time(stream, round * 7919, EIP_ROUND, Workload::cached),
            |round| work.time(stream, round * 7919, EIP_ROUND, Workload::eip),
        );
        let after = cached.index.cache_stats();
        let hits = after.hits - before.hits;
        let lookups = hits + after.misses - before.misses;
        print_compare(&name, x, y, "trie without cache");
        println!(
            "throughput: {name}: eip {:.0} subjects/s on one core, trie without cache {:.0}; cache hits {:.1}%",
            1e9 / x,
            1e9 / y,
            100.0 * hits as f64 / lookups.max(1) as f64
        );
    }
    let threads = 2;
    let begin = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let stream = &cached.repeated;
            scope.spawn(move || {
                work.time(stream, t * STREAM / 2, ROUNDS * EIP_ROUND, Workload::cached)
            });
        }
    });
    // Each thread also makes an untimed pass of `STREAM` subjects first: count them too.
    let subjects = threads * (ROUNDS * EIP_ROUND + STREAM);
    println!(
        "throughput: topic 100k 80% repeated, {threads} threads sharing the index: {:.0} subjects/s in all",
        subjects as f64 / begin.elapsed().as_secs_f64()
    );
}

criterion_group!(benches, topic);
criterion_main!(benches);
