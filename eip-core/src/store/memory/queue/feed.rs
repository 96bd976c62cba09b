//! A queue fed by a publish-subscribe channel's shared log: where its consumers park, how far
//! it has read, and when its publishers may go on.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::{Queue, State};
use crate::message::Message;
use crate::store::memory::shared_log::SharedLog;
use crate::store::{MessageStore, Parked, Parking, TakeOne};

impl Queue {
    /// This queue, fed by `log` from position `head` on.
    pub(crate) fn reading(mut self, log: Arc<SharedLog>, head: u64) -> Self {
        self.feed = Some(log);
        self.origin = AtomicU64::new(head);
        self.state
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .cursor = head;
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
            let read = log.read(&mut state.cursor, max, &mut state.ready);
            state.accepted += read as u64;
        }
    }

    /// What a fed queue has not read from its log yet.
    pub(super) fn unread(&self, state: &State) -> u64 {
        match &self.feed {
            // Closing read everything; later messages were never for it.
            Some(log) if !state.closed => log.head().saturating_sub(state.cursor),
            _ => 0,
        }
    }

    /// A fed queue's [`try_take_first`](MessageStore::try_take_first): straight from the
    /// log, when nothing put back waits before it (else the batched path sorts it out).
    #[inline(never)]
    pub(super) fn take_first_fed(
        &self,
        log: &SharedLog,
        max: usize,
        rest: &mut VecDeque<Message>,
    ) -> TakeOne {
        let mut state = self.lock();
        if !state.ready.is_empty() || state.closed {
            return TakeOne::Batched;
        }
        match log.read_first(&mut state.cursor, max, rest) {
            Some((first, taken)) => {
                let taken = taken as u64;
                state.accepted += taken;
                state.taken += taken;
                state.delivered += taken;
                TakeOne::Taken(first)
            }
            None => TakeOne::Empty,
        }
    }
}
