//! Message ids: UUID v7, strictly increasing within a process, without a system call per id.
//!
//! The 48-bit millisecond timestamp and a 16-bit sequence live together in one atomic word, so
//! taking an id is a clock read and a compare-and-swap: within one millisecond the sequence
//! counts up, and past 65 536 ids in a millisecond the timestamp borrows from the next one (as
//! RFC 9562 allows), which keeps ids strictly increasing. The remaining 58 bits are random, from
//! a per-thread generator seeded once from the OS, so ids from different processes do not
//! collide. `uuid::Uuid::now_v7` asks the OS for randomness on every call, which costs more
//! than a channel hop.

use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use super::death::now_millis;

/// `timestamp_ms << 16 | sequence` of the last id handed out.
static LAST: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    // RandomState draws its keys from the OS once per thread; any non-zero value will do.
    let s = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    s | 1
}

fn random() -> u64 {
    RNG.with(|r| {
        // xorshift64*: fast, and good enough for the uniqueness bits.
        let mut x = r.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

fn next_stamp() -> u64 {
    let now = (now_millis() & 0xFFFF_FFFF_FFFF) << 16;
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last.wrapping_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// A new UUID v7, greater than every one made before it in this process.
pub(super) fn next_v7() -> Uuid {
    let stamp = next_stamp();
    let millis = stamp >> 16;
    let seq = stamp & 0xFFFF;
    let rand = random();
    let high: u64 = (millis << 16) | 0x7000 | (seq >> 4); // version 7, top 12 bits of sequence
    let low: u64 = (0b10 << 62) | ((seq & 0xF) << 58) | (rand >> 6); // variant, rest of sequence
    Uuid::from_u64_pair(high, low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_7_rfc_variant_and_carry_the_time() {
        let before = now_millis();
        let id = next_v7();
        let after = now_millis();
        assert_eq!(id.get_version_num(), 7);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        let (secs, nanos) = id.get_timestamp().unwrap().to_unix();
        let ms = secs * 1000 + u64::from(nanos) / 1_000_000;
        assert!(
            before <= ms && ms <= after + 1,
            "{before} <= {ms} <= {after}"
        );
    }

    #[test]
    fn ids_increase_strictly_across_threads() {
        let per_thread: Vec<Vec<Uuid>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20_000).map(|_| next_v7()).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ids in &per_thread {
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
        }
        let mut all: Vec<Uuid> = per_thread.into_iter().flatten().collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "no duplicates");
    }
}
