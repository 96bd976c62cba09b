//! How long the store's commits take: a histogram of fixed buckets that the committer thread
//! counts into with relaxed atomic adds (two per commit), read by whoever watches the store
//! ([`DurableStore::stats`](crate::DurableStore::stats)).
//!
//! A commit's time runs from the start of its write transaction to the end of its commit,
//! fsync included when it is durable; a commit tried again on a reopened file counts once,
//! with both tries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The upper bounds of the commit latency buckets, in seconds; a last bucket takes what is
/// slower than all of them.
pub const COMMIT_BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The commits counted by how long they took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitLatency {
    /// Commits per bucket: `counts[i]` took at most `COMMIT_BUCKETS[i]` seconds and more than
    /// the bound before; the last counts those slower than every bound.
    pub counts: [u64; COMMIT_BUCKETS.len() + 1],
    /// Their time together, in nanoseconds.
    pub total_nanos: u64,
}

impl CommitLatency {
    /// How many commits were timed.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Each bound with the commits that took at most that long (cumulative, as Prometheus'
    /// `le` buckets are).
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        COMMIT_BUCKETS
            .iter()
            .zip(self.counts)
            .scan(0, |below, (bound, count)| {
                *below += count;
                Some((*bound, *below))
            })
    }

    /// Their time together, in seconds.
    pub fn total_seconds(&self) -> f64 {
        Duration::from_nanos(self.total_nanos).as_secs_f64()
    }
}

/// The committer's side: counts each commit into its bucket.
#[derive(Debug, Default)]
pub(crate) struct LatencyCounters {
    counts: [AtomicU64; COMMIT_BUCKETS.len() + 1],
    total_nanos: AtomicU64,
}

impl LatencyCounters {
    /// One commit that took `took`.
    pub(crate) fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = COMMIT_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(COMMIT_BUCKETS.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What was counted so far.
    pub(crate) fn read(&self) -> CommitLatency {
        CommitLatency {
            counts: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
            total_nanos: self.total_nanos.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_fall_into_their_buckets_and_add_up() {
        let counters = LatencyCounters::default();
        counters.record(Duration::from_micros(50));
        counters.record(Duration::from_micros(100));
        counters.record(Duration::from_millis(3));
        counters.record(Duration::from_secs(2));
        let read = counters.read();
        assert_eq!(read.count(), 4);
        assert_eq!(read.counts[0], 2, "at most 100 µs");
        assert_eq!(read.counts[5], 1, "in (2.5 ms, 5 ms]");
        assert_eq!(read.counts[COMMIT_BUCKETS.len()], 1, "past every bound");
        let cumulative: Vec<u64> = read.cumulative().map(|(_, n)| n).collect();
        assert_eq!(cumulative, [2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]);
        assert_eq!(read.total_nanos, 2_003_150_000);
    }
}
