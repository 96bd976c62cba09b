//! Building a store of known records, finding them in its file, and damaging it.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use eip_store::{DurableStore, QueueLog, StoreConfig, StoreError};

/// redb's page size: the unit a damaged sector or a zeroed block takes out.
pub const PAGE: usize = 4096;

pub fn database(dir: &Path) -> PathBuf {
    dir.join("store.redb")
}

/// The payload of record `i`: a marker found once in the file, then filler.
pub fn payload(i: u64, len: usize) -> Bytes {
    let mut bytes = format!("<record {i:06}>").into_bytes();
    bytes.resize(len.max(bytes.len()), b'.');
    Bytes::from(bytes)
}

/// A store in `dir` holding `count` records of `len` bytes in queue "q", closed cleanly; the
/// same file on every run.
pub fn store_with(dir: &Path, count: u64, len: usize) -> Vec<(u64, Bytes)> {
    let store = DurableStore::open(dir, StoreConfig::default()).expect("the store opens");
    let queue = store.queue("q").expect("queue q");
    let records: Vec<Bytes> = (0..count).map(|i| payload(i, len)).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    // One commit per record, so that the file's layout is the same on every run
    runtime.block_on(async {
        for record in &records {
            queue
                .append(record.clone())
                .expect("append")
                .await
                .expect("durable");
        }
    });
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .collect()
}

/// Where each record's stored bytes (checksum and payload) lie in the file, by record; the
/// first 16 bytes of each payload must be found once in the file.
pub fn spans(file: &[u8], records: &[(u64, Bytes)]) -> Vec<std::ops::Range<usize>> {
    records
        .iter()
        .map(|(_, payload)| {
            // Each record starts with bytes of its own (its number)
            let start = &payload[..payload.len().min(16)];
            let at = find(file, start).expect("every record is in the file");
            at - 4..at + payload.len()
        })
        .collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The pages a byte range touches.
pub fn pages(span: &std::ops::Range<usize>) -> std::ops::RangeInclusive<usize> {
    span.start / PAGE..=(span.end.max(span.start + 1) - 1) / PAGE
}

/// Every record of "q" from the start, read on past damage: Ok(records) or the first error.
pub fn read_all(queue: &QueueLog) -> Result<Vec<(u64, Bytes)>, StoreError> {
    let mut all = Vec::new();
    let mut from = 0;
    while from < queue.head() {
        let page = queue.read_page(from, 64)?;
        assert!(
            page.next > from || !page.records.is_empty(),
            "a read makes progress"
        );
        from = page.next;
        all.extend(page.records);
    }
    Ok(all)
}

/// Deterministic noise (xorshift), so a failure can be replayed.
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}
