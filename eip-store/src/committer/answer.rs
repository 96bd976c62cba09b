//! The answers of a round: after its commit, memory corrected for what each job counted ahead
//! and every job answered; after its failure, reserved bytes given back, acks undone and every
//! job answered with the error.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{Committer, Effect};
use crate::StoreError;
use crate::queue::QueueState;

impl Committer {
    /// Answers the job of one committed effect, correcting what the job counted ahead for a
    /// record that was already gone; declarations and removals update `registry`. `published`:
    /// the round was counted and its appends answered before the commit (`publish`).
    pub(super) fn answer(
        &self,
        effect: Effect,
        registry: &mut BTreeMap<String, Arc<QueueState>>,
        published: bool,
    ) {
        match effect {
            Effect::Append {
                queue,
                record,
                reply,
                seq,
            } => {
                // None: answered before the commit (`publish`)
                if let Some(reply) = reply {
                    let _ = reply.send(self.appended(&queue, &record, seq));
                }
            }
            Effect::Ack {
                queue,
                seq,
                deleted,
            } => {
                // Read no more once the database no longer holds it
                queue.acked().remove(&seq);
                if !published {
                    self.counted_ack(&queue, deleted);
                }
            }
            Effect::SetAside {
                queue,
                seq,
                remove,
                keep,
                deleted,
                ..
            } => self.set_aside_done(&queue, seq, remove, keep, deleted),
            Effect::Declare {
                name,
                reply,
                state,
                created,
            } => {
                let _ = reply.send(self.declared(registry, name, state, created));
            }
            Effect::DeclareTable {
                name,
                reply,
                state,
                created,
            } => {
                let mut tables = crate::table::lock(&self.tables);
                let _ = reply.send(self.declared(&mut tables, name, state, created));
            }
            Effect::Batch {
                ops,
                reserved,
                reply,
                seqs,
                refused,
            } => self.answer_batch(ops, reserved, reply, seqs, refused),
            Effect::Expire {
                reply, candidates, ..
            } => {
                let _ = reply.send(Ok(candidates.len() as u64));
            }
            Effect::Remove {
                name,
                reply,
                removed,
            } => {
                let count = match removed {
                    Some((queue, count)) => {
                        retire(registry, &name, &queue);
                        count
                    }
                    None => 0,
                };
                let _ = reply.send(Ok(count));
            }
            Effect::Flush { reply } => {
                let _ = reply.send(Ok(()));
            }
        }
    }

    /// Counts a committed ack, or corrects the length an ack of a record already gone counted.
    pub(super) fn counted_ack(&self, queue: &QueueState, deleted: bool) {
        if deleted {
            self.counters.acks.fetch_add(1, Ordering::Relaxed);
        } else {
            // ack() counted a record that was already gone
            queue.len.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The answer to a declaration of a queue or key table: `state`, entered into `registry` if
    /// the round `created` it.
    fn declared<S>(
        &self,
        registry: &mut BTreeMap<String, Arc<S>>,
        name: String,
        state: Option<Arc<S>>,
        created: bool,
    ) -> Result<Arc<S>, StoreError> {
        let state = state.ok_or_else(|| StoreError::Closed {
            dir: self.dir.clone(),
        })?;
        if created {
            registry.insert(name, state.clone());
        }
        Ok(state)
    }

    /// The answer to an append: its sequence number, or, if its queue was removed first, the
    /// error (and its reserved bytes given back).
    pub(super) fn appended(
        &self,
        queue: &QueueState,
        record: &Bytes,
        seq: Option<u64>,
    ) -> Result<u64, StoreError> {
        match seq {
            Some(seq) => {
                self.counters.records.fetch_add(1, Ordering::Relaxed);
                Ok(seq)
            }
            None => {
                self.space.release(record.len() as u64);
                Err(StoreError::QueueRemoved {
                    dir: self.dir.clone(),
                    name: queue.name.clone(),
                })
            }
        }
    }

    /// After a record set aside was committed: a warning if it could not be deleted from its
    /// queue (`keep`), and the length corrected if it was to be removed and was already gone.
    fn set_aside_done(
        &self,
        queue: &QueueState,
        seq: u64,
        remove: bool,
        keep: bool,
        deleted: bool,
    ) {
        if keep {
            tracing::warn!(
                file = %self.file.display(),
                queue = %queue.name,
                seq,
                "eip-store: a damaged record could not be deleted from its queue (its page is damaged too): \
                 it stays in the file, passed over until the store is reopened; `eip store salvage` copies the store without it"
            );
        }
        if remove && !deleted {
            // set_aside() counted a record that was already gone
            queue.len.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// After a failed commit: give back reserved bytes, undo acks, answer every job with `error`.
    pub(super) fn fail(&self, effects: Vec<Effect>, error: StoreError) {
        for effect in effects {
            match effect {
                Effect::Append { record, reply, .. } => {
                    // None: answered before the commit, and kept (`publish`)
                    if let Some(reply) = reply {
                        self.space.release(record.len() as u64);
                        let _ = reply.send(Err(error.duplicate()));
                    }
                }
                Effect::Ack { queue, seq, .. } => {
                    if queue.acked().remove(&seq) {
                        queue.len.fetch_add(1, Ordering::AcqRel);
                    }
                }
                Effect::SetAside {
                    queue, seq, remove, ..
                } => {
                    // Still damaged, and still counted and passed over; but not in the
                    // quarantine, and still in its queue: the next open finds it again
                    tracing::warn!(
                        file = %self.file.display(),
                        queue = %queue.name,
                        seq,
                        "eip-store: a damaged record could not be copied into the quarantine: \
                         it stays in its queue, passed over until the store is reopened"
                    );
                    if remove {
                        queue.len.fetch_add(1, Ordering::AcqRel);
                    }
                }
                Effect::Declare { reply, .. } => {
                    let _ = reply.send(Err(error.duplicate()));
                }
                Effect::Remove { reply, .. } => {
                    let _ = reply.send(Err(error.duplicate()));
                }
                Effect::Flush { reply } => {
                    let _ = reply.send(Err(error.duplicate()));
                }
                Effect::DeclareTable { reply, .. } => {
                    let _ = reply.send(Err(error.duplicate()));
                }
                Effect::Expire { reply, .. } => {
                    let _ = reply.send(Err(error.duplicate()));
                }
                Effect::Batch {
                    ops,
                    reserved,
                    reply,
                    ..
                } => self.fail_batch(ops, reserved, reply, error.duplicate()),
            }
        }
    }
}

/// After a removal was committed: `queue` is marked removed and its waiters woken, and it
/// leaves `registry` if `name` there still stands for it.
fn retire(registry: &mut BTreeMap<String, Arc<QueueState>>, name: &str, queue: &Arc<QueueState>) {
    queue.removed.store(true, Ordering::Release);
    queue.advanced.notify_waiters();
    if registry.get(name).is_some_and(|q| Arc::ptr_eq(q, queue)) {
        registry.remove(name);
    }
}
