//! Guaranteed Delivery under SIGKILL: a durable flow in a child process, fed without pause,
//! killed at random moments and restarted on the same data directory; every message whose
//! send had completed before a kill must come out afterwards.
//!
//! The flow (`examples/flows/durable-orders.yaml`): `orders` (durable) → route → `shipped`
//! (durable, an output: `eip run` prints each message reaching it, then acknowledges it). `eip run --receipts` prints a receipt for each
//! input message once its send has completed (on disk), before the kill can come. The test
//! counts, over every run:
//! - confirmed: messages with a receipt;
//! - lost: confirmed messages never printed at `shipped` (must be 0);
//! - duplicates: messages printed more than once (allowed: in flight at a kill).
//!
//! Kills: `EIP_CRASH_KILLS` (default 4; the long run in the book uses 100). Seed of the random
//! kill moments: `EIP_CRASH_SEED` (printed, to replay a run).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod support {
    pub mod kill_loop;
    pub mod scratch;
}

use support::kill_loop::{KillLoop, kills_and_seed};
use support::scratch::Scratch;

/// The example flow of the book's Guaranteed Delivery chapter.
fn flow() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/durable-orders.yaml")
}

/// Everything the runs printed.
#[derive(Default)]
struct Ledger {
    confirmed: HashSet<String>,
    delivered: HashMap<String, usize>,
}

fn order(n: u64) -> String {
    format!("{{\"to\": \"orders\", \"payload\": {{\"n\": {n}}}}}\n")
}

#[test]
fn no_confirmed_message_is_lost_when_eip_run_is_killed() {
    let (kills, seed) = kills_and_seed("crash test", 4);
    let scratch = Scratch::new("crash");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let book = ledger.clone();
    let fed = KillLoop {
        flow: flow(),
        data: scratch.0.join("data"),
        kills,
        seed,
        line: order,
    }
    .run(Arc::new(move |_, value| {
        let mut ledger = book.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(id) = value.get("accepted").and_then(|v| v.as_str()) {
            ledger.confirmed.insert(id.to_owned());
        } else if value.get("channel").and_then(|v| v.as_str()) == Some("shipped")
            && let Some(id) = value.get("id").and_then(|v| v.as_str())
        {
            *ledger.delivered.entry(id.to_owned()).or_default() += 1;
        }
    }))
    .total;

    let ledger = ledger.lock().unwrap_or_else(|p| p.into_inner());
    let lost: Vec<&String> = ledger
        .confirmed
        .iter()
        .filter(|id| !ledger.delivered.contains_key(*id))
        .collect();
    let duplicates: usize = ledger.delivered.values().map(|n| n - 1).sum();
    println!(
        "crash test: {kills} kills, {} confirmed, {} lost, {duplicates} duplicates ({fed} fed, {} delivered)",
        ledger.confirmed.len(),
        lost.len(),
        ledger.delivered.len()
    );
    assert!(
        !ledger.confirmed.is_empty(),
        "no send completed before any kill: the test proved nothing"
    );
    assert!(lost.is_empty(), "confirmed and never delivered: {lost:?}");
}
