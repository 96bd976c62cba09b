//! Reload without loss, under load: an `eip run` of a durable flow is fed continuously on its
//! standard input (with `--receipts`) while its flow file is changed 20 times and reloaded by
//! SIGHUP: channels and routes added and removed, a route's target changed, a join added and
//! removed, a file with an error, a file changing what needs a restart. Every message the flow
//! confirmed (`{"accepted": id}`) must come out of exactly one of the flow's `done-*` output
//! channels, once: none lost, none duplicated.
//!
//! Bounded in time: every wait has a limit, and the child is killed whatever the outcome.

mod support {
    pub mod scratch;
}

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use support::scratch::Scratch;

/// The flow at start: orders are billed, then finished into `done-a`.
const BASE: &str = "
channels:
  orders: {kind: point-to-point, durable: true}
  billed: {kind: point-to-point, durable: true}
  done-a: {kind: point-to-point, durable: true}
  quotes: {kind: publish-subscribe}
  archive: {kind: point-to-point}
routes:
  - name: bill
    from: orders
    to: billed
  - name: finish
    from: billed
    to: done-a
";

/// A channel more: `done-b`.
fn with_done_b() -> String {
    BASE.replace(
        "  quotes:",
        "  done-b: {kind: point-to-point, durable: true}\n  quotes:",
    )
}

/// `finish` sends to `done-b` instead.
fn finish_to_b() -> String {
    with_done_b().replace("    to: done-a", "    to: done-b")
}

/// A stage more: `bill` sends to a new channel `checked`, a new route `check` takes it on to
/// `billed`.
fn with_check() -> String {
    finish_to_b()
        .replace(
            "  quotes:",
            "  checked: {kind: point-to-point, durable: true}\n  quotes:",
        )
        .replace(
            "    from: orders\n    to: billed",
            "    from: orders\n    to: checked\n  - name: check\n    from: checked\n    to: billed",
        )
}

/// A join more.
fn with_join() -> String {
    format!(
        "{}joins:\n  - {{from: quotes, to: archive}}\n",
        with_check()
    )
}

/// The versions of the file, in the order written: each with whether its reload is applied.
fn versions() -> Vec<(&'static str, String, bool)> {
    let cycle = vec![
        ("channel added", with_done_b(), true),
        ("route target changed", finish_to_b(), true),
        ("channel and route added", with_check(), true),
        ("join added", with_join(), true),
        (
            "a route to an unknown channel",
            with_join().replace("to: done-b", "to: done-c"),
            false,
        ),
        ("channel, route and join removed", finish_to_b(), true),
        (
            "a channel declared differently",
            finish_to_b().replace(
                "archive: {kind: point-to-point}",
                "archive: {kind: point-to-point, capacity: 5}",
            ),
            false,
        ),
        ("back to the start", BASE.to_owned(), true),
        ("not YAML", "channels: [orders\n".to_owned(), false),
        ("a route added (the next version removes it)", BASE.replace("  - name: finish\n    from: billed\n    to: done-a\n", "  - name: finish\n    from: billed\n    to: done-a\n  - name: spare\n    from: archive\n    to: done-a\n"), true),
    ];
    cycle.iter().chain(&cycle).cloned().collect()
}

/// The time between two reloads, while messages flow.
const PAUSE: Duration = Duration::from_millis(400);

/// The child, killed and reaped when dropped whatever happened.
struct Eip(Child);

impl Drop for Eip {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many orders may be written and not yet confirmed: the feed keeps up with the flow, so
/// that what is sent is sent while the file changes (not queued in the pipe for later).
const WINDOW: u64 = 50;

/// Writes orders to the child's input, at most [`WINDOW`] ahead of the receipts counted in
/// `confirmed`, until told to stop; how many it wrote.
fn feed(
    mut input: ChildStdin,
    confirmed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if n >= confirmed.load(Ordering::Relaxed) + WINDOW {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let line = format!("{{\"to\": \"orders\", \"payload\": {{\"n\": {n}}}}}\n");
            if input
                .write_all(line.as_bytes())
                .and_then(|()| input.flush())
                .is_err()
            {
                break;
            }
            n += 1;
        }
        n
        // Dropping the input ends it: eip drains and exits.
    })
}

/// Reads the child's lines on a thread, counting in `receipts` those that confirm a message.
fn lines(
    from: impl std::io::Read + Send + 'static,
    receipts: Arc<AtomicU64>,
) -> mpsc::Receiver<String> {
    let (tell, said) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if line.starts_with("{\"accepted\"") {
                receipts.fetch_add(1, Ordering::Relaxed);
            }
            if tell.send(line).is_err() {
                break;
            }
        }
    });
    said
}

/// Waits (30 s at most) for the line that says what the reload did.
fn outcome(stderr: &mpsc::Receiver<String>, seen: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = stderr
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no reload outcome in 30 s; eip said: {seen:#?}"));
        seen.push(line.clone());
        if line.starts_with("[eip] reload") {
            return line;
        }
    }
}

fn signal(child: &Child, signal: libc::c_int) {
    // The child is ours and alive (killed only when dropped).
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

fn write(path: &Path, text: &str) {
    // Written aside and renamed, so a reload never reads half a file.
    let aside = path.with_extension("new");
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(&aside, path).unwrap();
}

#[test]
fn twenty_reloads_under_load_lose_and_duplicate_nothing() {
    let dir = Scratch::new("reload-load");
    let flow = dir.0.join("flow.yaml");
    write(&flow, BASE);
    let mut eip = Eip(Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(&flow)
        .args(["--input", "-", "--receipts", "--stats-interval", "0"])
        .args(["--drain-timeout", "20"])
        .arg("--data-dir")
        .arg(dir.0.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip runs"));
    let receipts = Arc::new(AtomicU64::new(0));
    let stdout = lines(eip.0.stdout.take().expect("its output"), receipts.clone());
    let stderr = lines(
        eip.0.stderr.take().expect("its standard error"),
        receipts.clone(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let input = eip.0.stdin.take().expect("its input");
    let feeder = feed(input, receipts.clone(), stop.clone());

    // A first receipt says the flow runs (and listens for SIGHUP).
    let first = stdout
        .recv_timeout(Duration::from_secs(30))
        .expect("a first receipt within 30 s");
    let mut seen = Vec::new();
    let versions = versions();
    let started = Instant::now();
    for (what, text, applied) in &versions {
        std::thread::sleep(PAUSE);
        write(&flow, text);
        signal(&eip.0, libc::SIGHUP);
        let said = outcome(&stderr, &mut seen);
        let refused = said.starts_with("[eip] reload refused");
        assert_eq!(
            !refused, *applied,
            "{what}: applied? eip said {said}; before: {seen:#?}"
        );
        eprintln!("{what}: {said}");
    }
    std::thread::sleep(PAUSE);
    stop.store(true, Ordering::Relaxed);
    let written = feeder.join().expect("the feeder wrote");

    // The input ended: eip drains and exits on its own.
    let deadline = Instant::now() + Duration::from_secs(60);
    let reloading = started.elapsed();
    let status = loop {
        if let Some(status) = eip.0.try_wait().expect("its status") {
            break status;
        }
        if Instant::now() > deadline {
            let said: Vec<String> = stderr.try_iter().collect();
            panic!("eip did not exit 60 s after its input ended; it said {said:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut confirmed = HashSet::new();
    let mut out: HashMap<String, usize> = HashMap::new();
    let mut dead = 0;
    for line in std::iter::once(first).chain(stdout.try_iter()) {
        let json: serde_json::Value = serde_json::from_str(&line).expect("JSON lines");
        if let Some(id) = json["accepted"].as_str() {
            confirmed.insert(id.to_owned());
        } else if let Some(channel) = json["channel"].as_str() {
            let id = json["id"].as_str().unwrap_or_default().to_owned();
            if channel.starts_with("done-") {
                *out.entry(id).or_default() += 1;
            } else if channel == "dead-letters" {
                dead += 1;
            }
        }
    }
    let rest: Vec<String> = stderr.try_iter().collect();

    assert!(
        status.success(),
        "eip exited with {status}; it said {rest:#?}"
    );
    let lost = confirmed.iter().filter(|id| !out.contains_key(*id)).count();
    let duplicates: usize = out.values().map(|n| n - 1).sum();
    let unknown = out.keys().filter(|id| !confirmed.contains(*id)).count();
    println!(
        "reload test: {} reloads, {} confirmed, {lost} lost, {duplicates} duplicates \
         ({:.1} s of reloads while fed)",
        versions.len(),
        confirmed.len(),
        reloading.as_secs_f64()
    );
    assert!(
        confirmed.len() as u64 == written,
        "{written} written, {} confirmed",
        confirmed.len()
    );
    assert!(confirmed.len() > 100, "the flow was fed while it reloaded");
    assert_eq!(
        (lost, duplicates, unknown, dead),
        (0, 0, 0, 0),
        "eip said {rest:#?}"
    );
}
