//! Crashes in the middle of traffic, with the write-ahead journal holding the rounds since the
//! last checkpoint: every record whose ticket resolved is there after the reopen, none twice,
//! and sequence numbers go on from where they were; a kill right after a journal reset never
//! brings back what the reset left behind in the file.
//!
//! Each test kills a child process (SIGKILL) several times, within a time limit, and prints
//! its counts: kills, records confirmed, records lost.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{ScratchDir, block_on, child_dir, open, read_all};
use eip_store::{DurableStore, StoreConfig};

/// The longest a kill loop may run, whatever the machine's load.
const LIMIT: Duration = Duration::from_secs(90);
/// How many kills each test aims for.
const KILLS: u32 = 6;

/// A record naming the run and the number it was given in the run.
fn numbered(run: u64, i: u64) -> Bytes {
    Bytes::from(format!("run {run} record {i:08}").into_bytes())
}

fn number(payload: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(payload).ok()?.trim_end();
    let rest = text.strip_prefix("run ")?;
    let (run, i) = rest.split_once(" record ")?;
    Some((run.parse().ok()?, i.parse().ok()?))
}

/// The configuration of a child; `small` journals make the child checkpoint and reset often.
fn config(small: bool) -> StoreConfig {
    StoreConfig {
        journal_bytes: if small { 256 << 10 } else { 64 << 20 },
        ..StoreConfig::default()
    }
}

/// Run as a child: four tasks append numbered records to queue `q` until killed, each printing
/// `OK <run> <i> <seq>` once its ticket resolved; every third confirmed record is acked (lazily,
/// so it may come back after the crash). `EIP_STORE_RUN` names the run, `EIP_STORE_SMALL` asks
/// for a small journal.
#[test]
fn child_appending_until_killed() {
    let Some(dir) = child_dir() else { return };
    let run: u64 = std::env::var("EIP_STORE_RUN")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let small = std::env::var_os("EIP_STORE_SMALL").is_some();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let store = DurableStore::open(&dir, config(small)).unwrap();
        let queue = store.queue("q").unwrap();
        println!("READY");
        let tasks: Vec<_> = (0..4u64)
            .map(|task| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    for n in 0.. {
                        let i = n * 4 + task;
                        let payload = numbered(run, i);
                        // Padding makes the journal grow, so small journals reset often
                        let mut padded = payload.to_vec();
                        padded.resize(if small { 600 } else { 200 }, b' ');
                        let seq = queue.append(Bytes::from(padded)).unwrap().await.unwrap();
                        println!("OK {run} {i} {seq}");
                        if i % 3 == 0 {
                            queue.ack(seq);
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    })
}

/// What the parent saw a child confirm.
#[derive(Default)]
struct Confirmed {
    /// (run, i) → seq.
    records: BTreeMap<(u64, u64), u64>,
}

/// Starts a child on `dir` for run `run`, lets it confirm at least `at_least` records (or run
/// for `wait` once ready), kills it, and collects what it confirmed.
fn run_and_kill(dir: &Path, run: u64, small: bool, wait: Duration, into: &mut Confirmed) {
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    command
        .args([
            "child_appending_until_killed",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("EIP_STORE_CHILD_DIR", dir)
        .env("EIP_STORE_RUN", run.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if small {
        command.env("EIP_STORE_SMALL", "1");
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => lines.push(line),
                Err(_) => break,
            }
        }
        lines
    });
    // The child prints READY once open; a fixed time after the start is enough either way
    std::thread::sleep(wait);
    child.kill().unwrap();
    child.wait().unwrap();
    for line in reader.join().unwrap() {
        let mut words = line.split_whitespace();
        if words.next() != Some("OK") {
            continue;
        }
        let fields: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
        if let [run, i, seq] = fields[..] {
            into.records.insert((run, i), seq);
        }
    }
}

/// Reopens `dir` and checks it against what was confirmed: answers (present, lost) counts.
fn verify(dir: &Path, confirmed: &Confirmed, small: bool) -> (usize, Vec<(u64, u64)>) {
    let store = DurableStore::open(dir, config(small)).expect("the store opens after a kill");
    assert_eq!(store.journal_damage(), None, "a kill is no damage");
    let queue = store.queue("q").unwrap();
    let records = read_all(&queue);
    let mut seen = BTreeSet::new();
    let mut last_seq = None;
    for (seq, payload) in &records {
        let key = number(payload).unwrap_or_else(|| panic!("record {seq} is not one appended"));
        assert!(seen.insert(key), "record {key:?} is there twice");
        assert!(last_seq < Some(*seq), "sequence numbers grow");
        last_seq = Some(*seq);
        if let Some(at) = confirmed.records.get(&key) {
            assert_eq!(
                at, seq,
                "record {key:?} moved from the seq it was confirmed with"
            );
        }
    }
    let lost: Vec<(u64, u64)> = confirmed
        .records
        .keys()
        .filter(|(_, i)| i % 3 != 0)
        .filter(|key| !seen.contains(key))
        .copied()
        .collect();
    let highest = confirmed.records.values().max().copied();
    assert!(
        highest.is_none_or(|h| queue.head() > h),
        "the head {} is not past every confirmed seq",
        queue.head()
    );
    // Sequence numbers go on from the head
    let next = futures_lite(queue.append(Bytes::from_static(b"after")).unwrap());
    assert_eq!(next, queue.head() - 1);
    queue.ack(next);
    (records.len(), lost)
}

/// Resolves a ticket on a small runtime of its own.
fn futures_lite(ticket: eip_store::AppendTicket) -> u64 {
    block_on(ticket).unwrap()
}

fn kill_loop(label: &str, small: bool) {
    let scratch = ScratchDir::new(label);
    let started = Instant::now();
    let mut confirmed = Confirmed::default();
    let mut kills = 0u32;
    let mut lost = Vec::new();
    let mut present = 0;
    while kills < KILLS && started.elapsed() < LIMIT {
        let wait = Duration::from_millis(300 + 150 * u64::from(kills % 4));
        run_and_kill(
            scratch.path(),
            u64::from(kills),
            small,
            wait,
            &mut confirmed,
        );
        kills += 1;
        let (count, missing) = verify(scratch.path(), &confirmed, small);
        present = count;
        lost.extend(missing);
    }
    println!(
        "{label}: {kills} kills, {} records confirmed, {present} waiting at the end, {} lost",
        confirmed.records.len(),
        lost.len()
    );
    assert!(kills >= 2, "only {kills} kills within {LIMIT:?}");
    assert!(
        confirmed.records.len() > 100,
        "the children confirmed only {} records",
        confirmed.records.len()
    );
    assert!(lost.is_empty(), "confirmed records lost: {lost:?}");
}

#[test]
fn a_kill_mid_traffic_loses_no_confirmed_record_and_duplicates_none() {
    kill_loop("journal-kill", false);
}

#[test]
fn kills_around_journal_resets_bring_back_nothing_stale() {
    kill_loop("journal-reset-kill", true);
}

/// Run as a child: appends 200 records, acks them all, flushes, waits for an idle checkpoint
/// (which resets the journal), prints `RESET`, then aborts.
#[test]
fn child_acking_all_then_crashing_after_a_reset() {
    let Some(dir) = child_dir() else { return };
    block_on(async {
        let store = open(&dir);
        let queue = store.queue("q").unwrap();
        for i in 0..200 {
            let seq = queue.append(numbered(0, i)).unwrap().await.unwrap();
            queue.ack(seq);
        }
        store.flush().await.unwrap();
        let before = store.stats().checkpoints;
        let limit = Instant::now() + Duration::from_secs(20);
        while store.stats().checkpoints == before {
            assert!(Instant::now() < limit, "no checkpoint while idle");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        println!("CHILD: reset");
        std::process::abort()
    })
}

#[test]
fn a_kill_right_after_a_journal_reset_replays_nothing_stale() {
    let scratch = ScratchDir::new("journal-after-reset");
    let output = common::run_child(
        "child_acking_all_then_crashing_after_a_reset",
        scratch.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("CHILD: reset"), "{stdout}");
    // The records are still in the journal's file, behind the new header
    let journal = std::fs::read(scratch.path().join("journal")).unwrap();
    assert!(
        journal
            .windows(b"run 0 record 00000199".len())
            .any(|w| w == b"run 0 record 00000199"),
        "the old records are still in the file"
    );
    let store = common::open(scratch.path());
    let queue = store.queue("q").unwrap();
    assert_eq!(read_all(&queue), Vec::new(), "acked records came back");
    assert_eq!(queue.head(), 200);
    assert_eq!(store.journal_damage(), None);
}
