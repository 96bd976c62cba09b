//! The waits between reconnection attempts.

use std::time::Duration;

/// Exponential backoff with jitter: `initial`, then doubling up to `max`, each wait shortened
/// by a random part of up to a quarter (so processes that lost the same broker do not all come
/// back at the same instant). [`reset`](Backoff::reset) after a success starts again.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
    seed: u64,
}

impl Backoff {
    /// Waits from `initial` up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64)
            | 1;
        Backoff {
            initial,
            max: max.max(initial),
            next: initial,
            seed,
        }
    }

    /// The next wait, and the one after it grows.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let jitter = wait.as_nanos() as u64 / 4;
        let cut = if jitter == 0 { 0 } else { self.seed % jitter };
        wait - Duration::from_nanos(cut)
    }

    /// Back to the first wait, after a success.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

impl Default for Backoff {
    /// 100 ms, doubling up to 10 s.
    fn default() -> Self {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_with_at_most_a_quarter_taken_off() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let waits: Vec<Duration> = (0..5).map(|_| b.next_wait()).collect();
        let nominal = [100, 200, 400, 500, 500];
        for (wait, ms) in waits.iter().zip(nominal) {
            let ms = Duration::from_millis(ms);
            assert!(*wait <= ms && *wait >= ms * 3 / 4, "{wait:?} for {ms:?}");
        }
        b.reset();
        assert!(b.next_wait() <= Duration::from_millis(100));
    }
}
