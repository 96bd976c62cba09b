//! A batch in a round: all of its effects written into the round's one transaction, or none.
//!
//! Before anything of a batch is written, every queue it touches is checked: one removed (before
//! this round, or earlier in it) refuses the whole batch, which then writes nothing. Past that
//! check nothing can fail one effect of the batch without failing the whole transaction, so a
//! batch is all or nothing in the file, whatever shares its commit.

use std::sync::atomic::Ordering;

use super::Committer;
use super::round::Round;
use crate::StoreError;
use crate::batch::{Op, undo_acks};
use crate::ticket::Reply;

impl Round<'_, '_> {
    /// Writes every effect of a batch; `seqs` gets its appends' sequence numbers, `refused` the
    /// name of a removed queue that refuses it.
    pub(super) fn write_batch(
        &mut self,
        ops: &mut [Op],
        seqs: &mut Vec<u64>,
        refused: &mut Option<String>,
    ) -> Result<(), redb::Error> {
        if let Some(queue) = ops
            .iter()
            .filter_map(Op::queue)
            .find(|queue| self.touch(queue).removed)
        {
            *refused = Some(queue.name.clone());
            return Ok(());
        }
        for op in ops.iter_mut() {
            match op {
                Op::Append { queue, record } => {
                    let mut seq = None;
                    self.append(queue, record, &mut seq)?;
                    seqs.extend(seq);
                }
                Op::Ack {
                    queue,
                    seq,
                    deleted,
                    ..
                } => *deleted = self.delete(queue, *seq)?,
                Op::Put {
                    table,
                    key,
                    value,
                    expires_at,
                } => self.keys.put(&mut self.w, table, key, value, *expires_at)?,
                Op::Remove { table, key } => self.keys.remove(&mut self.w, table, key)?,
            }
        }
        Ok(())
    }
}

impl Committer {
    /// After the commit holding a batch: its acks settled in memory, its answer sent.
    pub(super) fn answer_batch(
        &self,
        ops: Vec<Op>,
        reserved: u64,
        reply: Reply,
        seqs: Vec<u64>,
        refused: Option<String>,
    ) {
        if let Some(name) = refused {
            let error = StoreError::QueueRemoved {
                dir: self.dir.clone(),
                name,
            };
            return self.fail_batch(ops, reserved, reply, error);
        }
        for op in &ops {
            match op {
                Op::Append { .. } => {
                    self.counters.records.fetch_add(1, Ordering::Relaxed);
                }
                Op::Ack {
                    queue,
                    seq,
                    counted,
                    deleted,
                } => {
                    if *counted {
                        queue.acked().remove(seq);
                    }
                    if *deleted {
                        self.counters.acks.fetch_add(1, Ordering::Relaxed);
                    }
                    match (*counted, *deleted) {
                        // This batch counted a record that was already gone
                        (true, false) => {
                            queue.len.fetch_add(1, Ordering::AcqRel);
                        }
                        // A lazy ack counted it, and will give it back when it finds it gone
                        (false, true) => {
                            queue.len.fetch_sub(1, Ordering::AcqRel);
                        }
                        _ => {}
                    }
                }
                Op::Put { .. } | Op::Remove { .. } => {}
            }
        }
        reply(Ok(seqs));
    }

    /// A batch that was not written: its bytes given back, its acks undone, `error` answered.
    pub(super) fn fail_batch(&self, ops: Vec<Op>, reserved: u64, reply: Reply, error: StoreError) {
        self.space.release(reserved);
        undo_acks(&ops);
        reply(Err(error));
    }
}
