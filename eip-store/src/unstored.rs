//! Records durable in the journal and not yet in the database file: read from memory.
//!
//! A round of the committer that only appends and acks answers its senders as soon as its
//! journal record is fdatasynced, before its database transaction commits
//! (`committer::publish`): the commit, about half of a window-1 round's work, then runs while
//! the senders and consumers go on instead of before them. Between the answer and the commit
//! the round's records are durable and counted in the queue's head, but a read transaction of
//! the database does not see them yet. They wait here, and
//! [`QueueLog::read_page`](crate::QueueLog::read_page) reads them from here: a record is
//! readable once its append is answered, as before.
//!
//! A committed round's records stay one round longer (until the next round commits, or any
//! round that is not published): a reader woken by the round's sender, or by its commit (see
//! `committer::publish`), finds them here even once the commit is done, and the next round
//! (where a window of one has their acks) drops them before it answers those acks, that is
//! before reads stop passing over the acknowledged records.
//!
//! The order that makes this safe: the committer adds a record here before it advances the
//! queue's head past it, and takes it out only after it advanced [`stored`](Unstored::stored)
//! past it, once the database holds it. A read takes the head first, then the records here,
//! then `stored`: each record before the head it took is among those it took from here, or
//! before the `stored` it took, and so in the database its read transaction (begun after) sees.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

/// One queue's records durable in the journal and not yet in the database.
#[derive(Debug)]
pub(crate) struct Unstored {
    /// Every record before this is in the database file (committed, without an fsync).
    stored: AtomicU64,
    /// The records from `stored` on that the database does not hold yet, in order.
    records: Mutex<VecDeque<(u64, Bytes)>>,
}

impl Unstored {
    /// For a queue whose records before `head` are all in the database.
    pub(crate) fn new(head: u64) -> Unstored {
        Unstored {
            stored: AtomicU64::new(head),
            records: Mutex::new(VecDeque::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<(u64, Bytes)>> {
        // A queue of records: consistent whatever panicked while holding it
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every record before this is in the database file.
    pub(crate) fn stored(&self) -> u64 {
        self.stored.load(Ordering::Acquire)
    }

    /// Keeps `record` (durable, not yet in the database) for reads; before the head passes it.
    pub(crate) fn add(&self, seq: u64, record: Bytes) {
        self.lock().push_back((seq, record));
    }

    /// The database holds every record before `head`: none is kept here any more.
    pub(crate) fn stored_up_to(&self, head: u64) {
        self.stored.fetch_max(head, Ordering::AcqRel);
        self.drop_before(head);
    }

    /// The published round that ends at `head` is committed: the database holds its records,
    /// and those of the rounds before it are no longer kept. Its own stay until the next
    /// round's commit: a reader woken when it was published (and the acks that follow, in the
    /// next round) find them here without a read of the database.
    pub(crate) fn committed(&self, head: u64) {
        let previous = self.stored.fetch_max(head, Ordering::AcqRel);
        self.drop_before(previous.min(head));
    }

    fn drop_before(&self, seq: u64) {
        let mut records = self.lock();
        while records.front().is_some_and(|(kept, _)| *kept < seq) {
            records.pop_front();
        }
    }

    /// The length of the record `seq`, if it is kept here.
    pub(crate) fn len_of(&self, seq: u64) -> Option<u64> {
        let records = self.lock();
        let at = records.binary_search_by_key(&seq, |(seq, _)| *seq).ok()?;
        Some(records[at].1.len() as u64)
    }

    /// The records kept here with a sequence number of at least `from`, in order.
    pub(crate) fn from(&self, from: u64) -> Vec<(u64, Bytes)> {
        let records = self.lock();
        if records.is_empty() {
            return Vec::new();
        }
        records
            .iter()
            .filter(|(seq, _)| *seq >= from)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_leave_once_the_database_holds_them() {
        let unstored = Unstored::new(5);
        assert_eq!(unstored.stored(), 5);
        unstored.add(5, Bytes::from_static(b"a"));
        unstored.add(6, Bytes::from_static(b"bb"));
        unstored.add(7, Bytes::from_static(b"c"));
        assert_eq!(
            (unstored.len_of(4), unstored.len_of(6), unstored.len_of(8)),
            (None, Some(2), None)
        );
        assert_eq!(
            unstored.from(6),
            vec![
                (6, Bytes::from_static(b"bb")),
                (7, Bytes::from_static(b"c"))
            ]
        );
        unstored.stored_up_to(7);
        assert_eq!(unstored.stored(), 7);
        assert_eq!(unstored.from(0), vec![(7, Bytes::from_static(b"c"))]);
        // `stored` never goes back
        unstored.stored_up_to(6);
        assert_eq!(unstored.stored(), 7);
        unstored.stored_up_to(8);
        assert!(unstored.from(0).is_empty());
    }

    #[test]
    fn a_committed_round_keeps_its_own_records_until_the_next_commit() {
        let unstored = Unstored::new(0);
        unstored.add(0, Bytes::from_static(b"a"));
        unstored.add(1, Bytes::from_static(b"b"));
        unstored.committed(2);
        assert_eq!((unstored.stored(), unstored.from(0).len()), (2, 2));
        unstored.add(2, Bytes::from_static(b"c"));
        unstored.committed(3);
        assert_eq!(unstored.stored(), 3);
        assert_eq!(unstored.from(0), vec![(2, Bytes::from_static(b"c"))]);
        unstored.stored_up_to(3);
        assert!(unstored.from(0).is_empty());
    }
}
