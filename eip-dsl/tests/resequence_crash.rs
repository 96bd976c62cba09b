//! The Resequencer under SIGKILL: `examples/flows/durable-resequence.yaml` in a child process,
//! fed events out of order (blocks of ten numbers, each block in reverse: 10, 9, …, 1, then
//! 20, …, 11), killed at random moments and restarted on the same data directory.
//!
//! Lines written to a run that it never read (in the pipe when it was killed) are never sent
//! again: their numbers are gaps for good, given up when `max-held` is reached (or the gap
//! timeout). After the last run has drained, the test checks:
//! - confirmed: events with a receipt;
//! - lost: confirmed events neither printed at `ordered` nor still held in the step's table
//!   (must be 0);
//! - order: leaving out every print of a number printed before, the numbers come out
//!   strictly increasing. Nothing here can arrive after its gap was given up (a message
//!   waits in its channel far less than `max-held` arrivals), so no late number is allowed;
//! - duplicates: prints of a number printed before. A run is released again after a restart
//!   only if the kill came while it was being released, after the rest of the route took
//!   part of it and before the commit that deletes it; `ordered`'s own at-least-once
//!   printing adds a few. At most one run (at most `max-held` and a block) per kill.
//!
//! Kills: `EIP_CRASH_KILLS` (default 100). Seed: `EIP_CRASH_SEED`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use eip_core::store::durable::{Durable, StoreConfig, codec};

mod support {
    pub mod kill_loop;
    pub mod scratch;
}

use support::kill_loop::{KillLoop, kills_and_seed};
use support::scratch::Scratch;

/// Numbers come in blocks of this many, each block in reverse.
const BLOCK: u64 = 10;
/// The flow's `max-held`.
const MAX_HELD: u64 = 50;

/// Everything the runs printed.
#[derive(Default)]
struct Ledger {
    /// Receipts per run, in the order the run read its input.
    receipts: HashMap<u64, u64>,
    /// The numbers printed at `ordered`, in the order printed (runs one after another).
    printed: Vec<u64>,
}

/// The number of input line `n` (from 0): blocks of ten, each from its highest number down.
fn number_of_line(n: u64) -> u64 {
    (n / BLOCK) * BLOCK + (BLOCK - n % BLOCK)
}

fn event(n: u64) -> String {
    format!(
        "{{\"to\": \"events\", \"payload\": {{\"seq\": {}}}}}\n",
        number_of_line(n)
    )
}

/// The numbers still held in the step's table.
fn held(data: &Path) -> Vec<u64> {
    let store = Durable::open(data, StoreConfig::default()).expect("the store opens");
    let table = store
        .store()
        .table("resequence/order/1")
        .expect("the table");
    table
        .entries()
        .expect("readable")
        .into_iter()
        .filter(|(key, _)| key.first() == Some(&b'h'))
        .filter_map(|(_, value)| {
            let msg = codec::decode(&value).ok()?;
            let payload: serde_json::Value = serde_json::from_slice(msg.payload()).ok()?;
            payload["seq"].as_u64()
        })
        .collect()
}

#[test]
fn every_event_goes_on_in_order_or_is_still_held_after_kills() {
    let (kills, seed) = kills_and_seed("crash test (resequence)", 100);
    let scratch = Scratch::new("resequence-crash");
    let data = scratch.0.join("data");
    // The store is made before the first run: a kill while redb creates its file leaves one
    // that does not open (a limit of the store's creation, not of the step under test).
    drop(Durable::open(&data, StoreConfig::default()).expect("the store is created"));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let book = ledger.clone();
    let fed = KillLoop {
        flow: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/flows/durable-resequence.yaml"),
        data: data.clone(),
        kills,
        seed,
        line: event,
    }
    .run(Arc::new(move |run, value| {
        let mut ledger = book.lock().unwrap_or_else(|p| p.into_inner());
        if value.get("accepted").is_some() {
            *ledger.receipts.entry(run).or_default() += 1;
        } else if value.get("channel").and_then(|v| v.as_str()) == Some("ordered")
            && let Some(seq) = value.pointer("/payload/seq").and_then(|v| v.as_u64())
        {
            ledger.printed.push(seq);
        }
    }));

    let ledger = ledger.lock().unwrap_or_else(|p| p.into_inner());
    let mut confirmed = HashSet::new();
    // Receipts come in input order, each run's from the line it started at.
    for (run, first) in fed.starts.iter().enumerate() {
        let receipts = ledger.receipts.get(&(run as u64)).copied().unwrap_or(0);
        confirmed.extend((*first..first + receipts).map(number_of_line));
    }
    let mut seen = HashSet::new();
    let mut duplicates = 0_u64;
    let mut out_of_order = Vec::new();
    let mut highest = 0;
    for &n in &ledger.printed {
        if !seen.insert(n) {
            duplicates += 1;
            continue;
        }
        if n < highest {
            out_of_order.push((n, highest));
        }
        highest = highest.max(n);
    }
    let held: HashSet<u64> = held(&data).into_iter().collect();
    let mut lost: Vec<u64> = confirmed
        .iter()
        .copied()
        .filter(|n| !seen.contains(n) && !held.contains(n))
        .collect();
    lost.sort_unstable();
    println!(
        "crash test (resequence): {kills} kills, {} confirmed, {} lost, {duplicates} duplicates \
         ({} released, {} still held, {} out of order, {} fed)",
        confirmed.len(),
        lost.len(),
        seen.len(),
        held.len(),
        out_of_order.len(),
        fed.total
    );
    assert!(
        !confirmed.is_empty(),
        "no send completed before any kill: the test proved nothing"
    );
    assert!(
        lost.is_empty(),
        "confirmed, not released and not held: {lost:?}"
    );
    assert!(
        out_of_order.is_empty(),
        "released after a higher number (number, highest before): {out_of_order:?}"
    );
    assert!(
        duplicates <= kills * (MAX_HELD + BLOCK),
        "{duplicates} numbers released twice in {kills} kills"
    );
    let both: Vec<u64> = held.intersection(&seen).copied().collect();
    assert!(both.is_empty(), "released and still held: {both:?}");
}
