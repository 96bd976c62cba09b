//! Answering a round of appends and acks before its database commit.
//!
//! A round is durable once its journal record is fdatasynced: that is what a ticket promises,
//! and what an open after a crash replays. The database transaction's commit (without an fsync)
//! only makes the round visible to read transactions, and it is about half of a window-1
//! round's work (its pages, the table roots written back, the freed-page bookkeeping). So a
//! round that holds only appends and acks (what a durable channel's sends and acks make) is
//! *published* as soon as its record is durable: memory takes its effects (head, length,
//! bytes), its records are kept in memory for reads until the database holds them
//! ([`unstored`](crate::unstored)) and its appends are answered; then the transaction commits,
//! while the senders and consumers go on. Acks are answered after the commit, as before: the
//! records they delete stay hidden from reads until the database no longer holds them.
//!
//! The queues' waiters ([`QueueLog::committed`](crate::QueueLog::committed)) are woken after
//! the commit too, not with the answers. A sender that is answered hands its record to the
//! readers itself (a durable channel's push does), from the core it runs on; a wake-up from
//! the committer as well sent a second thread through the kernel on the path of every message
//! (measured at window 1, a round 59 → 51 µs above its `fdatasync`, medians of eight
//! alternated runs), and it reached readers that had nothing to read before the sender ran.
//! Readers of records nobody hands over (their sender stopped waiting) learn of them one
//! commit later, tens of microseconds.
//!
//! Rounds that declare or remove queues, set records aside, write batches, key tables or
//! expiries are answered after their commit, as before: their answers depend on the registry
//! and tables the commit changes.
//!
//! If the commit fails after the round was published, the round stays as answered: it is in
//! the journal, and memory holds it. The file is reopened and the journal replayed into it (as
//! for any failed commit); if that fails too, the committer is *lagging* with the round counted
//! as applied: the next round replays it first, no checkpoint is recorded before that (the file
//! does not hold it), and reads find its records in memory meanwhile.

use std::sync::atomic::Ordering;

use super::{Changes, Committer, Effect, Failure};
use crate::journal::WriteError;

/// Whether a durable round can be answered before its commit: it holds only appends, acks and
/// flushes.
pub(super) fn publishable(effects: &[Effect]) -> bool {
    effects.iter().all(|effect| {
        matches!(
            effect,
            Effect::Append { .. } | Effect::Ack { .. } | Effect::Flush { .. }
        )
    })
}

impl Committer {
    /// After a publishable round's record is durable, before its commit: its records kept for
    /// reads, memory as after the commit, its appends answered (the queues' waiters are woken
    /// after the commit, see the module's documentation).
    pub(super) fn publish(&self, effects: &mut [Effect], changes: &mut Changes) {
        for effect in effects.iter() {
            if let Effect::Append {
                queue,
                record,
                seq: Some(seq),
                ..
            } = effect
            {
                queue.unstored.add(*seq, record.clone());
            }
        }
        for t in changes.queues.values() {
            self.apply_touched(t, false);
        }
        changes.published = true;
        // Durable, so counted now: whoever is answered sees it in the stats
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        for effect in effects.iter_mut() {
            match effect {
                Effect::Append {
                    queue,
                    record,
                    reply,
                    seq: seq @ Some(_),
                } => {
                    if let Some(reply) = reply.take() {
                        let _ = reply.send(self.appended(queue, record, *seq));
                    }
                }
                Effect::Ack { queue, deleted, .. } => self.counted_ack(queue, *deleted),
                _ => {}
            }
        }
    }

    /// Writes the record of round `round` (the next) into the journal; `durable`: fdatasyncs it.
    pub(super) fn journal_round(&mut self, round: u64, durable: bool) -> Result<(), Failure> {
        self.round = round;
        self.pending = Some((self.journal.position(), round));
        match self.journal.write(&mut self.record, round, durable) {
            Ok(()) => Ok(()),
            Err(WriteError::Write(source)) => {
                self.discard_pending();
                Err(Failure::Journal(self.journal_error(source)))
            }
            Err(WriteError::Sync(source)) => {
                // What reached the disk since the last sync is in doubt: checkpoint before more
                self.pending = None;
                self.needs_reset = true;
                Err(Failure::Journal(self.journal_error(source)))
            }
        }
    }
}
