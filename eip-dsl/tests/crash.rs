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
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod support {
    pub mod scratch;
}

use support::scratch::{Scratch, env_number};

/// The example flow of the book's Guaranteed Delivery chapter.
fn flow() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/durable-orders.yaml")
}

/// Everything the runs printed, gathered by the reader threads.
#[derive(Default)]
struct Ledger {
    confirmed: HashSet<String>,
    delivered: HashMap<String, usize>,
}

/// A small xorshift generator: enough to spread kill moments, seeded for replay.
struct Moments(u64);

impl Moments {
    fn next_millis(&mut self, low: u64, high: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        low + self.0 % (high - low)
    }
}

fn eip_run(flow: &Path, data: &Path, input: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(flow)
        .arg("--data-dir")
        .arg(data)
        .args(["--input", input, "--receipts", "--stats-interval", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip starts")
}

/// Reads a run's standard output into the ledger until it ends.
fn read_output(child: &mut Child, ledger: &Arc<Mutex<Ledger>>) -> JoinHandle<()> {
    let stdout = child.stdout.take().expect("piped stdout");
    let ledger = ledger.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let mut ledger = ledger.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(id) = value.get("accepted").and_then(|v| v.as_str()) {
                ledger.confirmed.insert(id.to_owned());
            } else if value.get("channel").and_then(|v| v.as_str()) == Some("shipped")
                && let Some(id) = value.get("id").and_then(|v| v.as_str())
            {
                *ledger.delivered.entry(id.to_owned()).or_default() += 1;
            }
        }
    })
}

/// Drains a run's standard error (so it never blocks on a full pipe); keeps it for failures.
fn read_errors(child: &mut Child) -> JoinHandle<String> {
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
        }
        all
    })
}

/// Feeds messages without pause until the pipe breaks (the child died).
fn feed(child: &mut Child, first: u64) -> JoinHandle<u64> {
    let mut stdin = child.stdin.take().expect("piped stdin");
    std::thread::spawn(move || {
        let mut n = first;
        loop {
            let line = format!("{{\"to\": \"orders\", \"payload\": {{\"n\": {n}}}}}\n");
            if stdin.write_all(line.as_bytes()).is_err() {
                return n;
            }
            n += 1;
        }
    })
}

#[test]
fn no_confirmed_message_is_lost_when_eip_run_is_killed() {
    let kills = env_number("EIP_CRASH_KILLS", 4);
    let seed = env_number(
        "EIP_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1,
    );
    println!("crash test: seed {seed} (EIP_CRASH_SEED), {kills} kills (EIP_CRASH_KILLS)");
    let scratch = Scratch::new("crash");
    std::fs::create_dir_all(&scratch.0).expect("scratch directory");
    let flow = flow();
    let data = scratch.0.join("data");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut moments = Moments(seed);
    let deadline = Instant::now() + Duration::from_secs(60 + kills * 3);
    let mut fed = 0;
    for kill in 0..kills {
        let mut child = eip_run(&flow, &data, "-");
        let output = read_output(&mut child, &ledger);
        let errors = read_errors(&mut child);
        let feeder = feed(&mut child, fed);
        // Some kills land while the store opens and recovers, most while it is busy.
        std::thread::sleep(Duration::from_millis(moments.next_millis(20, 400)));
        let alive = child.try_wait().expect("child status").is_none();
        child.kill().expect("SIGKILL sent");
        child.wait().expect("child reaped");
        fed = feeder.join().expect("feeder");
        output.join().expect("reader");
        let errors = errors.join().expect("stderr reader");
        assert!(
            alive,
            "eip run ended before kill {} on its own:\n{errors}",
            kill + 1
        );
        assert!(Instant::now() < deadline, "the crash test ran out of time");
    }
    // Last run: no new input; it drains what the store holds and exits.
    let mut child = eip_run(&flow, &data, "/dev/null");
    drop(child.stdin.take());
    let output = read_output(&mut child, &ledger);
    let errors = read_errors(&mut child);
    let status = loop {
        if let Some(status) = child.try_wait().expect("child status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the last run did not drain in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    output.join().expect("reader");
    let errors = errors.join().expect("stderr reader");
    assert!(status.success(), "the last run failed:\n{errors}");

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
