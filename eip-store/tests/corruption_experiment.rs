//! The corruption experiment: a cleanly closed store of 300 records, damaged at random many
//! times over (one damage per case: flipped bits, a zeroed 4 KiB page, a truncation, a run of
//! bytes overwritten), each time reopened and read to the end.
//!
//! Every case must end in one of three ways: the open is refused with an error naming the
//! database file; every record comes back; or every record whose pages the damage missed comes
//! back and the ones missing are counted as set aside or unreadable. Never a panic, a hang, a
//! record with wrong bytes, or fewer records than that with no word said (a stuck queue).
//!
//! `cargo test` runs 30 cases. `EIP_CORRUPTIONS=1000 EIP_CORRUPTION_SEED=7 cargo test -p
//! eip-store --test corruption_experiment -- --nocapture` runs more and prints the table of
//! outcomes (the book's Guaranteed Delivery chapter shows one); the seed is printed, so a run can
//! be replayed: the store is built with one commit per record, the same file every time, and
//! `EIP_CORRUPTION_CASE=N` runs case N of the seed's run alone.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::ScratchDir;
use common::damage::{Noise, PAGE, database, pages, read_all, spans, store_with};
use eip_store::{DurableStore, StoreConfig, StoreError};

const RECORDS: u64 = 300;
const RECORD_BYTES: usize = 256;
/// A case that takes longer than this is a hang (most take milliseconds; a damaged page number
/// that asks for a huge page takes seconds in a debug build).
const CASE_LIMIT: Duration = Duration::from_secs(120);

/// One way of damaging the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    BitFlips,
    ZeroedPage,
    Truncation,
    OverwrittenRun,
}

const KINDS: [Kind; 4] = [
    Kind::BitFlips,
    Kind::ZeroedPage,
    Kind::Truncation,
    Kind::OverwrittenRun,
];

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// The open failed with an error naming the database file.
    Refused,
    /// Every record came back.
    AllRecovered,
    /// Every record on pages the damage missed came back; those missing are counted.
    IntactDeliveredRestSetAside,
    /// The damage hit a page above the records (a branch of the B-tree): records on intact
    /// pages can not be reached through the tree; they are counted as unreadable and reported.
    UnreachableCounted,
    /// Every untouched record came back, but fewer damaged ones were counted than are missing:
    /// the damage cut records out of a page's own list of entries, so no read can see them
    /// (`eip store check` reports them as missing against the queue's length).
    TouchedUncounted,
    /// Fewer records than the untouched ones, and no error: the failure the store must not have.
    Stuck,
    /// A read failed after the open succeeded.
    ReadFailed,
    /// A record came back with bytes other than those written.
    WrongBytes,
    /// A panic escaped the store.
    Panic,
}

/// Damages `file` one way; answers which byte offsets changed (or were cut off).
fn damage(file: &mut Vec<u8>, kind: Kind, noise: &mut Noise) -> Vec<std::ops::Range<usize>> {
    let len = file.len();
    match kind {
        Kind::BitFlips => (0..1 + noise.below(8))
            .map(|_| {
                let at = noise.below(len);
                file[at] ^= 1 << noise.below(8);
                at..at + 1
            })
            .collect(),
        Kind::ZeroedPage => {
            let page = noise.below(len / PAGE);
            file[page * PAGE..(page + 1) * PAGE].fill(0);
            std::iter::once(page * PAGE..(page + 1) * PAGE).collect()
        }
        Kind::Truncation => {
            let keep = noise.below(len);
            file.truncate(keep);
            std::iter::once(keep..len).collect()
        }
        Kind::OverwrittenRun => {
            let run = 16 + noise.below(1024);
            let at = noise.below(len - run);
            let bytes = noise.bytes(run);
            file[at..at + run].copy_from_slice(&bytes);
            std::iter::once(at..at + run).collect()
        }
    }
}

/// Whether any damaged byte lies on a page holding part of `span`.
fn touched(span: &std::ops::Range<usize>, damaged: &[std::ops::Range<usize>]) -> bool {
    let on = pages(span);
    damaged.iter().any(|d| {
        let hit = d.start / PAGE..=(d.end.max(d.start + 1) - 1) / PAGE;
        hit.start() <= on.end() && on.start() <= hit.end()
    })
}

/// Opens the damaged store in `dir`, reads everything and says how it went.
fn run_case(dir: &Path, committed: &[(u64, Bytes)], untouched: &[u64]) -> (Outcome, String) {
    let file = database(dir);
    let store = match DurableStore::open(dir, StoreConfig::default()) {
        Ok(store) => store,
        Err(error) => {
            let named = error.to_string().contains(&file.display().to_string());
            let outcome = if named {
                Outcome::Refused
            } else {
                Outcome::ReadFailed
            };
            return (outcome, error.to_string());
        }
    };
    let queue = match store.queue("q") {
        Ok(queue) => queue,
        Err(error) => return (Outcome::ReadFailed, error.to_string()),
    };
    let read = match read_all(&queue) {
        Ok(read) => read,
        Err(error @ StoreError::Damaged { .. }) => return (Outcome::ReadFailed, error.to_string()),
        Err(error) => return (Outcome::ReadFailed, error.to_string()),
    };
    if read.iter().any(|r| !committed.contains(r)) {
        return (Outcome::WrongBytes, format!("{} records read", read.len()));
    }
    // A record read twice (keys out of order on a damaged page) is a redelivery, not a loss
    let distinct: std::collections::BTreeSet<u64> = read.iter().map(|(s, _)| *s).collect();
    let missing: Vec<u64> = untouched
        .iter()
        .copied()
        .filter(|seq| !distinct.contains(seq))
        .collect();
    let damage = queue.damage();
    let lost = committed.len() - distinct.len();
    let counted = damage.set_aside + damage.unreadable >= lost as u64;
    let detail = format!(
        "{} read, {damage:?}, untouched missing {missing:?}",
        read.len()
    );
    match (missing.is_empty(), counted) {
        (false, true) => return (Outcome::UnreachableCounted, detail),
        (false, false) => return (Outcome::Stuck, detail),
        (true, false) => return (Outcome::TouchedUncounted, detail),
        (true, true) => {}
    }
    if lost == 0 {
        (Outcome::AllRecovered, detail)
    } else {
        (Outcome::IntactDeliveredRestSetAside, detail)
    }
}

/// Runs `cases` cases from `seed`; answers the count of each outcome by kind, and the cases that
/// failed.
fn experiment(cases: usize, seed: u64) -> (BTreeMap<(Kind, Outcome), usize>, Vec<String>) {
    let pristine_dir = ScratchDir::new("experiment-pristine");
    let committed = store_with(pristine_dir.path(), RECORDS, RECORD_BYTES);
    let pristine = std::fs::read(database(pristine_dir.path())).expect("the store file");
    let spans = spans(&pristine, &committed);
    let mut table = BTreeMap::new();
    let mut failures = Vec::new();
    let mut noise = Noise::new(seed);
    let only = std::env::var("EIP_CORRUPTION_CASE").ok().map(|case| {
        case.parse::<usize>()
            .expect("EIP_CORRUPTION_CASE is a case number")
    });
    for case in 0..cases {
        let kind = KINDS[case % KINDS.len()];
        let dir = ScratchDir::new("experiment-case");
        std::fs::create_dir_all(dir.path()).expect("a case directory");
        for name in ["FORMAT", "LOCK"] {
            std::fs::copy(pristine_dir.path().join(name), dir.path().join(name)).expect("copied");
        }
        let mut file = pristine.clone();
        let damaged = damage(&mut file, kind, &mut noise);
        if only.is_some_and(|only| only != case) {
            continue;
        }
        std::fs::write(database(dir.path()), &file).expect("the damaged file");
        let untouched: Vec<u64> = committed
            .iter()
            .zip(&spans)
            .filter(|(_, span)| !touched(span, &damaged))
            .map(|((seq, _), _)| *seq)
            .collect();
        let (outcome, detail) = {
            let (dir, committed) = (dir.path().to_path_buf(), committed.clone());
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let outcome = std::panic::catch_unwind(|| run_case(&dir, &committed, &untouched));
                let _ = sender.send(outcome);
            });
            match receiver.recv_timeout(CASE_LIMIT) {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => (Outcome::Panic, "a panic escaped".to_string()),
                Err(_) => (Outcome::Stuck, format!("no answer in {CASE_LIMIT:?}")),
            }
        };
        if matches!(
            outcome,
            Outcome::Stuck | Outcome::Panic | Outcome::WrongBytes | Outcome::ReadFailed
        ) {
            failures.push(format!(
                "case {case} ({kind:?} at {damaged:?}): {outcome:?}: {detail}"
            ));
        }
        *table.entry((kind, outcome)).or_insert(0) += 1;
    }
    (table, failures)
}

fn print_table(table: &BTreeMap<(Kind, Outcome), usize>, cases: usize, seed: u64) {
    println!(
        "corruption experiment: {cases} cases, seed {seed}, {RECORDS} records of {RECORD_BYTES} bytes"
    );
    println!("| damage | outcome | cases |");
    println!("|---|---|---|");
    for ((kind, outcome), count) in table {
        println!("| {kind:?} | {outcome:?} | {count} |");
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
        Err(_) => default,
    }
}

#[test]
fn random_damage_never_stalls_panics_or_loses_an_untouched_record() {
    let cases = env_number("EIP_CORRUPTIONS", 30) as usize;
    let seed = env_number("EIP_CORRUPTION_SEED", 0x5EED);
    let (table, failures) = experiment(cases, seed);
    print_table(&table, cases, seed);
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
