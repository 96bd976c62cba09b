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
/// with `finish` (both odd, random per table).
pub(super) fn hash_bytes(bytes: &[u8], [start, step, finish]: [u64; 3]) -> u64 {
    let mut h = fold(start ^ bytes.len() as u64, step);
    for w in chunks(bytes) {
        h = fold(h ^ w, step);
    }
    fold(h, finish)
}

/// Three odd seeds from the process's random source, different for each call.
pub(super) fn random_seeds() -> [u64; 3] {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    [1_u64, 2, 3].map(|n| random.hash_one(n) | 1)
}
