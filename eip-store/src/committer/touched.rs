//! What one round does to one queue.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::queue::QueueState;

/// What one round does to one queue, applied to memory once the commit succeeded.
pub(super) struct Touched {
    pub(super) queue: Arc<QueueState>,
    pub(super) head: u64,
    pub(super) appended: u64,
    pub(super) added_bytes: u64,
    pub(super) freed_bytes: u64,
    pub(super) removed: bool,
}

impl Touched {
    /// Nothing done to `queue` yet: its state in memory as the round starts.
    pub(super) fn of(queue: &Arc<QueueState>) -> Touched {
        Touched {
            queue: queue.clone(),
            head: queue.head.load(Ordering::Acquire),
            appended: 0,
            added_bytes: 0,
            freed_bytes: 0,
            removed: queue.removed.load(Ordering::Acquire),
        }
    }

    /// The queue's row as the round leaves it.
    pub(super) fn row(&self) -> crate::journal::Op<'_> {
        let queue = &self.queue;
        let bytes = (queue.bytes.load(Ordering::Acquire) + self.added_bytes)
            .saturating_sub(self.freed_bytes);
        crate::journal::Op::QueueRow {
            name: &queue.name,
            id: queue.id,
            head: self.head,
            bytes,
        }
    }
}
