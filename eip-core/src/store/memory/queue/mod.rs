//! The memory store: the bounded, acknowledging queue under every in-memory channel.
//!
//! A point-to-point channel is one `Queue`; a publish-subscribe channel keeps one per
//! subscription. Capacity counts both the messages waiting (`ready`) and those delivered but not
//! yet settled (`in_flight`), so memory stays bounded even when consumers hold deliveries, and a
//! requeue (nack or dropped delivery) always has room. Producers and consumers park on two
//! `Notify`s, and only pay for a wake-up when a counter says someone is waiting.
//!
//! A subscription of a publish-subscribe channel under backpressure is *fed* by the channel's
//! [`SharedLog`]: nothing is pushed to it; it reads the log from its cursor when a receiver
//! takes, and its consumers park on the log's `Notify`. Its fill level counts what it has not
//! read yet too (see the log's module).

mod feed;

use feed::Locked;

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::shared_log::{Reader, SharedLog};
use crate::message::Message;
use crate::store::{
    Browse, MessageStore, NotBrowsable, Pager, Parked, Parking, Push, Pushing, Select, StoreStats,
    Take, TakeOne, Waiting, take_parked,
};

/// What a full queue does with one more message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The sender waits for room (the default).
    #[default]
    Backpressure,
    /// The oldest waiting message is dead-lettered (reason `dropped-slow-subscriber`) to make
    /// room. When every held message is in flight (delivered, not yet settled) the sender waits.
    DropOldest,
}

struct State {
    ready: VecDeque<Message>,
    closed: bool,
    /// Counted under the lock already held, saving atomic operations per message.
    accepted: u64,
    /// Messages handed to receivers and not put back (requeue, unprefetch): with `settled`,
    /// gives the number in flight. A fed queue's reader counts those it took straight from the
    /// log; putting one of them back takes this below zero (it wraps): for a fed queue, only
    /// the sum means anything (`in_flight`; `delivered` likewise). A queue that takes pushes
    /// is never fed, so the push path reads this alone.
    taken: u64,
    /// Deliveries handed out (a redelivery counts again; prefetched ones given back do not).
    delivered: u64,
    /// `settled` as last read under the lock. It only grows, so it undercounts the settled
    /// deliveries and the room it implies is never more than there is: a push reads the
    /// atomic (a cache line every ack writes, from the consumer's core) only when this copy
    /// says the queue is full.
    settled_seen: u64,
}

/// The memory store.
pub struct Queue {
    capacity: usize,
    overflow: Overflow,
    state: Mutex<State>,
    /// Mirrors `State::closed` for receivers handing out prefetched messages without the lock.
    closed: AtomicBool,
    /// Deliveries settled (acked, dead-lettered or discarded) since the start. Written without
    /// the lock, so that an ack costs one atomic add; `State::taken - settled` is in flight.
    settled: OwnLine<AtomicU64>,
    readable: Notify,
    writable: Notify,
    readers_waiting: AtomicUsize,
    /// Parked receivers with a selector: they need every waiter woken, since a notify_one
    /// could pick a receiver that does not select the new message.
    selective_waiting: AtomicUsize,
    writers_waiting: AtomicUsize,
    /// A reader has been woken and has not looked yet: pushes until it looks need not wake
    /// anyone (it will find what they pushed), so a burst of pushes pays for one wake-up.
    /// Set by the store as it wakes a reader, cleared by each reader before it looks.
    readers_woken: AtomicBool,
    /// The same for writers: settles until the woken writer looks need not wake anyone.
    writers_woken: AtomicBool,
    counters: Counters,
    /// The log this queue reads from, for a fed subscription.
    feed: Option<Arc<SharedLog>>,
    /// For a fed queue, where it is in the log and what it took from there directly (these
    /// count as accepted, taken and delivered beside the counts in `State`).
    reader: Reader,
    /// For a fed queue: the log position it started at plus what was purged from it. With
    /// `settled`, its progress: the log head minus its progress is what it holds.
    origin: AtomicU64,
}

#[derive(Default)]
struct Counters {
    /// Settled without an ack (the rare path): `acked = settled - released`.
    released: AtomicU64,
    requeued: AtomicU64,
}

/// A value on a cache line of its own (two lines: CPUs fetch adjacent lines in pairs), so that
/// the consumer's core writing it does not take the line the producer's core is reading.
#[repr(align(128))]
struct OwnLine<T>(T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl Queue {
    /// An empty queue holding at most `capacity` messages, full ones handled by `overflow`.
    pub fn new(capacity: usize, overflow: Overflow) -> Self {
        Queue {
            capacity,
            overflow,
            state: Mutex::new(State {
                ready: VecDeque::with_capacity(capacity.min(1024)),
                closed: false,
                accepted: 0,
                taken: 0,
                delivered: 0,
                settled_seen: 0,
            }),
            settled: OwnLine(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            readable: Notify::new(),
            writable: Notify::new(),
            readers_waiting: AtomicUsize::new(0),
            selective_waiting: AtomicUsize::new(0),
            writers_waiting: AtomicUsize::new(0),
            readers_woken: AtomicBool::new(false),
            writers_woken: AtomicBool::new(false),
            counters: Counters::default(),
            feed: None,
            reader: Reader::new(0),
            origin: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> Locked<'_> {
        // A panic while holding this lock can only come from a bug in this module (no user code
        // runs under it); the state is still consistent, so keep going rather than poison everyone.
        Locked {
            state: crate::sync::lock(&self.state),
            queue: self,
        }
    }

    /// Messages taken and not yet settled. `settled` only grows, so this never underflows.
    fn in_flight(&self, state: &State) -> usize {
        let settled = self.settled.load(Ordering::SeqCst);
        let taken = state.taken.wrapping_add(self.reader.taken());
        usize::try_from(taken.saturating_sub(settled)).unwrap_or(usize::MAX)
    }

    fn has_room(&self, state: &State) -> bool {
        state.ready.len() + self.in_flight(state) < self.capacity
    }

    /// [`has_room`](Self::has_room) for the push path: first from the last settled count seen,
    /// and only if that says full, from the current one.
    fn has_room_for_push(&self, state: &mut State) -> bool {
        let room = |state: &State| {
            let in_flight = state.taken.saturating_sub(state.settled_seen);
            let in_flight = usize::try_from(in_flight).unwrap_or(usize::MAX);
            state.ready.len().saturating_add(in_flight) < self.capacity
        };
        if room(state) {
            return true;
        }
        state.settled_seen = self.settled.load(Ordering::SeqCst);
        room(state)
    }

    fn wake_readers(&self) {
        let (readable, waiting) = self.readable();
        if waiting.load(Ordering::SeqCst) > 0 {
            // A fed queue's consumers park with every other subscription's: wake them all, so
            // this queue's are among them (only a requeue gets here, which is rare). A
            // selective receiver parks counted in `selective_waiting` before `waiting`, so
            // one seen parked is seen selecting.
            if self.feed.is_some() || self.selective_waiting.load(Ordering::SeqCst) > 0 {
                readable.notify_waiters();
            } else if woken_now(&self.readers_woken) {
                readable.notify_one();
            }
        }
    }

    /// One slot came free: wake one writer (it passes the wake-up on if it leaves room).
    fn wake_writers(&self) {
        if self.writers_waiting.load(Ordering::SeqCst) > 0 && woken_now(&self.writers_woken) {
            self.writable.notify_one();
        }
    }

    /// Many slots came free.
    fn wake_all_writers(&self) {
        if self.writers_waiting.load(Ordering::SeqCst) > 0 {
            self.writable.notify_waiters();
        }
    }

    /// The slow path of [`push`](MessageStore::push): waits for room, then passes the wake-up
    /// on.
    async fn push_waiting(&self, slot: &mut Option<Message>) -> Push {
        let waiting = Parked::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            self.writers_woken.store(false, Ordering::SeqCst);
            let Some(msg) = slot.take() else {
                return Push::Stored;
            };
            match self.try_push(msg) {
                Push::Full(msg) => {
                    *slot = Some(msg);
                    notified.await;
                }
                pushed => {
                    drop(waiting);
                    self.pass_wake_up();
                    return pushed;
                }
            }
        }
    }

    /// A settle wakes one waiting writer; a writer that got through wakes the next if there is
    /// still room, so no writer sleeps beside free space.
    fn pass_wake_up(&self) {
        if self.writers_waiting.load(Ordering::SeqCst) > 0 && self.accepts_now() {
            self.writable.notify_one();
        }
    }

    async fn wait_writable(&self) {
        let waiting = Parked::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            self.writers_woken.store(false, Ordering::SeqCst);
            if self.accepts_now() {
                // Only a look, not a claim on the room: let the next waiter look too.
                drop(waiting);
                self.pass_wake_up();
                return;
            }
            notified.await;
        }
    }

    fn settled_one(&self) {
        self.settled.fetch_add(1, Ordering::SeqCst);
        self.wake_writers();
    }
}

/// Moves up to `max` messages from the front of `from` to the back of `to`; how many. One by
/// one: for the usual one or few, a pop and a push cost a fraction of setting up a drain.
#[inline(never)]
fn move_front(from: &mut VecDeque<Message>, max: usize, to: &mut VecDeque<Message>) -> u64 {
    let n = max.min(from.len());
    for _ in 0..n {
        if let Some(m) = from.pop_front() {
            to.push_back(m);
        }
    }
    n as u64
}

/// Marks a wake-up as under way: true if none was (the caller wakes one), false if a woken
/// waiter has not looked yet (it will see what the caller did).
fn woken_now(woken: &AtomicBool) -> bool {
    !woken.load(Ordering::SeqCst) && !woken.swap(true, Ordering::SeqCst)
}

impl MessageStore for Queue {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn accepts_now(&self) -> bool {
        if let Some(log) = &self.feed {
            return self.is_closed() || !self.is_full_at(log.head());
        }
        let state = self.lock();
        state.closed || self.has_room(&state) || self.overflow == Overflow::DropOldest
    }

    // Inlined into `push_now`: not copied into another call's frame and read back (a stall).
    #[inline(always)]
    fn try_push(&self, msg: Message) -> Push {
        let mut state = self.lock();
        if state.closed {
            return Push::Closed(msg);
        }
        let mut dropped = None;
        if !self.has_room_for_push(&mut state) {
            match (self.overflow, state.ready.pop_front()) {
                (Overflow::DropOldest, Some(oldest)) => dropped = Some(oldest),
                (_, popped) => {
                    if let Some(p) = popped {
                        state.ready.push_front(p);
                    }
                    return Push::Full(msg);
                }
            }
        }
        state.ready.push_back(msg);
        state.accepted += 1;
        drop(state);
        self.wake_readers();
        match dropped {
            Some(d) => Push::StoredDropping(d),
            None => Push::Stored,
        }
    }

    fn push<'a>(&'a self, slot: &'a mut Option<Message>) -> Pushing<'a> {
        let Some(msg) = slot.take() else {
            return Pushing::ready(Push::Stored);
        };
        // The fast path registers no wake-up and allocates nothing: that costs only when the
        // queue is full.
        match self.push_now(msg) {
            Ok(pushed) => Pushing::ready(pushed),
            Err(msg) => {
                *slot = Some(msg);
                Pushing::waiting(self.push_waiting(slot))
            }
        }
    }

    fn push_now(&self, msg: Message) -> Result<Push, Message> {
        match self.try_push(msg) {
            Push::Full(msg) => Err(msg),
            pushed => Ok(pushed),
        }
    }

    fn force_push(&self, msg: Message) -> Result<(), Message> {
        let mut state = self.lock();
        if state.closed {
            return Err(msg);
        }
        state.ready.push_back(msg);
        state.accepted += 1;
        drop(state);
        self.wake_readers();
        Ok(())
    }

    fn writable(&self) -> Waiting<'_, ()> {
        Box::pin(self.wait_writable())
    }

    fn try_take(
        &self,
        select: Option<&dyn Select>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> Take {
        let mut state = self.lock();
        let before = into.len();
        if let (Some(log), None, true) = (&self.feed, select, state.ready.is_empty())
            && !state.closed
        {
            // Nothing put back waiting: straight from the log into the receiver's buffer.
            let read = log.read(&self.reader, max, into);
            state.accepted += read as u64;
        } else if !state.closed && state.ready.len() < max {
            // With a selector, everything: the next one it selects may be anywhere.
            let wanted = select.is_none().then(|| max - state.ready.len());
            self.read_feed(&mut state, wanted);
        }
        match select {
            None => {
                move_front(&mut state.ready, max - (into.len() - before), into);
            }
            Some(sel) => {
                let mut i = 0;
                while i < state.ready.len() && into.len() - before < max {
                    if sel.selects(&state.ready[i]) {
                        if let Some(m) = state.ready.remove(i) {
                            into.push_back(m);
                        }
                    } else {
                        i += 1;
                    }
                }
            }
        }
        let taken = into.len() - before;
        if taken == 0 {
            return if state.closed {
                Take::Closed
            } else {
                Take::Empty
            };
        }
        state.taken = state.taken.wrapping_add(taken as u64);
        state.delivered = state.delivered.wrapping_add(taken as u64);
        Take::Taken
    }

    fn try_take_one(&self) -> TakeOne {
        if let Some(log) = &self.feed {
            return self.take_first_fed(log, 1, &mut VecDeque::new());
        }
        let mut state = self.lock();
        match state.ready.pop_front() {
            Some(msg) => {
                state.taken = state.taken.wrapping_add(1);
                state.delivered = state.delivered.wrapping_add(1);
                TakeOne::Taken(msg)
            }
            None if state.closed => TakeOne::Closed,
            None => TakeOne::Empty,
        }
    }

    fn try_take_first(&self, max: usize, rest: &mut VecDeque<Message>) -> TakeOne {
        if let Some(log) = &self.feed {
            return self.take_first_fed(log, max, rest);
        }
        let mut state = self.lock();
        let Some(first) = state.ready.pop_front() else {
            return if state.closed {
                TakeOne::Closed
            } else {
                TakeOne::Empty
            };
        };
        let mut taken = 1;
        if max > 1 && !state.ready.is_empty() {
            taken += move_front(&mut state.ready, max - 1, rest);
        }
        state.taken = state.taken.wrapping_add(taken);
        state.delivered = state.delivered.wrapping_add(taken);
        TakeOne::Taken(first)
    }

    fn take<'a>(
        &'a self,
        select: Option<&'a dyn Select>,
        max: usize,
        into: &'a mut VecDeque<Message>,
    ) -> Waiting<'a, bool> {
        Box::pin(take_parked(self, self.parking_place(), select, max, into))
    }

    fn parking(&self) -> Option<Parking<'_>> {
        Some(self.parking_place())
    }

    fn unprefetch(&self, messages: &mut VecDeque<Message>) -> Vec<Message> {
        let mut state = self.lock();
        let n = messages.len() as u64;
        let mut orphans = Vec::new();
        if state.closed {
            orphans.extend(messages.drain(..));
        } else {
            while let Some(msg) = messages.pop_back() {
                state.ready.push_front(msg);
            }
        }
        // Wrapping: some may have been counted taken by the reader (see `in_flight`)
        state.taken = state.taken.wrapping_sub(n);
        state.delivered = state.delivered.wrapping_sub(n);
        drop(state);
        self.readable().0.notify_waiters();
        self.wake_all_writers();
        orphans
    }

    fn settle(&self, _msg: &Message) {
        self.settled_one();
    }

    fn release(&self, _msg: &Message) {
        self.counters.released.fetch_add(1, Ordering::Relaxed);
        self.settled_one();
    }

    fn requeue(&self, msg: Message) -> Result<(), Message> {
        let mut state = self.lock();
        state.taken = state.taken.wrapping_sub(1);
        if state.closed {
            drop(state);
            self.wake_writers();
            return Err(msg);
        }
        state.ready.push_front(msg);
        drop(state);
        self.counters.requeued.fetch_add(1, Ordering::Relaxed);
        self.wake_readers();
        Ok(())
    }

    fn purge(&self, select: Option<&dyn Select>) -> usize {
        let mut state = self.lock();
        if !state.closed {
            self.read_feed(&mut state, None);
        }
        let before = state.ready.len();
        match select {
            None => state.ready.clear(),
            Some(sel) => state.ready.retain(|m| !sel.selects(m)),
        }
        let purged = before - state.ready.len();
        // They leave a fed queue as settled ones do.
        self.origin.fetch_add(purged as u64, Ordering::SeqCst);
        drop(state);
        if purged > 0 {
            self.wake_all_writers();
        }
        purged
    }

    fn browse(
        &self,
        select: Option<&dyn Select>,
        offset: usize,
        limit: usize,
    ) -> Result<Browse, NotBrowsable> {
        let state = self.lock();
        let mut pager = Pager::new(select, offset, limit);
        pager.walk(state.ready.iter());
        // A fed queue's messages not read from the log yet wait too, after those read.
        let unread = self.unread(&state);
        if let Some(log) = &self.feed
            && unread > 0
            && !pager.is_done()
        {
            let skip = (pager.skippable() as u64).min(unread);
            pager.skipped(skip as usize);
            log.peek(self.reader.position() + skip, |msg| {
                pager.see(msg);
                !pager.is_done()
            });
        }
        let waiting = state.ready.len() + usize::try_from(unread).unwrap_or(usize::MAX);
        Ok(pager.finish(waiting))
    }

    fn close(&self) -> Vec<Message> {
        let mut state = self.lock();
        if state.closed {
            return Vec::new();
        }
        if let Some(log) = &self.feed {
            log.detach(self, &self.reader, &mut state.ready);
        }
        state.closed = true;
        self.closed.store(true, Ordering::Release);
        let rest = state.ready.drain(..).collect();
        drop(state);
        self.readable().0.notify_waiters();
        self.writable.notify_waiters();
        rest
    }

    fn stats(&self) -> StoreStats {
        let (depth, accepted, delivered, in_flight) = {
            let state = self.lock();
            let in_flight = self.in_flight(&state);
            let unread = usize::try_from(self.unread(&state)).unwrap_or(usize::MAX);
            let direct = self.reader.taken();
            (
                state.ready.len() + unread,
                state.accepted.wrapping_add(direct) + unread as u64,
                state.delivered.wrapping_add(direct),
                in_flight,
            )
        };
        let released = self.counters.released.load(Ordering::Relaxed);
        let acked = self.settled.load(Ordering::SeqCst).saturating_sub(released);
        StoreStats {
            depth,
            in_flight,
            accepted,
            delivered,
            acked,
            requeued: self.counters.requeued.load(Ordering::Relaxed),
        }
    }
}
