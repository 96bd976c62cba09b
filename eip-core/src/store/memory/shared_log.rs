//! The log a publish-subscribe channel's subscriptions read from.
//!
//! A publish stores the message here once. Each subscription keeps a cursor into the log and
//! reads forward into its own [`Queue`] when its consumer wants more, cloning the message (two
//! reference-count increments, no payload copy) on the consumer's side. An entry stays until
//! every subscription attached when it was appended has read it; the last reader moves it out
//! instead of cloning it. So a publish costs the same with one subscriber or a hundred, and the
//! per-subscriber work is spread over the consumers, on whichever cores run them.
//!
//! Capacity stays per subscription. A subscription holds what it has not read yet plus what its
//! queue holds (waiting or in flight): `head - progress`, where its progress is the log position
//! it started at, plus its settled deliveries, plus what was purged from it. A publish waits
//! while any subscription is full. To avoid looking at every subscription for every message,
//! the log keeps `floor`, a lower bound of all progress (each only grows, and a subscription
//! attaching starts at the head): while `head - floor` is below the capacity no subscription can
//! be full. Only when it is not does the append look at each one (reading their progress, no
//! lock), raising the floor if none is full; if one is, the publisher waits on it
//! ([`SharedLog::room`]), starting its next look there.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::queue::Queue;
use crate::channel::{Copied, Guard, Joins, JoinsSlot, Moment, RecentIds};
use crate::message::{Message, MessageId};
use crate::store::{MessageStore, TakeOne};

struct State {
    /// The messages held, oldest first. Kept apart from their counts (`unread`): a message
    /// goes into the log as it came, not copied into an entry built beside it first and then
    /// read back at once (a stall on every publish).
    entries: VecDeque<Message>,
    /// For each of `entries`, the subscriptions that have not read it. Never decreases along
    /// the log (a subscription reads in order and detaches reading everything), so the read
    /// entries are a prefix.
    unread: VecDeque<u32>,
    /// Log position of `entries[0]`; `base + entries.len()` is the head.
    base: u64,
    head: u64,
    /// The subscriptions reading the log, replaced (not changed) on attach and detach so that
    /// a publisher looking for room takes them with one reference-count increment.
    subscriptions: Arc<[Arc<Queue>]>,
    /// No subscription's progress is below this.
    floor: u64,
    closed: bool,
    /// The joins leaving the channel, when a publish does nothing but append here and follow
    /// them: read with the append ([`SharedLog::try_append_following`]), so that such a
    /// publish takes one lock, not the set's too. Walks hold it pinned (see
    /// [`HeldJoins`](crate::channel::HeldJoins)), so it is changed only through the slot.
    joins: JoinsSlot,
    /// The channel's loop memory, once a join touches it ([`LoopGuard::in_log`]): an append
    /// that follows joins consults it under this lock.
    recent: Option<RecentIds>,
}

pub(crate) struct SharedLog {
    capacity: usize,
    state: Mutex<State>,
    /// `State::head`, for looks that do not need the lock (it only grows).
    head: AtomicU64,
    readable: Notify,
    readers_waiting: AtomicUsize,
    /// A publish woke the parked consumers and none has looked at the log since: later
    /// publishes need not wake them again (see [`woken`](Self::woken)).
    woken: AtomicBool,
    /// Where the last look for room found a full subscription.
    scan_from: AtomicUsize,
    /// Whether `State::recent` is there (it never goes), for looks without the lock.
    remembers: AtomicBool,
    /// Appends refused by the loop memory.
    duplicates: AtomicU64,
}

pub(crate) enum Append {
    /// Stored; for an append that follows joins and a log that carries some, the message
    /// again (for them) and the joins.
    Stored(Option<(Message, Joins)>),
    Full(Message),
    Closed(Message),
    /// Not stored: the loop memory has stored its id here before.
    Duplicate(Message),
}

impl SharedLog {
    /// A log for subscriptions of this capacity each.
    pub(crate) fn new(capacity: usize) -> Self {
        SharedLog {
            capacity,
            state: Mutex::new(State {
                entries: VecDeque::with_capacity(capacity.min(1024)),
                unread: VecDeque::with_capacity(capacity.min(1024)),
                base: 0,
                head: 0,
                subscriptions: Arc::from([]),
                floor: 0,
                closed: false,
                joins: JoinsSlot::default(),
                recent: None,
            }),
            head: AtomicU64::new(0),
            readable: Notify::new(),
            readers_waiting: AtomicUsize::new(0),
            woken: AtomicBool::new(false),
            scan_from: AtomicUsize::new(0),
            remembers: AtomicBool::new(false),
            duplicates: AtomicU64::new(0),
        }
    }

    /// Keeps a loop memory, `make`'s, from now on (idempotent).
    pub(crate) fn remember_ids(&self, make: impl FnOnce() -> RecentIds) {
        let mut state = self.lock();
        if state.recent.is_none() {
            state.recent = Some(make());
        }
        self.remembers.store(true, Ordering::Release);
    }

    /// Whether the log keeps a loop memory.
    pub(crate) fn remembers_ids(&self) -> bool {
        self.remembers.load(Ordering::Acquire)
    }

    /// The loop memory's answer for `id` stored at `now` (see [`RecentIds::admit`]); true
    /// without a memory.
    pub(crate) fn admit_id(&self, id: MessageId, now: Moment) -> bool {
        self.lock().admits(id, Some(now))
    }

    /// Whether the loop memory would admit `id` at `now`, remembering nothing.
    pub(crate) fn would_admit_id(&self, id: MessageId, now: Moment) -> bool {
        self.lock()
            .recent
            .as_ref()
            .is_none_or(|recent| recent.would_admit(id, now))
    }

    /// Appends refused as duplicates.
    pub(crate) fn duplicates(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under this lock, and every change keeps the state consistent.
        crate::sync::lock(&self.state)
    }

    /// The position the next message will take.
    pub(crate) fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Consumers park here waiting for messages: a publish wakes them all.
    pub(crate) fn readable(&self) -> &Notify {
        &self.readable
    }

    pub(crate) fn readers_waiting(&self) -> &AtomicUsize {
        &self.readers_waiting
    }

    /// What a parked consumer, registered for the next wake-up, clears before it looks at
    /// the log: a publish after this must wake it. (One wake-up per look is enough: every
    /// consumer registered before it is woken by it.)
    pub(crate) fn woken(&self) -> &AtomicBool {
        &self.woken
    }

    /// Attaches the subscription `make` builds from the current head (where it starts
    /// reading); `None` once the log is closed.
    pub(crate) fn attach(&self, make: impl FnOnce(u64) -> Queue) -> Option<Arc<Queue>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let queue = Arc::new(make(state.head));
        state.subscriptions = state
            .subscriptions
            .iter()
            .cloned()
            .chain([queue.clone()])
            .collect();
        Some(queue)
    }

    /// Detaches `queue`, reading into `into` what it had not read yet (in the same look at the
    /// log, so no message appended meanwhile waits for it forever).
    pub(crate) fn detach(&self, queue: &Queue, reader: &Reader, into: &mut VecDeque<Message>) {
        let detached = {
            let mut state = self.lock();
            // No take goes straight to the log from here on: what comes now is not for it
            reader.set_direct(false);
            let mut cursor = reader.position();
            let unread = usize::try_from(state.head.saturating_sub(cursor)).unwrap_or(usize::MAX);
            read_locked(&mut state, &mut cursor, unread, into);
            reader.advance(&state, cursor);
            let before = state.subscriptions.clone();
            state.subscriptions = before
                .iter()
                .filter(|q| !std::ptr::eq(q.as_ref(), queue))
                .cloned()
                .collect();
            before
        };
        // Dropped outside the lock: it may hold the last reference to a queue.
        drop(detached);
    }

    /// Sets the joins a publish that appends here follows (`None`: none, or a publish that
    /// does more than append reads them from the channel's set).
    pub(crate) fn carry_joins(&self, joins: Option<Joins>) {
        let retiring = self.lock().joins.replace(joins);
        // The lock is let go of: the set it held may be the last hold on channels.
        drop(retiring);
    }

    /// Stores `msg` for every attached subscription, if none of them is full: `floor` answers
    /// that at once until it says one may be, then their progress does. Without subscriptions
    /// the message is gone at once, as there is nobody to read it. Follows no joins.
    pub(crate) fn try_append(&self, msg: Message) -> Append {
        let mut state = self.lock();
        let Some(readers) = self.room_for_one(&mut state) else {
            return self.refused(&state, msg);
        };
        put(&mut state, msg, readers);
        self.published(state);
        Append::Stored(None)
    }

    /// Stores `msg` like [`try_append`](Self::try_append), and hands back a copy and the
    /// joins to follow if the log carries joins ([`carry_joins`](Self::carry_joins)), read
    /// under the same lock as the append. Given the time (`loops`), the loop memory decides
    /// first, under that lock too: an id stored here before is a duplicate, room or not.
    pub(crate) fn try_append_following(&self, msg: Message, loops: Option<Moment>) -> Append {
        let mut state = self.lock();
        let Some(readers) = self.room_for_one(&mut state) else {
            return self.refused_following(&state, msg, loops);
        };
        if !state.admits(msg.id(), loops) {
            return self.duplicate(msg);
        }
        // Each way ends in its own return: a result built once and moved out would be read
        // back at once from the stores that wrote it (a stall on every publish).
        match state.joins.get().cloned() {
            None => {
                put(&mut state, msg, readers);
                self.published(state);
                Append::Stored(None)
            }
            Some(joins) => {
                let copy = msg.clone();
                put(&mut state, msg, readers);
                self.published(state);
                Append::Stored(Some((copy, joins)))
            }
        }
    }

    /// [`try_append_following`](Self::try_append_following) storing a copy of `msg`, which
    /// stays with the caller; declined, storing nothing, when that would not store it at once
    /// (the log is full or closed: the caller's `try_append_following` sorts that out). The
    /// joins come back held pinned by `guard`, which the caller pinned before this call.
    // Inlined into the walk, its one caller: what it hands back then stays in registers.
    #[inline(always)]
    pub(crate) fn try_append_copy<'g>(
        &self,
        msg: &Message,
        loops: Option<Moment>,
        guard: &'g Guard,
    ) -> Copied<'g> {
        // The copy is made before the lock: taking it lets the copy's writes settle, and the
        // append then moves it from memory that is done being written.
        let copy = msg.clone();
        let mut state = self.lock();
        let Some(readers) = self.room_for_one(&mut state) else {
            return Copied::Declined;
        };
        if !state.admits(msg.id(), loops) {
            drop(state);
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            return Copied::Duplicate;
        }
        let joins = state.joins.pinned(guard);
        put(&mut state, copy, readers);
        self.published(state);
        Copied::Stored(joins)
    }

    /// Why [`try_append_following`](Self::try_append_following) found no room: a duplicate
    /// is refused as one at once (it would be after the wait).
    #[cold]
    fn refused_following(&self, state: &State, msg: Message, loops: Option<Moment>) -> Append {
        if let (Some(now), Some(recent), false) = (loops, &state.recent, state.closed)
            && !recent.would_admit(msg.id(), now)
        {
            return self.duplicate(msg);
        }
        self.refused(state, msg)
    }

    #[cold]
    fn duplicate(&self, msg: Message) -> Append {
        self.duplicates.fetch_add(1, Ordering::Relaxed);
        Append::Duplicate(msg)
    }

    /// The subscriptions a message appended now is for, if it may be appended now: the log is
    /// open and none of them is full. The floor is raised lazily: when it says one may be full,
    /// the subscriptions are looked at (atomics only) before the answer, so a publish waits
    /// only when one really is.
    #[inline(always)]
    fn room_for_one(&self, state: &mut State) -> Option<u32> {
        if state.closed {
            return None;
        }
        let readers = u32::try_from(state.subscriptions.len()).unwrap_or(u32::MAX);
        if readers > 0 && state.head.saturating_sub(state.floor) >= self.capacity as u64 {
            match self.look(state.head, &state.subscriptions) {
                Look::Room(floor) => state.floor = state.floor.max(floor),
                Look::Full(_) => return None,
            }
        }
        Some(readers)
    }

    /// Why [`room_for_one`](Self::room_for_one) said no.
    #[cold]
    fn refused(&self, state: &State, msg: Message) -> Append {
        if state.closed {
            Append::Closed(msg)
        } else {
            Append::Full(msg)
        }
    }

    /// After an append: publishes the head, lets go of the lock and wakes the parked readers
    /// if need be. Release is enough for the head: readers read the entries under the lock,
    /// and a parked reader counts itself (`readers_waiting`, `woken`) before its look under
    /// the lock, so the lock orders that look against the append and the wake-up check here;
    /// the atomic head is read without the lock only for fill levels, which it can only
    /// understate.
    #[inline(always)]
    fn published(&self, state: MutexGuard<'_, State>) {
        self.head.store(state.head, Ordering::Release);
        drop(state);
        if self.readers_waiting.load(Ordering::SeqCst) > 0
            && !self.woken.load(Ordering::SeqCst)
            && !self.woken.swap(true, Ordering::SeqCst)
        {
            self.readable.notify_waiters();
        }
    }

    /// Appends, waiting while a subscription is full. Cancel-safe: the message is stored or
    /// given back whole.
    pub(crate) async fn append(&self, msg: Message) -> Result<(), Message> {
        match self.try_append(msg) {
            Append::Stored(_) => Ok(()),
            Append::Closed(msg) | Append::Duplicate(msg) => Err(msg),
            // Boxed: the rare path, kept out of every publish's future (moved whole per message).
            Append::Full(msg) => match Box::pin(self.append_waiting(msg, None)).await {
                Append::Stored(_) => Ok(()),
                Append::Closed(msg) | Append::Duplicate(msg) | Append::Full(msg) => Err(msg),
            },
        }
    }

    /// [`try_append_following`](Self::try_append_following) (with the time `loops` for the
    /// loop memory), waiting while the log is full. Never [`Append::Full`]. What
    /// [`append`](Self::append) waits with too: a log it appends to carries no joins but while
    /// its channel's set changes, and then the copy handed back is dropped.
    pub(crate) async fn append_waiting(&self, mut msg: Message, loops: Option<Moment>) -> Append {
        loop {
            match self.try_append_following(msg, loops) {
                Append::Full(m) => {
                    msg = m;
                    self.room().await;
                }
                done => return done,
            }
        }
    }

    /// Reads up to `max` messages from `reader`'s position into `into`, moving it past them;
    /// returns how many.
    pub(crate) fn read(&self, reader: &Reader, max: usize, into: &mut VecDeque<Message>) -> usize {
        let mut state = self.lock();
        let mut cursor = reader.position();
        let read = read_locked(&mut state, &mut cursor, max, into);
        reader.advance(&state, cursor);
        read
    }

    /// A take straight from the log, if `reader` may take so (see [`Reader`]): up to `max`
    /// messages, the first handed back, the others appended to `rest`, all counted as taken.
    #[inline(always)]
    pub(crate) fn take_first(
        &self,
        reader: &Reader,
        max: usize,
        rest: &mut VecDeque<Message>,
    ) -> TakeOne {
        let mut state = self.lock();
        if !reader.direct.load(Ordering::Relaxed) {
            return TakeOne::Batched;
        }
        let mut cursor = reader.position();
        if state.head <= cursor {
            return TakeOne::Empty;
        }
        let mut i = index_of(&state, cursor);
        cursor += 1;
        if max == 1 || state.head <= cursor {
            // One to take: the reader moves past it first, so that the take is the last step
            // and writes its message straight into the caller's result. Taken first, the
            // result was staged here and copied out, 88 bytes read back just after they were
            // written (a chain of ten joins: 220 instructions a message, several per cent of
            // its time). The entry is there: `head` is past the cursor.
            reader.advance(&state, cursor);
            reader.count_taken(&state, 1);
            return pass_first(&mut state, &mut i);
        }
        let first = pass_first(&mut state, &mut i);
        if !matches!(first, TakeOne::Taken(_)) {
            return first;
        }
        let more = read_locked(&mut state, &mut cursor, max - 1, rest);
        reader.advance(&state, cursor);
        reader.count_taken(&state, 1 + more as u64);
        first
    }

    /// Shows `see` the messages from position `from` to the head, in order, taking nothing,
    /// until it answers `false`.
    pub(crate) fn peek(&self, from: u64, mut see: impl FnMut(&Message) -> bool) {
        let state = self.lock();
        let start = usize::try_from(from.saturating_sub(state.base)).unwrap_or(usize::MAX);
        for message in state.entries.iter().skip(start) {
            if !see(message) {
                break;
            }
        }
    }

    /// Raises the floor to `floor` (a lower bound of every subscription's progress, read
    /// after the head that made the look necessary).
    fn raise_floor(&self, floor: u64) {
        let mut state = self.lock();
        state.floor = state.floor.max(floor);
    }

    /// The subscriptions to look at, when the floor says one of them may be full.
    fn may_be_full(&self) -> Option<(u64, Arc<[Arc<Queue>]>)> {
        let state = self.lock();
        let maybe_full = !state.closed
            && !state.subscriptions.is_empty()
            && state.head.saturating_sub(state.floor) >= self.capacity as u64;
        maybe_full.then(|| (state.head, state.subscriptions.clone()))
    }

    /// Looks at each subscription: the first full one found, or the lowest progress.
    fn look<'a>(&self, head: u64, subscriptions: &'a [Arc<Queue>]) -> Look<'a> {
        let n = subscriptions.len();
        let from = self.scan_from.load(Ordering::Relaxed) % n.max(1);
        let mut floor = head;
        for k in 0..n {
            let i = (from + k) % n;
            let queue = &subscriptions[i];
            if queue.is_closed() {
                continue;
            }
            let progress = queue.progress();
            if head.saturating_sub(progress) >= self.capacity as u64 {
                self.scan_from.store(i, Ordering::Relaxed);
                return Look::Full(queue);
            }
            floor = floor.min(progress);
        }
        Look::Room(floor)
    }

    /// Whether a message would be stored now without waiting.
    pub(crate) fn accepts_now(&self) -> bool {
        let Some((head, subscriptions)) = self.may_be_full() else {
            return true;
        };
        match self.look(head, &subscriptions) {
            Look::Room(floor) => {
                self.raise_floor(floor);
                true
            }
            Look::Full(_) => false,
        }
    }

    /// Waits until no subscription is full (or the log is closed).
    pub(crate) async fn room(&self) {
        while let Some((head, subscriptions)) = self.may_be_full() {
            match self.look(head, &subscriptions) {
                Look::Room(floor) => self.raise_floor(floor),
                Look::Full(queue) => queue.not_full(self).await,
            }
        }
    }

    /// Closes the log: appends fail from now on, reads still find what was stored.
    pub(crate) fn close(&self) {
        let subscriptions = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::replace(&mut state.subscriptions, Arc::from([]))
        };
        drop(subscriptions);
        self.readable.notify_waiters();
    }

    /// Forgets the subscriptions (which hold the log: the channel is gone, and with it every
    /// publisher). Their consumers still read what was stored.
    pub(crate) fn release_subscriptions(&self) {
        let subscriptions = std::mem::replace(&mut self.lock().subscriptions, Arc::from([]));
        drop(subscriptions);
    }
}

impl State {
    /// Whether the loop memory, given the time (`loops`), lets `id` in: it has not stored it
    /// here before, and remembers it from now on. Without the time or a memory, it does.
    #[inline(always)]
    fn admits(&mut self, id: MessageId, loops: Option<Moment>) -> bool {
        match (loops, self.recent.as_mut()) {
            (Some(now), Some(recent)) => recent.admit(id, now),
            _ => true,
        }
    }
}

enum Look<'a> {
    /// No subscription is full; none has progressed less than this.
    Room(u64),
    Full(&'a Arc<Queue>),
}

mod entries;
mod reader;

use entries::{index_of, pass_first, put, read_locked};
pub(crate) use reader::Reader;

#[cfg(test)]
mod tests;
