//! What the SIGKILL tests share: `eip run` on a durable flow in a child process, fed without
//! pause from standard input, killed at random moments and started again on the same data
//! directory, then run once more without input until it has drained and exits.
//!
//! Each test reads what the runs printed (receipts, outputs) through its own callback, and
//! makes its own ledger of it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::scratch::env_number;

/// What a test hands the loop.
pub struct KillLoop {
    /// The flow file.
    pub flow: PathBuf,
    /// The data directory the runs share.
    pub data: PathBuf,
    /// How many runs are killed.
    pub kills: u64,
    /// The seed of the kill moments.
    pub seed: u64,
    /// The input line of message `n` (from 0, counted over every run).
    pub line: fn(u64) -> String,
}

/// What a run printed, one JSON line at a time: the run's number (from 0; the last, drained
/// run is `kills`), and the line.
pub type Printed = Arc<dyn Fn(u64, &serde_json::Value) + Send + Sync>;

/// The number of kills from `EIP_CRASH_KILLS` (else `default`) and a seed from
/// `EIP_CRASH_SEED` (else the clock), printed so a run can be replayed.
pub fn kills_and_seed(test: &str, default: u64) -> (u64, u64) {
    let kills = env_number("EIP_CRASH_KILLS", default);
    let seed = env_number(
        "EIP_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1,
    );
    println!("{test}: seed {seed} (EIP_CRASH_SEED), {kills} kills (EIP_CRASH_KILLS)");
    (kills, seed)
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

/// What the loop fed the runs.
pub struct Fed {
    /// The input line each killed run started at (run `k` read lines `starts[k]..`, its
    /// receipts in that order).
    #[allow(dead_code)] // Not every crash test reads them.
    pub starts: Vec<u64>,
    /// How many input lines were written in all.
    pub total: u64,
}

impl KillLoop {
    /// Runs the loop, handing every line printed to `printed`. Bounded in time: panics past
    /// 60 s plus 3 s a kill.
    pub fn run(&self, printed: Printed) -> Fed {
        let mut moments = Moments(self.seed);
        let deadline = Instant::now() + Duration::from_secs(60 + self.kills * 3);
        let mut fed = 0;
        let mut starts = Vec::new();
        for kill in 0..self.kills {
            starts.push(fed);
            let mut child = self.eip_run("-");
            let output = read_output(&mut child, kill, printed.clone());
            let errors = read_errors(&mut child);
            let feeder = feed(&mut child, fed, self.line);
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
        // Last run: no new input; it drains what the store holds and exits. Draining a backlog
        // of thousands, one fsync each, takes longer than eip's 10 s default: the test's own
        // deadline bounds it instead.
        let mut child = self.eip_run_with("/dev/null", &["--drain-timeout", "300"]);
        drop(child.stdin.take());
        let output = read_output(&mut child, self.kills, printed);
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
        Fed { starts, total: fed }
    }

    fn eip_run(&self, input: &str) -> Child {
        self.eip_run_with(input, &[])
    }

    fn eip_run_with(&self, input: &str, more: &[&str]) -> Child {
        eip_run(&self.flow, &self.data, input, more)
    }
}

fn eip_run(flow: &Path, data: &Path, input: &str, more: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(flow)
        .arg("--data-dir")
        .arg(data)
        .args(["--input", input, "--receipts", "--stats-interval", "0"])
        .args(more)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip starts")
}

/// Hands each JSON line of a run's standard output to `printed` until it ends.
fn read_output(child: &mut Child, run: u64, printed: Printed) -> JoinHandle<()> {
    let stdout = child.stdout.take().expect("piped stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) {
                printed(run, &value);
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

/// Feeds messages without pause until the pipe breaks (the child died); the next `n`.
fn feed(child: &mut Child, first: u64, line: fn(u64) -> String) -> JoinHandle<u64> {
    let mut stdin = child.stdin.take().expect("piped stdin");
    std::thread::spawn(move || {
        let mut n = first;
        loop {
            if stdin.write_all(line(n).as_bytes()).is_err() {
                return n;
            }
            n += 1;
        }
    })
}
