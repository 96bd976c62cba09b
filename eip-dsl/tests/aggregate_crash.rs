//! The Aggregator under SIGKILL: `examples/flows/durable-batches.yaml` in a child process, fed
//! readings of one sensor after another (ten a sensor, so each group fills in turn), killed at
//! random moments and restarted on the same data directory.
//!
//! After the last run has drained, every confirmed reading (its send had a receipt) must be in
//! a batch printed at `batches`, or still held in its group in the store (the last group, not
//! full). The test counts:
//! - confirmed: readings with a receipt;
//! - lost: confirmed readings in no batch and not held (must be 0);
//! - duplicates: readings in more than one batch. A batch is sent twice only when a kill came
//!   while it was being sent: after its batch was accepted and before the commit that deletes
//!   its group. With one message in processing at a time, that is at most one group (ten
//!   readings) per kill;
//! - redelivered: one batch printed again (the output's own at-least-once), apart from those.
//!
//! Kills: `EIP_CRASH_KILLS` (default 4; the run in the book uses 100). Seed: `EIP_CRASH_SEED`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use eip_core::store::durable::{Durable, StoreConfig, codec};

mod support {
    pub mod kill_loop;
    pub mod scratch;
}

use support::kill_loop::{KillLoop, kills_and_seed};
use support::scratch::Scratch;

/// How many readings a group holds (the flow's `size`).
const GROUP: u64 = 10;

/// Everything the runs printed.
#[derive(Default)]
struct Ledger {
    /// Receipts per run, in the order the run read its input.
    receipts: HashMap<u64, u64>,
    /// The batches printed (by message id), with the readings each holds and how often each
    /// was printed.
    batches: HashMap<String, (Vec<u64>, u64)>,
}

/// Reading `n`, of sensor `n / 10`.
fn reading(n: u64) -> String {
    format!(
        "{{\"to\": \"readings\", \"payload\": {{\"sensor\": \"s{}\", \"n\": {n}}}}}\n",
        n / GROUP
    )
}

/// The readings still held in the store's groups.
fn held(data: &std::path::Path) -> Vec<u64> {
    let store = Durable::open(data, StoreConfig::default()).expect("the store opens");
    let table = store.store().table("aggregate/batch/1").expect("the table");
    table
        .entries()
        .expect("readable")
        .into_iter()
        .filter_map(|(_, value)| {
            let msg = codec::decode(&value.slice(8..)).ok()?;
            let payload: serde_json::Value = serde_json::from_slice(msg.payload()).ok()?;
            payload["n"].as_u64()
        })
        .collect()
}

#[test]
fn every_reading_is_in_a_sent_batch_or_still_in_its_group_after_kills() {
    let (kills, seed) = kills_and_seed("crash test (aggregate)", 4);
    let scratch = Scratch::new("aggregate-crash");
    let data = scratch.0.join("data");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let book = ledger.clone();
    let fed = KillLoop {
        flow: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/flows/durable-batches.yaml"),
        data: data.clone(),
        kills,
        seed,
        line: reading,
    }
    .run(Arc::new(move |run, value| {
        let mut ledger = book.lock().unwrap_or_else(|p| p.into_inner());
        if value.get("accepted").is_some() {
            *ledger.receipts.entry(run).or_default() += 1;
        } else if value.get("channel").and_then(|v| v.as_str()) == Some("batches")
            && let Some(id) = value.get("id").and_then(|v| v.as_str())
        {
            let readings: Vec<u64> = value
                .pointer("/payload/readings")
                .and_then(|v| v.as_array())
                .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                .unwrap_or_default();
            let entry = ledger.batches.entry(id.to_owned()).or_insert((readings, 0));
            entry.1 += 1;
        }
    }));

    let ledger = ledger.lock().unwrap_or_else(|p| p.into_inner());
    let mut confirmed = HashSet::new();
    // Receipts come in input order, each run's from the line it started at.
    for (run, first) in fed.starts.iter().enumerate() {
        let receipts = ledger.receipts.get(&(run as u64)).copied().unwrap_or(0);
        confirmed.extend(*first..first + receipts);
    }
    let mut in_batches: HashMap<u64, u64> = HashMap::new();
    for (readings, _) in ledger.batches.values() {
        for n in readings {
            *in_batches.entry(*n).or_default() += 1;
        }
    }
    let held = held(&data);
    let lost: Vec<u64> = confirmed
        .iter()
        .copied()
        .filter(|n| !in_batches.contains_key(n) && !held.contains(n))
        .collect();
    let duplicates: u64 = in_batches.values().map(|times| times - 1).sum();
    let redelivered: u64 = ledger
        .batches
        .values()
        .map(|(_, printed)| printed - 1)
        .sum();
    println!(
        "crash test (aggregate): {kills} kills, {} confirmed, {} lost, {duplicates} duplicates \
         ({} batches, {} readings still held, {redelivered} redelivered at the output, {} fed)",
        confirmed.len(),
        lost.len(),
        ledger.batches.len(),
        held.len(),
        fed.total
    );
    assert!(
        !confirmed.is_empty(),
        "no send completed before any kill: the test proved nothing"
    );
    assert!(
        lost.is_empty(),
        "confirmed, in no batch and not held: {lost:?}"
    );
    assert!(
        duplicates <= kills * GROUP,
        "{duplicates} readings in two batches in {kills} kills"
    );
    for (readings, _) in ledger.batches.values() {
        assert_eq!(readings.len() as u64, GROUP, "a batch of ten: {readings:?}");
    }
}
