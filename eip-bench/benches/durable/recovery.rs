//! Recovery after a crash with a million messages waiting: what a user waits for when the
//! process restarts after a SIGKILL, from a cold page cache (as after a reboot) where the
//! machine lets the bench drop it.
//!
//! Each step is a process of its own, so that no destructor of an earlier step runs and each
//! memory figure is its process's alone:
//!
//! 1. `--fill-child`: fills a durable channel with the messages from [`FILL_SENDERS`] senders,
//!    prints its figures and, once every send has been confirmed, kills itself with SIGKILL at
//!    once: the store had no idle moment to record a checkpoint, so the next open repairs the
//!    whole file, which is the worst case.
//! 2. `--recover-child`: after the page cache is dropped, times `Durable::open`, building the
//!    channel and receiving the first message; prints that and the process's peak RSS
//!    (`VmHWM`), checks that every message is counted, and closes cleanly.
//! 3. `--idle-child`: opens the store again, sends one more message, waits until the store has
//!    recorded its idle checkpoint, and kills itself with SIGKILL.
//! 4. `--recover-child` again, cold again: a crash of a store that had been quiet for a moment.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_bench::{MemoryStatus, PAYLOAD_LEN, TempDir, runtime};
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::store::durable::{Durable, StoreConfig};

const RECOVERY_MESSAGES: usize = 1_000_000;
/// The filled channel's capacity: twice what it holds, because a durable channel filled to
/// exactly its capacity by concurrent senders leaves some sends waiting forever (see
/// `tests/durable_capacity.rs`).
const RECOVERY_CAPACITY: usize = 2 * RECOVERY_MESSAGES;
/// Senders filling the channel, each one send at a time.
const FILL_SENDERS: usize = 512;
/// How long the idle child waits for the store's checkpoint before giving up.
const CHECKPOINT_LIMIT: Duration = Duration::from_secs(30);

/// If this process is one of the recovery children, runs it and returns true.
pub(crate) fn child(args: &[String]) -> bool {
    let arg = move |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    match arg(1) {
        "--fill-child" => fill_child(Path::new(arg(2)), number(arg(3))),
        "--recover-child" => recover_child(Path::new(arg(2)), number(arg(3)), arg(4), arg(5)),
        "--idle-child" => idle_child(Path::new(arg(2))),
        _ => return false,
    }
    true
}

fn number(arg: &str) -> usize {
    arg.parse()
        .unwrap_or_else(|_| panic!("a message count, not {arg:?}"))
}

/// The parent's side: the four steps, in a temp dir removed afterwards.
pub(crate) fn run(measuring: bool) {
    let messages = if measuring { RECOVERY_MESSAGES } else { 10_000 };
    let dir = TempDir::new("recovery");
    let path = dir.path().to_string_lossy().into_owned();
    let count = messages.to_string();
    killed(&["--fill-child", &path, &count]);
    let cache = cold(dir.path());
    succeeded(&[
        "--recover-child",
        &path,
        &count,
        "killed at once after the last confirm",
        &cache,
    ]);
    killed(&["--idle-child", &path]);
    let cache = cold(dir.path());
    let count = (messages + 1).to_string();
    succeeded(&[
        "--recover-child",
        &path,
        &count,
        "killed after its idle checkpoint",
        &cache,
    ]);
}

fn command(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the bench's own path"));
    command.args(args);
    command
}

/// Runs a child that must end killed by SIGKILL.
fn killed(args: &[&str]) {
    let status = command(args).status().expect("the child starts");
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "{} should have been killed by SIGKILL: {status}",
        args[0]
    );
}

fn succeeded(args: &[&str]) {
    let status = command(args).status().expect("the child starts");
    assert!(status.success(), "{} failed: {status}", args[0]);
}

/// Empties the page cache before a recovery; what the recovery reads from then, in words.
fn cold(dir: &Path) -> String {
    match eip_bench::disk::drop_page_cache() {
        Ok(()) => "cold page cache (dropped)".into(),
        Err(drop_error) => match eip_bench::evict_from_page_cache(dir) {
            Ok(()) => format!(
                "store's files evicted with fadvise ({drop_error}), the rest of the cache warm"
            ),
            Err(error) => format!("WARM page cache ({drop_error}; fadvise: {error})"),
        },
    }
}

fn kill_self() -> ! {
    // SAFETY: kill(2) on our own pid; nothing of ours is touched.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    unreachable!("SIGKILL ends the process")
}

fn open(dir: &Path) -> (Arc<Durable>, PointToPoint) {
    let store = Arc::new(Durable::open(dir, StoreConfig::default()).expect("store opens"));
    let channel = PointToPoint::builder("bench")
        .capacity(RECOVERY_CAPACITY)
        .store(store.clone())
        .build()
        .expect("channel builds");
    (store, channel)
}

/// Fills a fresh channel in `dir` with `messages`, then dies by SIGKILL with them waiting.
fn fill_child(dir: &Path, messages: usize) {
    let rt = runtime();
    let before = MemoryStatus::read();
    rt.block_on(async {
        let (store, channel) = open(dir);
        let payload = bytes::Bytes::from(vec![b'x'; PAYLOAD_LEN]);
        let started = Instant::now();
        let progress = tokio::spawn({
            let channel = channel.clone();
            let store = store.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    eprintln!(
                        "  filling: {} stored after {:.0} s ({} commits)",
                        channel.stats().depth,
                        started.elapsed().as_secs_f64(),
                        store.store().stats().commits
                    );
                }
            }
        });
        let senders: Vec<_> = (0..FILL_SENDERS)
            .map(|s| {
                let channel = channel.clone();
                let payload = payload.clone();
                tokio::spawn(async move {
                    for _ in (s..messages).step_by(FILL_SENDERS) {
                        channel
                            .send(Message::new(payload.clone()))
                            .await
                            .expect("stored");
                    }
                })
            })
            .collect();
        for sender in senders {
            sender.await.expect("a sender finishes");
        }
        let elapsed = started.elapsed();
        progress.abort();
        assert_eq!(channel.stats().depth, messages, "every message stored");
        let stats = store.store().stats();
        // Checkpoints during the fill (a pause of the machine) came before later commits: the
        // last commit is a plain one either way
        println!(
            "detail: filled {messages} messages in {:.1} s with {FILL_SENDERS} senders ({} commits, {} checkpoints)",
            elapsed.as_secs_f64(),
            stats.commits,
            stats.checkpoints
        );
        if let (Some(before), Some(filled)) = (before, MemoryStatus::read()) {
            println!(
                "detail: peak RSS of the filling process with {messages} messages waiting: {} MiB (before filling: {} MiB)",
                filled.peak_kib / 1024,
                before.peak_kib / 1024
            );
        }
        // Every send is confirmed; no idle moment for a checkpoint: the crash comes now
        kill_self()
    })
}

/// Opens the store a crash left in `dir`, adds one message, waits for the idle checkpoint,
/// and dies by SIGKILL.
fn idle_child(dir: &Path) {
    let rt = runtime();
    rt.block_on(async {
        let (store, channel) = open(dir);
        let before = store.store().stats().checkpoints;
        channel
            .send(Message::new(vec![b'x'; PAYLOAD_LEN]))
            .await
            .expect("stored");
        let sent = Instant::now();
        while store.store().stats().checkpoints == before {
            assert!(
                sent.elapsed() < CHECKPOINT_LIMIT,
                "no checkpoint within {CHECKPOINT_LIMIT:?} of the last send"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "detail: checkpoint recorded {:.0} ms after the last send",
            sent.elapsed().as_secs_f64() * 1000.0
        );
        kill_self()
    })
}

/// Times the restart after a crash: open, channel, first message; prints it with the peak RSS.
fn recover_child(dir: &Path, messages: usize, how: &str, cache: &str) {
    let rt = runtime();
    let started = Instant::now();
    let store = Arc::new(Durable::open(dir, StoreConfig::default()).expect("store reopens"));
    let opened = started.elapsed();
    let channel = PointToPoint::builder("bench")
        .capacity(RECOVERY_CAPACITY)
        .store(store.clone())
        .build()
        .expect("channel builds");
    let built = started.elapsed();
    let first = rt
        .block_on(channel.receiver().recv())
        .expect("a first message");
    let first_at = started.elapsed();
    assert_eq!(first.message().payload().len(), PAYLOAD_LEN);
    let stats = channel.stats();
    let peak = MemoryStatus::read().map_or_else(
        || "not available".to_string(),
        |m| format!("{} MiB", m.peak_kib / 1024),
    );
    println!(
        "recovery after SIGKILL ({how}), {cache}: {messages} messages waiting, open + channel + first message in {:.3} s, peak RSS {peak}",
        first_at.as_secs_f64()
    );
    println!(
        "detail: recovery: redb {} the file; open {:.3} s, channel built at {:.3} s, first message at {:.3} s",
        if store.store().repaired_on_open() {
            "repaired (read the whole of)"
        } else {
            "did not repair"
        },
        opened.as_secs_f64(),
        built.as_secs_f64(),
        first_at.as_secs_f64()
    );
    let counted = stats.depth + stats.in_flight;
    // Not acked: the message stays on disk for the next step.
    drop(first);
    drop(channel);
    drop(store);
    drop(rt);
    assert_eq!(
        counted,
        messages,
        "every message counted after recovery in {}",
        PathBuf::from(dir).display()
    );
}
