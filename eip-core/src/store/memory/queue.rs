//! The bounded, acknowledging queue under every channel.
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

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::dead_letter::DeadLetterChannel;
use super::selector::Selector;
use super::shared_log::SharedLog;
use super::stats::ChannelStats;
use crate::endpoint::RedeliveryPolicy;
use crate::message::{DeathReason, Message, names};

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

pub(crate) enum Push {
    Stored,
    /// Stored after taking the oldest waiting message out, which the caller must dead-letter.
    StoredDropping(Message),
    Full(Message),
    Closed(Message),
}

pub(crate) enum Take {
    /// At least one message was moved to the receiver's buffer, each counted in flight.
    Taken,
    Empty,
    Closed,
}

struct State {
    ready: VecDeque<Message>,
    closed: bool,
    /// Receivers with a selector: they need every waiter woken, since a notify_one could pick a
    /// receiver that does not select the new message.
    selective: usize,
    /// Counted under the lock already held, saving atomic operations per message.
    accepted: u64,
    /// Messages handed to receivers and not put back (requeue, unprefetch): with `settled`,
    /// gives the number in flight.
    taken: u64,
    /// Deliveries handed out (a redelivery counts again; prefetched ones given back do not).
    delivered: u64,
    /// `settled` as last read under the lock. It only grows, so it undercounts the settled
    /// deliveries and the room it implies is never more than there is: a push reads the
    /// atomic (a cache line every ack writes, from the consumer's core) only when this copy
    /// says the queue is full.
    settled_seen: u64,
    /// For a fed queue, the log position it reads next.
    cursor: u64,
}

pub(crate) struct Queue {
    pub(crate) name: Arc<str>,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) dead_letters: Option<DeadLetterChannel>,
    pub(crate) redelivery: RedeliveryPolicy,
    state: Mutex<State>,
    /// Mirrors `State::closed` for receivers handing out prefetched messages without the lock.
    closed: AtomicBool,
    /// Deliveries settled (acked, dead-lettered or discarded) since the start. Written without
    /// the lock, so that an ack costs one atomic add; `State::taken - settled` is in flight.
    settled: OwnLine<AtomicU64>,
    readable: Notify,
    writable: Notify,
    readers_waiting: AtomicUsize,
    writers_waiting: AtomicUsize,
    counters: Counters,
    /// The log this queue reads from, for a fed subscription.
    feed: Option<Arc<SharedLog>>,
    /// For a fed queue: the log position it started at plus what was purged from it. With
    /// `settled`, its progress: the log head minus its progress is what it holds.
    origin: AtomicU64,
}

#[derive(Default)]
struct Counters {
    /// Settled without an ack (the rare path): `acked = settled - released`.
    released: AtomicU64,
    requeued: AtomicU64,
    dead_lettered: AtomicU64,
    discarded: AtomicU64,
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

/// Increments a waiting counter for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Queue {
    pub(crate) fn new(
        name: Arc<str>,
        capacity: usize,
        overflow: Overflow,
        dead_letters: Option<DeadLetterChannel>,
        redelivery: RedeliveryPolicy,
    ) -> Self {
        Queue {
            name,
            capacity,
            overflow,
            dead_letters,
            redelivery,
            state: Mutex::new(State {
                ready: VecDeque::with_capacity(capacity.min(1024)),
                closed: false,
                selective: 0,
                accepted: 0,
                taken: 0,
                delivered: 0,
                settled_seen: 0,
                cursor: 0,
            }),
            settled: OwnLine(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            readable: Notify::new(),
            writable: Notify::new(),
            readers_waiting: AtomicUsize::new(0),
            writers_waiting: AtomicUsize::new(0),
            counters: Counters::default(),
            feed: None,
            origin: AtomicU64::new(0),
        }
    }

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
    fn is_full_at(&self, head: u64) -> bool {
        head.saturating_sub(self.progress()) >= self.capacity as u64
    }

    /// Waits until this fed queue is not full (or closed), then passes the wake-up on to the
    /// next waiting publisher.
    pub(crate) async fn not_full(&self, log: &SharedLog) {
        let waiting = Waiting::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
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
    fn readable(&self) -> (&Notify, &AtomicUsize) {
        match &self.feed {
            Some(log) => (log.readable(), log.readers_waiting()),
            None => (&self.readable, &self.readers_waiting),
        }
    }

    /// A fed queue reads what it has not read yet, at most `max` (all with `None`).
    fn read_feed(&self, state: &mut State, max: Option<usize>) {
        if let Some(log) = &self.feed {
            let max = max.unwrap_or(usize::MAX);
            let read = log.read(&mut state.cursor, max, &mut state.ready);
            state.accepted += read as u64;
        }
    }

    /// What a fed queue has not read from its log yet.
    fn unread(&self, state: &State) -> u64 {
        match &self.feed {
            // Closing read everything; later messages were never for it.
            Some(log) if !state.closed => log.head().saturating_sub(state.cursor),
            _ => 0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock can only come from a bug in this module (no user code
        // runs under it); the state is still consistent, so keep going rather than poison everyone.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Messages taken and not yet settled. `taken` only changes under the lock the caller
    /// holds; `settled` only grows, so this never underflows.
    fn in_flight(&self, state: &State) -> usize {
        let settled = self.settled.load(Ordering::SeqCst);
        usize::try_from(state.taken.saturating_sub(settled)).unwrap_or(usize::MAX)
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

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether a message would be accepted now without waiting.
    pub(crate) fn accepts_now(&self) -> bool {
        if let Some(log) = &self.feed {
            return self.is_closed() || !self.is_full_at(log.head());
        }
        let state = self.lock();
        state.closed || self.has_room(&state) || self.overflow == Overflow::DropOldest
    }

    pub(crate) fn try_push(&self, msg: Message) -> Push {
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
        let wake_all = state.selective > 0;
        drop(state);
        self.wake_readers(wake_all);
        match dropped {
            Some(d) => Push::StoredDropping(d),
            None => Push::Stored,
        }
    }

    /// Pushes ignoring capacity. Only for paths that cannot wait (drop handlers), where losing
    /// the message would be worse than briefly holding one more than the bound.
    pub(crate) fn force_push(&self, msg: Message) -> Result<(), Message> {
        let mut state = self.lock();
        if state.closed {
            return Err(msg);
        }
        state.ready.push_back(msg);
        state.accepted += 1;
        let wake_all = state.selective > 0;
        drop(state);
        self.wake_readers(wake_all);
        Ok(())
    }

    fn wake_readers(&self, all: bool) {
        let (readable, waiting) = self.readable();
        if waiting.load(Ordering::SeqCst) > 0 {
            // A fed queue's consumers park with every other subscription's: wake them all, so
            // this queue's are among them (only a requeue gets here, which is rare).
            if all || self.feed.is_some() {
                readable.notify_waiters();
            } else {
                readable.notify_one();
            }
        }
    }

    /// One slot came free: wake one writer (it passes the wake-up on if it leaves room).
    fn wake_writers(&self) {
        if self.writers_waiting.load(Ordering::SeqCst) > 0 {
            self.writable.notify_one();
        }
    }

    /// Many slots came free.
    fn wake_all_writers(&self) {
        if self.writers_waiting.load(Ordering::SeqCst) > 0 {
            self.writable.notify_waiters();
        }
    }

    /// Pushes, waiting for room. Cancel-safe: the message leaves `slot` only once it is stored.
    pub(crate) async fn push(&self, slot: &mut Option<Message>) -> Result<(), Message> {
        let Some(msg) = slot.take() else {
            return Ok(());
        };
        // The fast path registers no wake-up: that costs only when the queue is full. The slow
        // one is boxed, so that every future embedding a push stays small (futures are moved
        // whole, and a publish or send is built once per message).
        let pushed = match self.try_push(msg) {
            Push::Full(msg) => {
                *slot = Some(msg);
                Box::pin(self.push_waiting(slot)).await
            }
            pushed => pushed,
        };
        match pushed {
            Push::Stored => Ok(()),
            Push::StoredDropping(oldest) => {
                // Boxed: dead-lettering pushes onto another queue, a recursive await.
                Box::pin(self.dead_letter(oldest, DeathReason::DroppedSlowSubscriber, None)).await;
                Ok(())
            }
            Push::Closed(msg) | Push::Full(msg) => Err(msg),
        }
    }

    /// The slow path of [`push`](Self::push): waits for room, then passes the wake-up on.
    async fn push_waiting(&self, slot: &mut Option<Message>) -> Push {
        let waiting = Waiting::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
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

    /// Waits until the queue has room (or is closed).
    pub(crate) async fn writable(&self) {
        let waiting = Waiting::new(&self.writers_waiting);
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            if self.accepts_now() {
                // Only a look, not a claim on the room: let the next waiter look too.
                drop(waiting);
                self.pass_wake_up();
                return;
            }
            notified.await;
        }
    }

    /// Moves up to `max` messages this selector accepts into `into` (a receiver's prefetch
    /// buffer); each counts in flight from now on.
    pub(crate) fn try_take(
        &self,
        selector: Option<&Selector>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> Take {
        let mut state = self.lock();
        let before = into.len();
        if let (Some(log), None, true) = (&self.feed, selector, state.ready.is_empty())
            && !state.closed
        {
            // Nothing put back waiting: straight from the log into the receiver's buffer.
            let read = log.read(&mut state.cursor, max, into);
            state.accepted += read as u64;
        } else if !state.closed && state.ready.len() < max {
            // With a selector, everything: the next one it selects may be anywhere.
            let wanted = selector.is_none().then(|| max - state.ready.len());
            self.read_feed(&mut state, wanted);
        }
        match selector {
            None => {
                let n = (max - (into.len() - before)).min(state.ready.len());
                into.extend(state.ready.drain(..n));
            }
            Some(sel) => {
                let mut i = 0;
                while i < state.ready.len() && into.len() - before < max {
                    if sel.matches(&state.ready[i]) {
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
        state.taken += taken as u64;
        state.delivered += taken as u64;
        Take::Taken
    }

    /// Waits until [`try_take`](Self::try_take) takes something; `false` once the queue is
    /// closed and holds nothing for this selector.
    pub(crate) async fn take(
        &self,
        selector: Option<&Selector>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> bool {
        let (readable, readers_waiting) = self.readable();
        let mut waiting = None;
        loop {
            let notified = readable.notified();
            let mut notified = pin!(notified);
            if waiting.is_some() {
                notified.as_mut().enable();
                if let Some(log) = &self.feed {
                    log.rearm();
                }
            }
            match self.try_take(selector, max, into) {
                Take::Taken => return true,
                Take::Closed => return false,
                Take::Empty if waiting.is_none() => {
                    waiting = Some(Waiting::new(readers_waiting));
                }
                Take::Empty => notified.await,
            }
        }
    }

    /// Prefetched messages a receiver gives back undelivered: to the head, in their order, with
    /// no redelivery counted (no consumer saw them).
    pub(crate) fn unprefetch(&self, messages: impl DoubleEndedIterator<Item = Message>) {
        let mut state = self.lock();
        let mut n = 0;
        let mut orphans = Vec::new();
        for msg in messages.rev() {
            n += 1;
            if state.closed {
                orphans.push(msg);
            } else {
                state.ready.push_front(msg);
            }
        }
        state.taken -= n;
        state.delivered -= n;
        drop(state);
        self.readable().0.notify_waiters();
        self.wake_all_writers();
        for msg in orphans.into_iter().rev() {
            self.dead_letter_now(msg, DeathReason::ChannelDeleted, None);
        }
    }

    /// A delivered message was acknowledged.
    pub(crate) fn settle(&self) {
        self.settled.fetch_add(1, Ordering::SeqCst);
        self.wake_writers();
    }

    /// A delivered message was dead-lettered or discarded: it leaves without being acked.
    pub(crate) fn release(&self) {
        self.counters.released.fetch_add(1, Ordering::Relaxed);
        self.settled.fetch_add(1, Ordering::SeqCst);
        self.wake_writers();
    }

    /// A delivered message goes back to the head of the queue, its redelivery count raised.
    pub(crate) fn requeue(&self, mut msg: Message) {
        let count = msg.redelivery_count().unwrap_or(0).saturating_add(1);
        msg.headers_mut()
            .insert(names::REDELIVERY_COUNT, i64::from(count));
        let mut state = self.lock();
        state.taken -= 1;
        if state.closed {
            drop(state);
            self.wake_writers();
            self.dead_letter_now(msg, DeathReason::ChannelDeleted, None);
            return;
        }
        state.ready.push_front(msg);
        let wake_all = state.selective > 0;
        drop(state);
        self.counters.requeued.fetch_add(1, Ordering::Relaxed);
        self.wake_readers(wake_all);
    }

    /// Moves `msg` to the dead letter channel, waiting for room there; without one, logs and
    /// counts the loss. Cancel-safe: if the wait is cancelled the message is forced in.
    pub(crate) async fn dead_letter(
        &self,
        msg: Message,
        reason: DeathReason,
        error: Option<String>,
    ) {
        self.counters.dead_lettered.fetch_add(1, Ordering::Relaxed);
        match &self.dead_letters {
            Some(dlc) => {
                if let Err(msg) = dlc.bury(msg, &self.name, reason, error).await {
                    self.discard(&msg, reason);
                }
            }
            None => self.discard(&msg, reason),
        }
    }

    /// Like [`dead_letter`](Self::dead_letter) for paths that can not wait.
    pub(crate) fn dead_letter_now(&self, msg: Message, reason: DeathReason, error: Option<String>) {
        match &self.dead_letters {
            Some(dlc) => match dlc.bury_now(msg, &self.name, reason, error) {
                Ok(()) => {
                    self.counters.dead_lettered.fetch_add(1, Ordering::Relaxed);
                }
                Err(msg) => self.discard(&msg, reason),
            },
            None => self.discard(&msg, reason),
        }
    }

    fn discard(&self, msg: &Message, reason: DeathReason) {
        self.counters.discarded.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            channel = %self.name,
            message = %msg.id(),
            %reason,
            "no open dead letter channel: message discarded"
        );
    }

    pub(crate) fn add_selective(&self, delta: isize) {
        let mut state = self.lock();
        state.selective = state.selective.saturating_add_signed(delta);
    }

    /// Removes waiting messages the selector accepts (all without one); returns how many.
    pub(crate) fn purge(&self, selector: Option<&Selector>) -> usize {
        let mut state = self.lock();
        if !state.closed {
            self.read_feed(&mut state, None);
        }
        let before = state.ready.len();
        match selector {
            None => state.ready.clear(),
            Some(sel) => state.ready.retain(|m| !sel.matches(m)),
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

    /// Closes the queue and takes out what was waiting (for a fed queue, what it had not read
    /// too); in-flight deliveries settle as usual.
    pub(crate) fn close(&self) -> Vec<Message> {
        let mut state = self.lock();
        if state.closed {
            return Vec::new();
        }
        if let Some(log) = &self.feed {
            let state = &mut *state;
            log.detach(self, &mut state.cursor, &mut state.ready);
        }
        state.closed = true;
        self.closed.store(true, Ordering::Release);
        let rest = state.ready.drain(..).collect();
        drop(state);
        self.readable().0.notify_waiters();
        self.writable.notify_waiters();
        rest
    }

    pub(crate) fn stats(&self) -> ChannelStats {
        let (depth, accepted, delivered, in_flight) = {
            let state = self.lock();
            let in_flight = self.in_flight(&state);
            let unread = usize::try_from(self.unread(&state)).unwrap_or(usize::MAX);
            (
                state.ready.len() + unread,
                state.accepted + unread as u64,
                state.delivered,
                in_flight,
            )
        };
        let released = self.counters.released.load(Ordering::Relaxed);
        let acked = self.settled.load(Ordering::SeqCst).saturating_sub(released);
        let c = &self.counters;
        ChannelStats {
            depth,
            in_flight,
            accepted,
            delivered,
            acked,
            requeued: c.requeued.load(Ordering::Relaxed),
            dead_lettered: c.dead_lettered.load(Ordering::Relaxed),
            discarded: c.discarded.load(Ordering::Relaxed),
            duplicates: 0,
            invalid: 0,
        }
    }
}
