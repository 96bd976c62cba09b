//! A CSV file streamed by `file-in` (`format: csv`) and killed with SIGKILL at random moments
//! loses no row: `eip run` streams the file into a durable channel, which a `file-out`
//! appends to a JSON-lines file; the child is killed mid-file again and again, then run once
//! more until every row is out. The file stays claimed while it is streamed, so after each
//! kill the next run takes the abandoned claim and streams the file again from its start:
//! every row must reach the output at least once; a row written more than once (sent again
//! after a kill, or taken from the channel again) is a duplicate, which at-least-once
//! delivery allows.
//!
//! The channel holds few messages and the sink syncs each line, so the adapter waits for room
//! for most of the run: a kill finds it in the middle of the file. Kills: `EIP_CRASH_KILLS`
//! (default 10; the book's run uses 100), moments seeded by `EIP_CRASH_SEED` (printed, to
//! replay). It prints `crash test (split): K kills, N confirmed, 0 lost, D duplicates`.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support {
    pub mod scratch;
}

use support::scratch::{Scratch, env_number};

/// Rows of the CSV file.
const ROWS: u64 = 3_000;

/// How long the last run may take to write every row out.
const LAST_RUN: Duration = Duration::from_secs(180);

/// A child `eip run`, killed if still running when dropped (whatever the test's outcome).
struct Run(Child);

impl Run {
    fn start(flow: &Path, data: &Path) -> Run {
        let child = Command::new(env!("CARGO_BIN_EXE_eip"))
            .arg("run")
            .arg(flow)
            .arg("--data-dir")
            .arg(data)
            .args(["--stats-interval", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("eip starts");
        Run(child)
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How often each row's id appears in the output, and the lines that are not a row.
fn written(output: &Path) -> (HashMap<u64, usize>, usize) {
    let mut seen = HashMap::new();
    let mut garbled = 0;
    let text = std::fs::read_to_string(output).unwrap_or_default();
    for line in text.lines() {
        let id = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|row| row["id"].as_str().and_then(|id| id.parse::<u64>().ok()));
        match id {
            Some(id) => *seen.entry(id).or_default() += 1,
            None => garbled += 1,
        }
    }
    (seen, garbled)
}

#[test]
fn a_csv_file_streamed_under_sigkill_loses_no_row() {
    let kills = env_number("EIP_CRASH_KILLS", 10);
    let seed = env_number(
        "EIP_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| d.as_nanos() as u64)
            | 1,
    );
    println!("crash test (split): seed {seed} (EIP_CRASH_SEED), {kills} kills (EIP_CRASH_KILLS)");
    let scratch = Scratch::new("file-split-crash");
    let inbox = scratch.0.join("in");
    std::fs::create_dir_all(&inbox).expect("the inbox");
    let flow = scratch.0.join("flow.yaml");
    std::fs::write(
        &flow,
        "channels:\n  rows: {kind: point-to-point, durable: true, capacity: 20}\n\
         adapters:\n  \
         inbox: {kind: file-in, to: rows, dir: in, format: csv, poll-interval: 50ms}\n  \
         out: {kind: file-out, from: rows, dir: out, append: rows.jsonl}\n",
    )
    .expect("the flow file");
    let staged = scratch.0.join("orders.csv");
    {
        let mut csv = std::io::BufWriter::new(std::fs::File::create(&staged).expect("a file"));
        writeln!(csv, "id,sku,qty").expect("written");
        for id in 1..=ROWS {
            writeln!(csv, "{id},SKU-{:04},{}", id % 977, id % 9).expect("written");
        }
        csv.flush().expect("flushed");
    }
    std::fs::rename(&staged, inbox.join("orders.csv")).expect("the file put in place");
    let data = scratch.0.join("data");
    let output = scratch.0.join("out/rows.jsonl");
    let mut moment = seed;
    for kill in 0..kills {
        let mut run = Run::start(&flow, &data);
        moment ^= moment << 13;
        moment ^= moment >> 7;
        moment ^= moment << 17;
        std::thread::sleep(Duration::from_millis(150 + moment % 450));
        assert!(run.alive(), "eip run ended before kill {}", kill + 1);
        run.0.kill().expect("SIGKILL sent");
        let _ = run.0.wait();
    }
    // The last run, until every row is out and the file is done.
    let mut run = Run::start(&flow, &data);
    let done = inbox.join(".done/orders.csv");
    let deadline = Instant::now() + LAST_RUN;
    let finished = loop {
        if done.exists() && written(&output).0.len() as u64 == ROWS {
            break true;
        }
        if Instant::now() > deadline || !run.alive() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stopped = Command::new("kill")
        .args(["-INT", &run.0.id().to_string()])
        .status()
        .expect("kill -INT runs");
    assert!(stopped.success());
    let _ = run.0.wait();
    let (seen, garbled) = written(&output);
    let lost = (1..=ROWS).filter(|id| !seen.contains_key(id)).count();
    let duplicates: usize = seen.values().map(|n| n - 1).sum();
    let confirmed = seen.len();
    assert!(
        finished,
        "after the last run: {confirmed} of {ROWS} rows out, file done: {}, {garbled} lines not a row",
        done.exists()
    );
    println!(
        "crash test (split): {kills} kills, {confirmed} confirmed, {lost} lost, {duplicates} duplicates"
    );
    assert_eq!(lost, 0, "rows never written out");
    assert_eq!(garbled, 0, "lines of the output that are not a row");
    let left: Vec<_> = std::fs::read_dir(inbox.join(".claimed"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "claims left: {left:?}");
}
