//! The hashing the topic module shares: one multiply-fold step, used for the trie's words and
//! the match cache's subjects.

/// The two halves of the 128-bit product, folded together.
pub(super) fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Little-endian 8-byte chunks of `bytes`, the last one zero-padded.
pub(super) fn chunks(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let whole = bytes.chunks_exact(8);
    let rest = whole.remainder();
    let last = (!rest.is_empty()).then(|| {
        let mut padded = [0_u8; 8];
        for (to, from) in padded.iter_mut().zip(rest) {
            *to = *from;
        }
        u64::from_le_bytes(padded)
    });
    whole
        .map(|chunk| {
            let mut w = [0_u8; 8];
            w.copy_from_slice(chunk);
            u64::from_le_bytes(w)
        })
        .chain(last)
}

/// A keyed hash of `bytes`: the length and each 8-byte chunk folded in with `step`, finished
/// with `finish` (both odd, random per table). The last, partial chunk is read as the last 8
/// bytes (overlapping the one before) when there are 8 or more, so every chunk is one load.
pub(super) fn hash_bytes(bytes: &[u8], [start, step, finish]: [u64; 3]) -> u64 {
    let mut h = fold(start ^ bytes.len() as u64, step);
    let whole = bytes.chunks_exact(8);
    let partial = !whole.remainder().is_empty();
    for chunk in whole {
        h = fold(h ^ u64_le(chunk), step);
    }
    if partial {
        let last = match bytes.len().checked_sub(8) {
            Some(at) => bytes.get(at..).map_or(0, u64_le),
            None => short(bytes),
        };
        h = fold(h ^ last, step);
    }
    fold(h, finish)
}

/// The first 8 bytes of `chunk`, little-endian (0 if it is shorter).
#[inline]
fn u64_le(chunk: &[u8]) -> u64 {
    chunk
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Up to 7 bytes as an integer, read with at most two loads, each byte in one of them.
#[inline]
fn short(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    };
    let byte_at = |at: usize| bytes.get(at).copied().map_or(0, u64::from);
    match n {
        4.. => u64::from(u32_at(0)) | u64::from(u32_at(n - 4)) << 32,
        1.. => byte_at(0) | byte_at(n / 2) << 8 | byte_at(n - 1) << 16,
        0 => 0,
    }
}

/// Three odd seeds from the process's random source, different for each call.
pub(super) fn random_seeds() -> [u64; 3] {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    [1_u64, 2, 3].map(|n| random.hash_one(n) | 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_hashes_depend_on_every_byte_and_the_length() {
        let seeds = random_seeds();
        let base = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let mut seen = std::collections::HashSet::new();
        for n in 0..=base.len() {
            let subject = &base[..n];
            assert!(seen.insert(hash_bytes(subject, seeds)), "length {n}");
            for i in 0..n {
                let mut changed = subject.to_vec();
                changed[i] ^= 1;
                assert!(
                    seen.insert(hash_bytes(&changed, seeds)),
                    "length {n}, byte {i}"
                );
            }
        }
        assert_ne!(hash_bytes(b"a\0", seeds), hash_bytes(b"a", seeds));
    }
}
