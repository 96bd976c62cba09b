//! One durable queue: a [`MessageStore`] over a queue of the embedded store.
//!
//! Every message is a record on disk from the moment its push completes until it is
//! acknowledged. In memory the queue keeps a small window: the next records read from disk,
//! not yet taken, and the sequence numbers of the messages in flight (to acknowledge the right
//! record). A completed push hands its message to the window directly, so it is not read back:
//! in order at once, or (pushes sharing a commit complete in any order) kept aside until the
//! records before it are in. A record no push handed over (its sender stopped waiting) is read
//! back from disk.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use eip_store::QueueLog;
use tokio::sync::Notify;

use super::codec;
use crate::log::Escaped;
use crate::message::{Message, MessageId};
use crate::store::{
    Browse, MessageStore, NotBrowsable, Overflow, Pager, Parked, Push, Select, StoreFailure,
    StoreStats, Take, Waiting,
};

/// How many records the window reads from disk at a time.
const READ_BATCH: usize = 256;

/// How many waiting messages a selective consumer looks through at most, from the head.
pub const SELECTOR_WINDOW: usize = 8192;

/// A durable channel's (or durable subscription's) store.
pub struct DurableQueue {
    log: QueueLog,
    capacity: usize,
    overflow: Overflow,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Takers park here: woken by a push, a requeue, or a commit.
    readable: Notify,
    /// Pushers waiting for room park here: woken by a settle.
    writable: Notify,
    /// Takers with a selector waiting in `take`.
    selective_waiting: AtomicUsize,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    acked: AtomicU64,
    requeued: AtomicU64,
}

struct State {
    /// Records read (or pushed in order), not taken yet: `(seq, message)` in order.
    window: VecDeque<(u64, Message)>,
    /// Every record before this is in the window, in flight, or acknowledged.
    next_read: u64,
    /// Messages of completed pushes after a gap (an earlier record not in yet), by record:
    /// they join the window once the gap is filled, and are never read back from disk.
    arrived: BTreeMap<u64, Message>,
    /// Records before this were there when the store opened: delivered again after a
    /// restart, they are marked redelivered.
    recovered: u64,
    /// The records of the messages in flight, by message id.
    in_flight: HashMap<MessageId, Vec<u64>>,
    in_flight_count: usize,
    /// Pushes handed to the disk and not yet committed: they count against the capacity.
    pushing: usize,
    delivered: u64,
}

impl DurableQueue {
    pub(crate) fn new(log: QueueLog, capacity: usize, overflow: Overflow) -> Self {
        let head = log.head();
        let first = log
            .read_page(0, 1)
            .ok()
            .map(|page| page.records.first().map_or(page.next, |(seq, _)| *seq));
        DurableQueue {
            capacity,
            overflow,
            state: Mutex::new(State {
                window: VecDeque::new(),
                next_read: first.unwrap_or(head),
                arrived: BTreeMap::new(),
                recovered: head,
                in_flight: HashMap::new(),
                in_flight_count: 0,
                pushing: 0,
                delivered: 0,
            }),
            closed: AtomicBool::new(false),
            readable: Notify::new(),
            writable: Notify::new(),
            selective_waiting: AtomicUsize::new(0),
            counters: Counters::default(),
            log,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under this lock, and every change keeps the state consistent.
        crate::sync::lock(&self.state)
    }

    /// Messages held: on disk and not acknowledged, plus those being written.
    fn held(&self, state: &State) -> usize {
        usize::try_from(self.log.len())
            .unwrap_or(usize::MAX)
            .saturating_add(state.pushing)
    }

    fn has_room(&self, state: &State) -> bool {
        self.held(state) < self.capacity
    }

    /// Moves the messages of completed pushes that follow on from `next_read` into the
    /// window; whether there were any.
    fn take_arrived(state: &mut State) -> bool {
        let before = state.window.len();
        while let Some(msg) = state.arrived.remove(&state.next_read) {
            state.window.push_back((state.next_read, msg));
            state.next_read += 1;
        }
        state.window.len() > before
    }

    /// A push completed: its message joins the window (or waits aside for a gap to fill), unless
    /// the window is full, in which case it is read back later.
    fn arrive(state: &mut State, seq: u64, msg: Message) {
        if seq < state.next_read || state.window.len() + state.arrived.len() >= READ_BATCH {
            return;
        }
        state.arrived.insert(seq, msg);
        Self::take_arrived(state);
    }

    /// Reads up to `want` more records into the window (the pushes' messages first); false if
    /// there were none. Damage costs only the damaged records: the log sets aside those that
    /// fail their checksum and reads around pages it can not read, and a record that does not
    /// decode as a message is set aside here, its bytes kept in the store's quarantine.
    fn read_more(&self, state: &mut State, want: usize) -> bool {
        if Self::take_arrived(state) {
            return true;
        }
        loop {
            if state.next_read >= self.log.head() {
                return false;
            }
            let page = match self.log.read_page(state.next_read, want.max(1)) {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(queue = self.log.name(), error = %Escaped(&error), "could not read the durable queue");
                    return false;
                }
            };
            // Past damage a page may hold nothing yet not be the end: read on from its `next`
            state.next_read = state.next_read.max(page.next);
            let before = state.window.len();
            for (seq, record) in page.records {
                match codec::decode(&record) {
                    Ok(mut msg) => {
                        if seq < state.recovered {
                            // Found on disk after a restart: it may have been delivered before.
                            msg.mark_redelivered();
                        }
                        state.window.push_back((seq, msg));
                    }
                    Err(error) => {
                        let reason = format!("not a message: {error}");
                        self.log.quarantine(seq, record, reason);
                    }
                }
            }
            // Read from disk, so no longer needed aside.
            state.arrived = state.arrived.split_off(&state.next_read);
            if state.window.len() > before || Self::take_arrived(state) {
                return true;
            }
        }
    }

    fn wake_readers(&self) {
        // A selective taker waiting counts itself (see `wait_take`): it needs every waiter
        // woken, since the one woken might not select the new message.
        if self.selective_waiting.load(Ordering::SeqCst) > 0 {
            self.readable.notify_waiters();
        } else {
            self.readable.notify_one();
        }
    }

    /// The oldest waiting message, taken out and acknowledged (to make room under
    /// `DropOldest`).
    fn drop_oldest(&self, state: &mut State) -> Option<Message> {
        if state.window.is_empty() {
            self.read_more(state, 1);
        }
        let (seq, msg) = state.window.pop_front()?;
        self.log.ack(seq);
        Some(msg)
    }

    async fn push_waiting(&self, slot: &mut Option<Message>) -> Push {
        let mut dropped = None;
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            let admitted = {
                let mut state = self.lock();
                if self.is_closed() {
                    return match slot.take() {
                        Some(msg) => Push::Closed(msg),
                        None => Push::Stored,
                    };
                }
                if !self.has_room(&state) && self.overflow == Overflow::DropOldest {
                    dropped = self.drop_oldest(&mut state);
                }
                let admitted = self.has_room(&state) || dropped.is_some();
                if admitted {
                    state.pushing += 1;
                }
                admitted
            };
            if admitted {
                break;
            }
            notified.await;
        }
        let writing = Writing(self);
        let Some(msg) = slot.take() else {
            return Push::Stored;
        };
        let appended = self.log.append_waiting(codec::encode(&msg)).await;
        drop(writing);
        match appended {
            Ok(seq) => {
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
                {
                    let mut state = self.lock();
                    Self::arrive(&mut state, seq, msg);
                    self.wake_readers();
                }
                match dropped {
                    Some(oldest) => Push::StoredDropping(oldest),
                    None => Push::Stored,
                }
            }
            Err(error) => Push::Failed(msg, StoreFailure::new(error)),
        }
    }

    async fn wait_take(
        &self,
        select: Option<&dyn Select>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> bool {
        let _selective = select.map(|_| Parked::new(&self.selective_waiting));
        loop {
            let notified = self.readable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            // Taken before looking, so that a commit after the look is not missed.
            let head = self.log.head();
            match self.try_take(select, max, into) {
                Take::Taken => return true,
                Take::Closed => return false,
                Take::Empty => {}
            }
            // A record committed without a push waiting on it (its sender gave up waiting)
            // wakes takers through the log.
            tokio::select! {
                () = notified => {}
                () = self.log.committed(head) => {}
            }
        }
    }

    async fn wait_writable(&self) {
        loop {
            let notified = self.writable.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            if self.accepts_now() {
                return;
            }
            notified.await;
        }
    }

    /// Finds and forgets the record of an in-flight `msg`.
    fn in_flight_seq(state: &mut State, msg: &Message) -> Option<u64> {
        let seqs = state.in_flight.get_mut(&msg.id())?;
        let seq = seqs.pop();
        if seqs.is_empty() {
            state.in_flight.remove(&msg.id());
        }
        if seq.is_some() {
            state.in_flight_count -= 1;
        }
        seq
    }

    fn finish(&self, msg: &Message, acked: bool) {
        let mut state = self.lock();
        if let Some(seq) = Self::in_flight_seq(&mut state, msg) {
            self.log.ack(seq);
            if acked {
                self.counters.acked.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(state);
        self.writable.notify_one();
    }
}

/// Counts a push as under way for as long as it lives (a cancelled push included).
struct Writing<'a>(&'a DurableQueue);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.lock().pushing -= 1;
        // Once committed, a push counted twice (in the log's length and here) until now: a
        // sender that looked meanwhile may be waiting for the room this frees.
        self.0.writable.notify_one();
    }
}

impl MessageStore for DurableQueue {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn try_push(&self, msg: Message) -> Push {
        let state = self.lock();
        if self.is_closed() {
            return Push::Closed(msg);
        }
        if !self.has_room(&state) {
            return Push::Full(msg);
        }
        match self.log.append(codec::encode(&msg)) {
            Ok(_ticket) => {
                // Written by the committer without anyone waiting; takers learn of it
                // through the log.
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
                self.wake_readers();
                Push::Stored
            }
            Err(error) => Push::Failed(msg, StoreFailure::new(error)),
        }
    }

    fn push<'a>(&'a self, slot: &'a mut Option<Message>) -> crate::store::Pushing<'a> {
        crate::store::Pushing::waiting(self.push_waiting(slot))
    }

    fn force_push(&self, msg: Message) -> Result<(), Message> {
        if self.is_closed() {
            return Err(msg);
        }
        match self.log.append(codec::encode(&msg)) {
            Ok(_ticket) => {
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
                self.readable.notify_waiters();
                Ok(())
            }
            Err(error) => {
                tracing::error!(queue = self.log.name(), error = %Escaped(&error), "message not stored");
                Err(msg)
            }
        }
    }

    fn accepts_now(&self) -> bool {
        let state = self.lock();
        self.is_closed() || self.has_room(&state) || self.overflow == Overflow::DropOldest
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
        if self.is_closed() {
            return Take::Closed;
        }
        let before = into.len();
        let state = &mut *state;
        match select {
            None => {
                if state.window.len() < max {
                    self.read_more(state, READ_BATCH.max(max));
                }
                while into.len() - before < max {
                    let Some((seq, msg)) = state.window.pop_front() else {
                        break;
                    };
                    state.in_flight.entry(msg.id()).or_default().push(seq);
                    into.push_back(msg);
                }
            }
            Some(select) => {
                let mut i = 0;
                while into.len() - before < max {
                    if i == state.window.len()
                        && (state.window.len() >= SELECTOR_WINDOW
                            || !self.read_more(state, READ_BATCH))
                    {
                        break;
                    }
                    if select.selects(&state.window[i].1) {
                        if let Some((seq, msg)) = state.window.remove(i) {
                            state.in_flight.entry(msg.id()).or_default().push(seq);
                            into.push_back(msg);
                        }
                    } else {
                        i += 1;
                    }
                }
            }
        }
        let taken = into.len() - before;
        if taken == 0 {
            return Take::Empty;
        }
        state.in_flight_count += taken;
        state.delivered += taken as u64;
        Take::Taken
    }

    fn take<'a>(
        &'a self,
        select: Option<&'a dyn Select>,
        max: usize,
        into: &'a mut VecDeque<Message>,
    ) -> Waiting<'a, bool> {
        Box::pin(self.wait_take(select, max, into))
    }

    fn unprefetch(&self, messages: &mut VecDeque<Message>) -> Vec<Message> {
        let mut state = self.lock();
        let mut orphans = Vec::new();
        while let Some(msg) = messages.pop_back() {
            let Some(seq) = Self::in_flight_seq(&mut state, &msg) else {
                continue;
            };
            state.delivered = state.delivered.saturating_sub(1);
            if self.is_closed() {
                self.log.ack(seq);
                orphans.push(msg);
            } else {
                state.window.push_front((seq, msg));
            }
        }
        orphans.reverse();
        self.wake_readers();
        orphans
    }

    fn durable_ack(&self, id: MessageId) -> Option<super::DurableAck> {
        let state = self.lock();
        // The one `settle` would ack: the last taken of that id.
        let seq = *state.in_flight.get(&id)?.last()?;
        Some(super::DurableAck {
            log: self.log.clone(),
            seq,
        })
    }

    fn settle(&self, msg: &Message) {
        self.finish(msg, true);
    }

    fn release(&self, msg: &Message) {
        self.finish(msg, false);
    }

    fn requeue(&self, msg: Message) -> Result<(), Message> {
        let mut state = self.lock();
        let Some(seq) = Self::in_flight_seq(&mut state, &msg) else {
            return Err(msg);
        };
        if self.is_closed() {
            // It goes to the dead letter channel instead.
            self.log.ack(seq);
            drop(state);
            self.writable.notify_one();
            return Err(msg);
        }
        state.window.push_front((seq, msg));
        self.counters.requeued.fetch_add(1, Ordering::Relaxed);
        self.wake_readers();
        Ok(())
    }

    fn purge(&self, select: Option<&dyn Select>) -> usize {
        let mut state = self.lock();
        let state = &mut *state;
        let mut purged = 0;
        let mut kept = VecDeque::new();
        // The first message kept that the window has no room for: read again from there.
        let mut resume = None;
        loop {
            while let Some((seq, msg)) = state.window.pop_front() {
                if select.is_none_or(|s| s.selects(&msg)) {
                    self.log.ack(seq);
                    purged += 1;
                } else if resume.is_none() && kept.len() < READ_BATCH {
                    kept.push_back((seq, msg));
                } else if resume.is_none() {
                    resume = Some(seq);
                }
            }
            if !self.read_more(state, READ_BATCH) {
                break;
            }
        }
        state.window = kept;
        if let Some(seq) = resume {
            state.next_read = seq;
        }
        if purged > 0 {
            self.writable.notify_waiters();
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
        pager.walk(state.window.iter().map(|(_, msg)| msg));
        super::browse::from_disk(&self.log, state.next_read, state.recovered, &mut pager);
        let on_disk = usize::try_from(self.log.len()).unwrap_or(usize::MAX);
        Ok(pager.finish(on_disk.saturating_sub(state.in_flight_count)))
    }

    fn close(&self) -> Vec<Message> {
        let mut state = self.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Vec::new();
        }
        let mut rest = Vec::new();
        loop {
            for (seq, msg) in state.window.drain(..) {
                self.log.ack(seq);
                rest.push(msg);
            }
            if !self.read_more(&mut state, READ_BATCH) {
                break;
            }
        }
        drop(state);
        self.readable.notify_waiters();
        self.writable.notify_waiters();
        rest
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn stats(&self) -> StoreStats {
        let state = self.lock();
        let on_disk = usize::try_from(self.log.len()).unwrap_or(usize::MAX);
        StoreStats {
            depth: on_disk.saturating_sub(state.in_flight_count),
            in_flight: state.in_flight_count,
            accepted: self.counters.accepted.load(Ordering::Relaxed),
            delivered: state.delivered,
            acked: self.counters.acked.load(Ordering::Relaxed),
            requeued: self.counters.requeued.load(Ordering::Relaxed),
        }
    }
}
