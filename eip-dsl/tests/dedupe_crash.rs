//! The Idempotent Receiver under SIGKILL: `examples/flows/durable-dedupe.yaml` in a child
//! process, fed every order twice in a row, killed at random moments and restarted on the same
//! data directory.
//!
//! The test counts, over every run:
//! - confirmed: orders with at least one receipt (a copy on disk in `orders`);
//! - lost: confirmed orders never printed at `shipped` (must be 0);
//! - duplicates: orders that came out at `shipped` as more than one message (two copies both
//!   let through). A copy is let through only if a kill came after the rest of the route took
//!   its original and before the commit holding its key and ack: with one message in
//!   processing at a time, at most one per kill;
//! - redelivered: one message printed again (the output's own at-least-once: it was printed,
//!   and the kill came before its ack), apart from the duplicates.
//!
//! Kills: `EIP_CRASH_KILLS` (default 4; the run in the book uses 100). Seed:
//! `EIP_CRASH_SEED`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod support {
    pub mod kill_loop;
    pub mod scratch;
}

use support::kill_loop::{KillLoop, kills_and_seed};
use support::scratch::Scratch;

/// Everything the runs printed.
#[derive(Default)]
struct Ledger {
    /// Receipts per run, in the order the run read its input.
    receipts: HashMap<u64, u64>,
    /// The messages (by id) each order came out as at `shipped`, and how often each.
    shipped: HashMap<u64, HashMap<String, u64>>,
}

/// Message `n`: order `n / 2`, so each order is sent twice in a row.
fn copy_of_order(n: u64) -> String {
    format!(
        "{{\"to\": \"orders\", \"payload\": {{\"order\": {}, \"copy\": {}}}}}\n",
        n / 2,
        n % 2
    )
}

#[test]
fn no_order_is_lost_and_a_copy_passes_only_across_a_kill() {
    let (kills, seed) = kills_and_seed("crash test (dedupe)", 4);
    let scratch = Scratch::new("dedupe-crash");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let book = ledger.clone();
    let fed = KillLoop {
        flow: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/flows/durable-dedupe.yaml"),
        data: scratch.0.join("data"),
        kills,
        seed,
        line: copy_of_order,
    }
    .run(Arc::new(move |run, value| {
        let mut ledger = book.lock().unwrap_or_else(|p| p.into_inner());
        if value.get("accepted").is_some() {
            *ledger.receipts.entry(run).or_default() += 1;
        } else if value.get("channel").and_then(|v| v.as_str()) == Some("shipped")
            && let Some(id) = value.get("id").and_then(|v| v.as_str())
            && let Some(order) = value.pointer("/payload/order").and_then(|v| v.as_u64())
        {
            let copies = ledger.shipped.entry(order).or_default();
            *copies.entry(id.to_owned()).or_default() += 1;
        }
    }));

    let ledger = ledger.lock().unwrap_or_else(|p| p.into_inner());
    let mut confirmed = HashSet::new();
    // Receipts come in input order, each run's from the line it started at.
    for (run, first) in fed.starts.iter().enumerate() {
        let receipts = ledger.receipts.get(&(run as u64)).copied().unwrap_or(0);
        confirmed.extend((*first..first + receipts).map(|n| n / 2));
    }
    let lost: Vec<u64> = confirmed
        .iter()
        .copied()
        .filter(|order| !ledger.shipped.contains_key(order))
        .collect();
    let duplicates: u64 = ledger
        .shipped
        .values()
        .map(|copies| copies.len() as u64 - 1)
        .sum();
    let redelivered: u64 = ledger
        .shipped
        .values()
        .flat_map(|copies| copies.values())
        .map(|printed| printed - 1)
        .sum();
    println!(
        "crash test (dedupe): {kills} kills, {} confirmed, {} lost, {duplicates} duplicates \
         ({redelivered} redelivered at the output, {} fed)",
        confirmed.len(),
        lost.len(),
        fed.total
    );
    assert!(
        !confirmed.is_empty(),
        "no send completed before any kill: the test proved nothing"
    );
    assert!(lost.is_empty(), "confirmed and never shipped: {lost:?}");
    assert!(
        duplicates <= kills,
        "{duplicates} copies let through in {kills} kills"
    );
}
