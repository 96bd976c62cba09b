//! A store is created whole or not at all: a process killed while it creates a new store leaves
//! a directory that the next open uses, never a half-made `store.redb` that no open can read.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{ScratchDir, child_dir, open, record};
use eip_store::{DurableStore, StoreConfig};

/// How many times the creating child is killed.
const KILLS: u32 = 40;
/// The longest the kill loop may run, whatever the machine's load.
const LIMIT: Duration = Duration::from_secs(120);

/// Run as a child: creates store after store in numbered directories under its directory, each
/// with one flushed record, until it is killed.
#[test]
fn child_creating_stores() {
    let Some(dir) = child_dir() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let first = std::fs::read_dir(&dir).map_or(0, |entries| entries.count());
    for n in first.. {
        let store = open(&dir.join(n.to_string()));
        let queue = store.queue("q").unwrap();
        let ticket = queue.append(record(1)).unwrap();
        runtime.block_on(ticket).unwrap();
    }
}

/// A pseudo-random number below `n`, different between calls.
fn below(n: u64, state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state % n
}

fn opens(dir: &Path) -> Result<(), String> {
    DurableStore::open(dir, StoreConfig::default())
        .map(drop)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

#[test]
fn a_store_killed_while_it_was_being_created_opens_afterwards() {
    let scratch = ScratchDir::new("creation-crash");
    std::fs::create_dir_all(scratch.path()).unwrap();
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let mut state = u64::from(std::process::id()) | 1;
    let mut kills = 0;
    while kills < KILLS && started.elapsed() < LIMIT {
        let mut child = std::process::Command::new(&exe)
            .args(["child_creating_stores", "--exact", "--test-threads=1"])
            .env("EIP_STORE_CHILD_DIR", scratch.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20 + below(200, &mut state)));
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
    }
    let mut failed = Vec::new();
    let mut stores = 0;
    for entry in std::fs::read_dir(scratch.path()).unwrap() {
        stores += 1;
        if let Err(e) = opens(&entry.unwrap().path()) {
            failed.push(e);
        }
    }
    println!(
        "creation crash: {kills} kills, {stores} stores, {} refused",
        failed.len()
    );
    assert!(kills >= 10, "only {kills} kills within {LIMIT:?}");
    assert!(
        stores > kills as usize,
        "the child created only {stores} stores"
    );
    assert!(failed.is_empty(), "stores that no longer open: {failed:#?}");
}

#[test]
fn a_leftover_of_an_unfinished_creation_is_started_over() {
    let scratch = ScratchDir::new("creation-leftover");
    std::fs::create_dir_all(scratch.path()).unwrap();
    std::fs::write(scratch.path().join("store.redb.new"), b"half a database").unwrap();
    let store = open(scratch.path());
    let queue = store.queue("q").unwrap();
    assert_eq!(queue.len(), 0);
    drop(queue);
    drop(store);
    assert!(!scratch.path().join("store.redb.new").exists());
    assert!(scratch.path().join("store.redb").exists());
    open(scratch.path());
}
