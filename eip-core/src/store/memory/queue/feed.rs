//! A queue fed by a publish-subscribe channel's shared log: where its consumers park, how far
//! it has read, and when its publishers may go on.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};

use tokio::sync::Notify;

use super::{Queue, State};
use crate::message::Message;
use crate::store::memory::shared_log::{Reader, SharedLog};
use crate::store::{MessageStore, Parked, Parking, TakeOne};

impl Queue {
    /// This queue, fed by `log` from position `head` on.
    pub(crate) fn reading(mut self, log: Arc<SharedLog>, head: u64) -> Self {
        self.feed = Some(log);
        self.origin = AtomicU64::new(head);
        self.reader = Reader::new(head);
        self
    }

    /// For a fed queue: how far it has come through the log (see `origin`). Both parts only
    /// grow, so reading them one after the other never overstates it.
    pub(crate) fn progress(&self) -> u64 {
        self.origin.load(Ordering::SeqCst) + self.settled.load(Ordering::SeqCst)
    }

    /// For a fed queue: whether it holds its capacity with the log at `head`.
    pub(super) fn is_full_at(&self, head: u64) -> bool {
        head.saturating_sub(self.progress()) >= self.capacity as u64
    }

    /// Waits until this fed queue is not full (or closed), then passes the wake-up on to the
    /// next waiting publisher.
    pub(crate) async fn not_full(&self, log: &SharedLog) {
        let waiting = Parked::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            self.writers_woken.store(false, Ordering::SeqCst);
            if self.is_closed() || !self.is_full_at(log.head()) {
                break;
            }
            notified.await;
        }
        drop(waiting);
        if self.writers_waiting.load(Ordering::SeqCst) > 0 {
            self.writable.notify_one();
        }
    }

    /// Where consumers park, and the count of those parked.
    pub(super) fn readable(&self) -> (&Notify, &AtomicUsize) {
        match &self.feed {
            Some(log) => (log.readable(), log.readers_waiting()),
            None => (&self.readable, &self.readers_waiting),
        }
    }

    /// Where consumers park, as they see it: a fed queue's with every other subscription's
    /// on the log (which wakes them all), an own queue's on its `Notify`.
    pub(super) fn parking_place(&self) -> Parking<'_> {
        match &self.feed {
            Some(log) => Parking::new(log.readable(), log.readers_waiting()).woken(log.woken()),
            None => Parking::new(&self.readable, &self.readers_waiting)
                .selective(&self.selective_waiting)
                .woken_one(&self.readers_woken),
        }
    }

    /// A fed queue reads what it has not read yet, at most `max` (all with `None`).
    pub(super) fn read_feed(&self, state: &mut State, max: Option<usize>) {
        if let Some(log) = &self.feed {
            let max = max.unwrap_or(usize::MAX);
            let read = log.read(&self.reader, max, &mut state.ready);
            state.accepted += read as u64;
        }
    }

    /// What a fed queue has not read from its log yet.
    pub(super) fn unread(&self, state: &State) -> u64 {
        match &self.feed {
            // Closing read everything; later messages were never for it.
            Some(log) if !state.closed => log.head().saturating_sub(self.reader.position()),
            _ => 0,
        }
    }

    /// A fed queue's [`try_take_first`](MessageStore::try_take_first): straight from the
    /// log under its lock alone, when nothing put back or read ahead waits in the queue
    /// (else the batched path sorts it out).
    #[inline(never)]
    pub(super) fn take_first_fed(
        &self,
        log: &SharedLog,
        max: usize,
        rest: &mut VecDeque<Message>,
    ) -> TakeOne {
        log.take_first(&self.reader, max, rest)
    }
}

/// A queue's state, locked. For a fed queue, its release tells the reader whether a take may go
/// straight to the log: only while the queue holds nothing of its own and is open. Whatever
/// changed under the lock, the answer is made from what the queue holds as it lets go.
pub(super) struct Locked<'a> {
    pub(super) state: MutexGuard<'a, State>,
    pub(super) queue: &'a Queue,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.queue.feed.is_some() {
            let direct = self.state.ready.is_empty() && !self.state.closed;
            self.queue.reader.set_direct(direct);
        }
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}
