//! How a key table's entry is stored: a CRC-32C checksum, the expiry, then the value.
//!
//! The checksum covers the table id, the key (with its length), the expiry and the value, so a
//! damaged value, a damaged expiry, or an entry found under another key or in another table
//! fails it, like a queue's record ([`frame`](crate::frame)). The expiry is milliseconds since
//! the Unix epoch, [`NEVER`] for an entry that does not expire.

/// The bytes a stored entry adds to its value: the checksum and the expiry.
pub(crate) const OVERHEAD: usize = 4 + 8;

/// The stored expiry of an entry without one.
pub(crate) const NEVER: u64 = u64::MAX;

/// An entry as read back, its checksum verified.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    pub(crate) expires_at: u64,
    pub(crate) value: &'a [u8],
}

impl Entry<'_> {
    /// Whether it has expired at `now_ms`.
    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at != NEVER && self.expires_at <= now_ms
    }
}

/// The stored form of `value` under `key` in table `table`.
pub(crate) fn encode(table: u32, key: &[u8], expires_at: u64, value: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(OVERHEAD + value.len());
    stored.extend_from_slice(&checksum(table, key, expires_at, value).to_le_bytes());
    stored.extend_from_slice(&expires_at.to_le_bytes());
    stored.extend_from_slice(value);
    stored
}

/// The entry `stored` under `key` in table `table`, if its checksum holds.
pub(crate) fn decode<'a>(table: u32, key: &[u8], stored: &'a [u8]) -> Option<Entry<'a>> {
    let (sum, rest) = stored.split_first_chunk::<4>()?;
    let (expires, value) = rest.split_first_chunk::<8>()?;
    let expires_at = u64::from_le_bytes(*expires);
    (u32::from_le_bytes(*sum) == checksum(table, key, expires_at, value))
        .then_some(Entry { expires_at, value })
}

/// The live bytes an entry counts against `max_bytes`: its key and its value, whether or not
/// its checksum holds (it occupies the disk either way).
pub(crate) fn live_len(key: &[u8], stored: &[u8]) -> u64 {
    (key.len() + stored.len().saturating_sub(OVERHEAD)) as u64
}

fn checksum(table: u32, key: &[u8], expires_at: u64, value: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&table.to_le_bytes());
    let crc = crc32c::crc32c_append(crc, &(key.len() as u64).to_le_bytes());
    let crc = crc32c::crc32c_append(crc, key);
    let crc = crc32c::crc32c_append(crc, &expires_at.to_le_bytes());
    crc32c::crc32c_append(crc, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_decodes_only_under_its_own_key_and_table_and_intact() {
        let stored = encode(2, b"key", 77, b"value");
        let entry = decode(2, b"key", &stored).expect("intact");
        assert_eq!((entry.expires_at, entry.value), (77, &b"value"[..]));
        assert_eq!(decode(2, b"kez", &stored), None);
        assert_eq!(decode(3, b"key", &stored), None);
        for at in 0..stored.len() {
            let mut damaged = stored.clone();
            damaged[at] ^= 0x10;
            assert_eq!(decode(2, b"key", &damaged), None, "byte {at} flipped");
        }
        assert_eq!(decode(2, b"key", &stored[..OVERHEAD - 1]), None);
        assert_eq!(live_len(b"key", &stored), 8);
    }

    #[test]
    fn an_entry_expires_at_its_time_and_never_without_one() {
        let stored = encode(0, b"k", 100, b"");
        let entry = decode(0, b"k", &stored).expect("intact");
        assert!(!entry.is_expired(99));
        assert!(entry.is_expired(100));
        let stored = encode(0, b"k", NEVER, b"");
        assert!(
            !decode(0, b"k", &stored)
                .expect("intact")
                .is_expired(u64::MAX)
        );
    }
}
