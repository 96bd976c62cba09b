//! One round of the committer: every job of the round written into one write transaction.
//!
//! A round decides each effect (appends at the queue's head, acks and set-asides as deletions,
//! declarations and removals) and hands it as an [`Op`] to its [`Writer`], which applies it to
//! the transaction and journals it; it notes per queue what changed ([`Touched`]), and the
//! committer applies that to memory only once the round is durable and committed.

use std::collections::HashMap;
use std::sync::Arc;

use super::keys::KeyRound;
use super::{Effect, Touched};
use crate::journal::Op;
use crate::journal::apply::Writer;
use crate::queue::QueueState;
use crate::store::Registry;

/// The open tables and bookkeeping of one write transaction.
pub(super) struct Round<'txn, 'a> {
    /// Applies each change and journals it.
    pub(super) w: Writer<'txn, 'a>,
    /// Queues declared (`Some`) or removed (`None`) earlier in this round, by name.
    pub(super) names: HashMap<String, Option<Arc<QueueState>>>,
    pub(super) touched: &'a mut HashMap<u32, Touched>,
    pub(super) registry: &'a Registry,
    pub(super) keys: KeyRound<'a>,
}

impl Round<'_, '_> {
    /// Writes one effect, noting what the write found out in it; an effect on a queue removed
    /// earlier in the round writes nothing.
    pub(super) fn write(
        &mut self,
        effect: &mut Effect,
        next_id: &mut u32,
    ) -> Result<(), redb::Error> {
        match effect {
            Effect::Append {
                queue, record, seq, ..
            } => self.append(queue, record, seq),
            Effect::Ack {
                queue,
                seq,
                deleted,
            } => {
                if self.touch(queue).removed {
                    return Ok(());
                }
                *deleted = self.delete(queue, *seq)?;
                Ok(())
            }
            Effect::SetAside {
                queue,
                seq,
                bytes,
                reason,
                remove,
                keep,
                deleted,
            } => {
                if self.touch(queue).removed {
                    return Ok(());
                }
                if *remove && !*keep {
                    *deleted = self.delete(queue, *seq)?;
                }
                let at = crate::quarantine::now_ms();
                self.w.apply(&Op::SetAside {
                    name: &queue.name,
                    seq: *seq,
                    bytes,
                    reason,
                    at,
                })?;
                Ok(())
            }
            Effect::Declare {
                name,
                state,
                created,
                ..
            } => self.declare(name, state, created, next_id),
            Effect::Remove { name, removed, .. } => self.remove(name, removed),
            Effect::Flush { .. } => Ok(()),
            Effect::Batch {
                ops, seqs, refused, ..
            } => self.write_batch(ops, seqs, refused),
            Effect::DeclareTable {
                name,
                state,
                created,
                ..
            } => self.keys.declare(&mut self.w, name, state, created),
            Effect::Expire {
                table,
                now_ms,
                candidates,
                ..
            } => self.keys.expire(&mut self.w, table, *now_ms, candidates),
        }
    }

    /// Writes `record` at the head of `queue`, giving it the head's sequence number in `seq`.
    pub(super) fn append(
        &mut self,
        queue: &Arc<QueueState>,
        record: &[u8],
        seq: &mut Option<u64>,
    ) -> Result<(), redb::Error> {
        if self.touch(queue).removed {
            return Ok(());
        }
        let head = self.touch(queue).head;
        self.w.apply(&Op::Append {
            queue: queue.id,
            seq: head,
            record,
        })?;
        *seq = Some(head);
        let t = self.touch(queue);
        t.head += 1;
        t.appended += 1;
        t.added_bytes += record.len() as u64;
        Ok(())
    }

    /// Writes a run of ack effects: per queue, each stretch of consecutive sequence numbers
    /// as one range delete ([`Op::DeleteRange`]), a lone one as a delete. Deletes of distinct
    /// records commute, so the order within the run does not matter; an ack of a record acked
    /// earlier in the run finds nothing, as it would one after the other.
    pub(super) fn acks(&mut self, acks: &mut [Effect]) -> Result<(), redb::Error> {
        // (queue id, seq, index in `acks`), of the queues not removed
        let mut order = Vec::with_capacity(acks.len());
        for (i, effect) in acks.iter().enumerate() {
            if let Effect::Ack { queue, seq, .. } = effect
                && !self.touch(queue).removed
            {
                order.push((queue.id, *seq, i));
            }
        }
        order.sort_unstable();
        let mut start = 0;
        while start < order.len() {
            let (id, first, _) = order[start];
            // The stretch: unique seqs, each one past the last; repeats stay in it, found never
            let mut end = start + 1;
            let mut last = first;
            while let Some(&(next_id, seq, _)) = order.get(end) {
                if next_id != id || (seq != last && seq != last + 1) {
                    break;
                }
                last = seq;
                end += 1;
            }
            let stretch = &order[start..end];
            start = end;
            let Some(queue) = self.touched.get(&id).map(|t| t.queue.clone()) else {
                continue; // never: each was touched above
            };
            if first == last {
                let deleted = self.delete(&queue, first)?;
                set_deleted(&mut acks[stretch[0].2], deleted);
                stretch[1..]
                    .iter()
                    .for_each(|&(_, _, i)| set_deleted(&mut acks[i], false));
            } else {
                let mut found = Vec::with_capacity(stretch.len());
                let freed = self
                    .w
                    .apply_delete_range(id, first, last, |seq| found.push(seq))?;
                self.touch(&queue).freed_bytes += freed;
                // Both in order: each seq found marks its first ack in the stretch
                let mut found = found.into_iter().peekable();
                for &(_, seq, i) in stretch {
                    let deleted = found.next_if_eq(&seq).is_some();
                    set_deleted(&mut acks[i], deleted);
                }
            }
        }
        Ok(())
    }

    /// Writes a run of append effects: each gets its queue's head, as one by one, and the
    /// records of each stretch of the run that goes to one queue are written together
    /// ([`Writer::apply_appends`](crate::journal::apply::Writer::apply_appends)).
    pub(super) fn appends(&mut self, appends: &mut [Effect]) -> Result<(), redb::Error> {
        let mut start = 0;
        while start < appends.len() {
            let Effect::Append { queue, .. } = &appends[start] else {
                start += 1;
                continue;
            };
            let queue = queue.clone();
            let end = start
                + appends[start..]
                    .iter()
                    .take_while(
                        |e| matches!(e, Effect::Append { queue: q, .. } if q.id == queue.id),
                    )
                    .count();
            if self.touch(&queue).removed {
                start = end;
                continue;
            }
            let t = self.touch(&queue);
            let first = t.head;
            let mut records = Vec::with_capacity(end - start);
            for (seq, effect) in (first..).zip(&mut appends[start..end]) {
                if let Effect::Append {
                    record, seq: given, ..
                } = effect
                {
                    *given = Some(seq);
                    t.head += 1;
                    t.appended += 1;
                    t.added_bytes += record.len() as u64;
                    records.push(&record[..]);
                }
            }
            self.w.apply_appends(queue.id, first, &records)?;
            start = end;
        }
        Ok(())
    }

    /// Deletes the record `seq` of `queue`, counting the bytes it frees; whether it was still
    /// there to delete.
    pub(super) fn delete(
        &mut self,
        queue: &Arc<QueueState>,
        seq: u64,
    ) -> Result<bool, redb::Error> {
        let applied = self.w.apply(&Op::Delete {
            queue: queue.id,
            seq,
        })?;
        self.touch(queue).freed_bytes += applied.freed;
        Ok(applied.found)
    }

    /// Creates the queue `name` with the next queue id unless it exists; `state` is the queue
    /// either way, `created` whether this made it.
    fn declare(
        &mut self,
        name: &str,
        state: &mut Option<Arc<QueueState>>,
        created: &mut bool,
        next_id: &mut u32,
    ) -> Result<(), redb::Error> {
        if let Some(existing) = self.find(name) {
            *state = Some(existing);
            return Ok(());
        }
        let id = *next_id;
        *next_id = id.checked_add(1).ok_or_else(|| {
            redb::Error::Corrupted("no queue id left (2^32 queues declared)".into())
        })?;
        let queue = Arc::new(QueueState::new(name.to_owned(), id, 0, 0, 0));
        self.w.apply(&Op::DeclareQueue { name, id })?;
        self.names.insert(name.to_owned(), Some(queue.clone()));
        *state = Some(queue);
        *created = true;
        Ok(())
    }

    /// Deletes the queue `name` with its table, if it exists; `removed` is the queue and how
    /// many records it held.
    fn remove(
        &mut self,
        name: &str,
        removed: &mut Option<(Arc<QueueState>, u64)>,
    ) -> Result<(), redb::Error> {
        let Some(queue) = self.find(name) else {
            return Ok(());
        };
        let applied = self.w.apply(&Op::RemoveQueue { name, id: queue.id })?;
        self.touch(&queue).removed = true;
        self.names.insert(name.to_owned(), None);
        *removed = Some((queue, applied.count));
        Ok(())
    }

    /// The queue `name` as this round sees it.
    fn find(&self, name: &str) -> Option<Arc<QueueState>> {
        match self.names.get(name) {
            Some(state) => state.clone(),
            None => crate::store::lock(self.registry).get(name).cloned(),
        }
    }

    pub(super) fn touch(&mut self, queue: &Arc<QueueState>) -> &mut Touched {
        self.touched
            .entry(queue.id)
            .or_insert_with(|| Touched::of(queue))
    }

    /// Writes the `queues` row of every queue this round changed.
    pub(super) fn write_queue_rows(&mut self) -> Result<(), redb::Error> {
        for t in self.touched.values() {
            if t.removed || (t.appended == 0 && t.freed_bytes == 0) {
                continue;
            }
            self.w.apply(&t.row())?;
        }
        Ok(())
    }
}

/// Sets whether the record of an ack effect was still there to delete.
fn set_deleted(effect: &mut Effect, found: bool) {
    if let Effect::Ack { deleted, .. } = effect {
        *deleted = found;
    }
}
