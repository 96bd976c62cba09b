//! What eip's benchmarks against outside systems share: the compare line measured by
//! alternating rounds (and the [`Setting`] that runs a comparison's rounds against brokers),
//! the window of messages in flight end to end, numbered payloads, and the process's memory
//! figures.
//!
//! These benchmarks need things the core crates must not depend on (a broker client), so they
//! live in a crate of their own. The compare line is the one eip-core's benches print
//! (`eip-core/benches/support`): on a shared two-core machine the load drifts, so eip and
//! baseline rounds alternate and the line compares their medians.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

pub mod disk;

// The compare line and its alternating rounds are eip-core's benches' own, shared from there.
#[path = "../../eip-core/benches/support/mod.rs"]
mod compare;

pub use compare::{alternating_medians, measuring, median, print_compare};

/// Which parts of a bench run: like criterion's filter, those whose names contain one of the
/// words given on the command line (`window 256`, `recovery`, `sql`); every part without one.
pub struct Filter(Vec<String>);

impl Filter {
    /// The words of this run's command line (options, starting with `--`, left out).
    pub fn from_args() -> Self {
        Filter(
            std::env::args()
                .skip(1)
                .filter(|a| !a.starts_with("--"))
                .collect(),
        )
    }

    /// Whether the part `name` runs.
    pub fn selects(&self, name: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|word| name.contains(word.as_str()))
    }
}

/// The runtime every bench runs on: two workers, like the machine's two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Nanoseconds per item.
pub fn per_item(elapsed: Duration, items: usize) -> f64 {
    elapsed.as_nanos() as f64 / items as f64
}

/// The longest a round may take before the run gives up on it (a lost message would otherwise
/// leave it waiting for ever).
pub const ROUND_LIMIT: Duration = Duration::from_secs(60);

/// How a bench's comparisons against brokers run: on which runtime, how many alternating
/// rounds of how many messages.
pub struct Setting<'a> {
    pub rt: &'a tokio::runtime::Runtime,
    pub rounds: usize,
    pub messages: usize,
}

/// Which side of a comparison a round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Eip,
    Raw,
}

impl Setting<'_> {
    /// Alternates eip and baseline rounds of `round` (given the messages and the side, timing
    /// what it measures) and prints the compare line `name`; or a line saying it was skipped
    /// when `reachable` says a broker is not there. The medians, eip's and the baseline's, in
    /// ns per message, when it ran.
    pub fn compare<F: Future<Output = Duration>>(
        &self,
        name: &str,
        baseline: &str,
        reachable: impl Future<Output = Result<(), String>>,
        round: impl Fn(usize, Side) -> F,
    ) -> Option<(f64, f64)> {
        if let Err(e) = self.rt.block_on(reachable) {
            println!("{name}: {e}: skipped");
            return None;
        }
        let messages = self.messages;
        let timed = |side: Side, label: &str, n: usize| {
            let elapsed = self
                .rt
                .block_on(async { tokio::time::timeout(ROUND_LIMIT, round(messages, side)).await })
                .unwrap_or_else(|_| panic!("{name}: a {label} round took over {ROUND_LIMIT:?}"));
            let ns = per_item(elapsed, messages);
            eprintln!("  {name} round {n}: {label} {ns:.0} ns/msg");
            ns
        };
        let (eip_ns, raw_ns) = alternating_medians(
            self.rounds,
            |n| timed(Side::Eip, "eip", n),
            |n| timed(Side::Raw, "raw", n),
        );
        print_compare(name, eip_ns, raw_ns, baseline);
        Some((eip_ns, raw_ns))
    }
}

/// At most `window` messages in flight end to end: a message leaves the window once its send
/// has completed (on disk, or confirmed by the broker) *and* its consumer has acked it, in
/// whichever order the two happen. Both sides report both events by message number.
pub struct Window {
    permits: Semaphore,
    /// Per message, how many of its two events have happened.
    events: Vec<AtomicU8>,
    done: AtomicUsize,
    finished: Notify,
}

impl Window {
    /// A window of `window` messages over a run of `messages`.
    pub fn new(window: usize, messages: usize) -> Arc<Self> {
        Arc::new(Window {
            permits: Semaphore::new(window),
            events: (0..messages).map(|_| AtomicU8::new(0)).collect(),
            done: AtomicUsize::new(0),
            finished: Notify::new(),
        })
    }

    /// Waits for room to send one more message.
    pub async fn enter(&self) {
        self.permits
            .acquire()
            .await
            .expect("the window's semaphore is never closed")
            .forget();
    }

    /// Message `i` was stored (its send completed) or acked: the second of the two lets the
    /// next message in.
    pub fn event(&self, i: usize) {
        if self.events[i].fetch_add(1, Ordering::AcqRel) == 1 {
            self.permits.add_permits(1);
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.events.len() {
                self.finished.notify_one();
            }
        }
    }

    /// Waits until every message of the run is stored and acked.
    pub async fn finished(&self) {
        let notified = self.finished.notified();
        if self.done.load(Ordering::Acquire) == self.events.len() {
            return;
        }
        notified.await;
    }
}

/// Bytes in every payload.
pub const PAYLOAD_LEN: usize = 1024;

/// A payload of [`PAYLOAD_LEN`] bytes carrying its message number in its first eight.
pub fn numbered_payload(i: usize) -> Vec<u8> {
    let mut payload = vec![b'x'; PAYLOAD_LEN];
    payload[..8].copy_from_slice(&(i as u64).to_le_bytes());
    payload
}

/// The message number of a [`numbered_payload`].
pub fn payload_number(payload: &[u8]) -> usize {
    let bytes: [u8; 8] = payload[..8].try_into().expect("a numbered payload");
    usize::try_from(u64::from_le_bytes(bytes)).expect("a message number fits")
}

/// The process's resident memory, from `/proc/self/status` (Linux), in KiB.
#[derive(Debug, Clone, Copy)]
pub struct MemoryStatus {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the peak resident size so far.
    pub peak_kib: u64,
}

impl MemoryStatus {
    /// Reads the figures now; `None` where `/proc` is not there.
    pub fn read() -> Option<MemoryStatus> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let field = |name: &str| {
            status.lines().find_map(|line| {
                let rest = line.strip_prefix(name)?.strip_prefix(':')?;
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        Some(MemoryStatus {
            rss_kib: field("VmRSS")?,
            peak_kib: field("VmHWM")?,
        })
    }
}

/// Asks the kernel to drop the cached pages of every file in `dir` (not below it), so that the
/// next read comes from the disk; the files must be on disk already (fsynced), as dirty pages
/// are not dropped. Only these files are affected, not the rest of the machine's cache.
/// Linux only; elsewhere (or on an error) says why.
pub fn evict_from_page_cache(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if !path.is_file() {
                continue;
            }
            let file = std::fs::File::open(&path)?;
            // SAFETY: `file` is an open descriptor for the whole call; the advice reads nothing
            // from our memory.
            let result =
                unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if result != 0 {
                return Err(std::io::Error::from_raw_os_error(result));
            }
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "evicting from the page cache needs Linux",
        ))
    }
}

/// Resident pages of every file in `dir` (not below it), in KiB, counted with `mincore`
/// (Linux); to check that an eviction took.
#[cfg(target_os = "linux")]
pub fn cached_kib(dir: &std::path::Path) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let page = 4096u64;
    let mut resident = 0u64;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let len = std::fs::metadata(&path)?.len();
        if !path.is_file() || len == 0 {
            continue;
        }
        let file = std::fs::File::open(&path)?;
        let size = usize::try_from(len).expect("a file fits the address space");
        // SAFETY: a read-only shared mapping of an open file of `size` bytes, unmapped below;
        // only mincore looks at it, no byte is read through it.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            if map == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let pages = size.div_ceil(page as usize);
            let mut flags = vec![0u8; pages];
            let result = libc::mincore(map, size, flags.as_mut_ptr());
            libc::munmap(map, size);
            if result != 0 {
                return Err(std::io::Error::last_os_error());
            }
            resident += flags.iter().filter(|&&f| f & 1 == 1).count() as u64;
        }
    }
    Ok(resident * page / 1024)
}

/// Elsewhere than Linux: not counted.
#[cfg(not(target_os = "linux"))]
pub fn cached_kib(_dir: &std::path::Path) -> std::io::Result<u64> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "counting cached pages needs Linux",
    ))
}

/// A directory under the system's temp dir, removed (with what it holds) when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// A fresh, not yet created, path named after `label`, the process and a counter.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        TempDir(std::env::temp_dir().join(format!("eip-bench-{label}-{}-{n}", std::process::id())))
    }

    /// The path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_carries_its_number() {
        let payload = numbered_payload(123_456);
        assert_eq!(payload.len(), PAYLOAD_LEN);
        assert_eq!(payload_number(&payload), 123_456);
    }

    #[tokio::test]
    async fn a_message_leaves_the_window_after_both_its_events() {
        let window = Window::new(1, 2);
        window.enter().await;
        window.event(0);
        assert!(
            window.permits.try_acquire().is_err(),
            "stored, not yet acked"
        );
        window.event(0);
        window.enter().await;
        window.event(1);
        window.event(1);
        window.finished().await;
    }

    #[test]
    fn memory_figures_are_read_on_linux() {
        if cfg!(target_os = "linux") {
            let status = MemoryStatus::read().expect("figures");
            assert!(status.peak_kib >= status.rss_kib && status.rss_kib > 0);
        }
    }
}
