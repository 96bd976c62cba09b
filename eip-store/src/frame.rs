//! How a record is stored: a CRC-32C checksum, then the payload.
//!
//! redb checksums its pages, but verifies them only when it repairs a file after a crash; a page
//! damaged later (a bad sector, a stray write into a cleanly closed file) would be read back as
//! if it were right. So each record carries its own checksum, computed over the queue id, the
//! sequence number and the payload: a damaged payload, or a record found under the wrong key,
//! fails [`QueueLog::read`](crate::QueueLog::read) with
//! [`StoreError::Damaged`](crate::StoreError::Damaged) instead of returning wrong bytes.

/// The bytes a frame adds to its payload.
pub(crate) const OVERHEAD: usize = 4;

/// The frame of `payload`, record `seq` of queue `queue`.
pub(crate) fn encode(queue: u32, seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(OVERHEAD + payload.len());
    frame.extend_from_slice(&checksum(queue, seq, payload).to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// The payload of `frame`, if its checksum holds.
pub(crate) fn decode(queue: u32, seq: u64, frame: &[u8]) -> Option<&[u8]> {
    let (sum, payload) = frame.split_first_chunk::<OVERHEAD>()?;
    (u32::from_le_bytes(*sum) == checksum(queue, seq, payload)).then_some(payload)
}

/// The payload length of a stored frame, for the byte accounting.
pub(crate) fn payload_len(frame: &[u8]) -> u64 {
    frame.len().saturating_sub(OVERHEAD) as u64
}

/// The bytes of a stored frame after its checksum: the payload as it was found, kept when the
/// frame is damaged (all of the frame, if it is shorter than a checksum).
pub(crate) fn payload_part(frame: &[u8]) -> &[u8] {
    frame.get(OVERHEAD..).unwrap_or(frame)
}

/// CRC-32C (Castagnoli) of the queue id, the sequence number and the payload, one after the
/// other; with the processor's CRC instructions where it has them (SSE 4.2, ARMv8).
fn checksum(queue: u32, seq: u64, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&queue.to_le_bytes());
    let crc = crc32c::crc32c_append(crc, &seq.to_le_bytes());
    crc32c::crc32c_append(crc, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn the_checksum_is_the_crc_of_key_and_payload_together() {
        let mut whole = 3u32.to_le_bytes().to_vec();
        whole.extend_from_slice(&7u64.to_le_bytes());
        whole.extend_from_slice(b"payload");
        assert_eq!(checksum(3, 7, b"payload"), crc32c::crc32c(&whole));
    }

    #[test]
    fn a_frame_decodes_only_under_its_own_key_and_intact() {
        let frame = encode(3, 7, b"payload");
        assert_eq!(decode(3, 7, &frame), Some(&b"payload"[..]));
        assert_eq!(decode(3, 8, &frame), None);
        assert_eq!(decode(4, 7, &frame), None);
        let mut damaged = frame.clone();
        damaged[6] ^= 1;
        assert_eq!(decode(3, 7, &damaged), None);
        assert_eq!(decode(3, 7, &frame[..2]), None);
        assert_eq!(payload_len(&frame), 7);
    }
}
