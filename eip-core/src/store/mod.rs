//! Channel stores: where a channel's messages live, behind one interface.
//!
//! What a channel *means* (point-to-point or publish-subscribe, its datatype, dead letters,
//! expiration, selective consumers, loop detection, joins, counters) is written once, in
//! [`crate::channel`]. Where its messages *are* is a [`MessageStore`]: one bounded, acknowledging
//! FIFO queue. A point-to-point channel is one store; each subscription of a publish-subscribe
//! channel is one. A [`Backend`] makes the stores of the channels built on it.
//!
//! Two backends come with eip-core:
//! - **memory** (the default): messages in the process, gone when it ends
//!   ([`memory`]);
//! - **durable**: the embedded store of one data directory ([`durable`]): a push completes once
//!   the message is on disk, and after a restart every message not acknowledged is delivered
//!   again.
//!
//! A broker queue or stream is a third backend, implementing the same two traits (the
//! `store` module of eip-adapters: RabbitMQ, NATS JetStream). A broker is shared by processes,
//! so it also fans a publish-subscribe channel's messages out itself
//! ([`Backend::fans_out`]).
//!
//! # What every store guarantees
//! - **Capacity.** It holds at most [`capacity`](MessageStore::capacity) messages, counting
//!   those waiting and those delivered and not yet settled. A push beyond that waits (or, under
//!   [`Overflow::DropOldest`], makes room by handing back the oldest waiting message for the
//!   channel to dead-letter).
//! - **Order.** Messages are taken in the order pushed; a requeued or unprefetched message goes
//!   back to the head.
//! - **Settling.** Every message taken is settled exactly once: acknowledged
//!   ([`settle`](MessageStore::settle)), released (it left another way: dead-lettered,
//!   discarded), or requeued. A store identifies the message by its id: two copies with one id
//!   in one store (an archival join keeps such copies) are interchangeable.
//! - **Closing** hands back everything waiting; deliveries in flight still settle.
//!
//! Dead-lettering is not a store's business: a store hands back what must go there, and the
//! channel puts it there.

mod browse;
pub mod durable;
pub mod memory;
mod parking;

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::message::{Message, MessageId};

pub(crate) use browse::Pager;
pub use browse::{Browse, NotBrowsable};
pub use memory::Overflow;
pub use parking::Parking;
pub(crate) use parking::{Parked, take_parked};

/// What separates a publish-subscribe channel's name from a durable subscription's in the name
/// of the subscription's store (`prices#audit`): a backend's [`Backend::remove`] and
/// [`Backend::names`] see such names.
pub const SUBSCRIPTION_SEPARATOR: char = '#';

/// A boxed future borrowing from the store: the shape of every waiting path.
pub type Waiting<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Tells which messages a selective consumer takes.
pub trait Select: Send + Sync {
    /// Whether `msg` is one to take.
    fn selects(&self, msg: &Message) -> bool;
}

/// Why a store could not take a message: the store names itself and the cause.
#[derive(Debug, Clone)]
pub struct StoreFailure(Arc<dyn std::error::Error + Send + Sync>);

impl StoreFailure {
    /// A failure with this cause.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreFailure(Arc::new(error))
    }
}

impl fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StoreFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// What a push did.
#[derive(Debug)]
pub enum Push {
    /// Stored (for a durable store: on disk).
    Stored,
    /// Stored after taking the oldest waiting message out ([`Overflow::DropOldest`]); the
    /// channel dead-letters it.
    StoredDropping(Message),
    /// No room now (only from [`MessageStore::try_push`]).
    Full(Message),
    /// The store is closed.
    Closed(Message),
    /// The store could not take it (a disk full past its limit, an I/O error).
    Failed(Message, StoreFailure),
}

/// What a take did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// At least one message was moved to the receiver's buffer, each counted in flight.
    Taken,
    /// Nothing (selected) is waiting.
    Empty,
    /// The store is closed and holds nothing more for this taker.
    Closed,
}

/// What a take handing its first message back did (see [`MessageStore::try_take_first`]).
#[derive(Debug)]
pub enum TakeOne {
    /// This message (the first taken), in flight from now on, as are any others taken.
    Taken(Message),
    /// Nothing is waiting.
    Empty,
    /// The store is closed and holds nothing more.
    Closed,
    /// The store takes only through [`try_take`](MessageStore::try_take).
    Batched,
}

/// A push under way: ready at once on the fast path (no allocation), or a boxed wait.
#[must_use = "a push does nothing unless awaited"]
pub struct Pushing<'a>(PushingState<'a>);

enum PushingState<'a> {
    Ready(Option<Push>),
    Waiting(Waiting<'a, Push>),
}

impl<'a> Pushing<'a> {
    /// A push that is already done.
    pub fn ready(push: Push) -> Self {
        Pushing(PushingState::Ready(Some(push)))
    }

    /// A push that completes with `future`.
    pub fn waiting(future: impl Future<Output = Push> + Send + 'a) -> Self {
        Pushing(PushingState::Waiting(Box::pin(future)))
    }
}

impl Future for Pushing<'_> {
    type Output = Push;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Push> {
        match &mut self.get_mut().0 {
            PushingState::Ready(push) => match push.take() {
                Some(push) => Poll::Ready(push),
                None => Poll::Pending,
            },
            PushingState::Waiting(future) => future.as_mut().poll(cx),
        }
    }
}

/// A store's counters (the channel adds its own: dead letters, duplicates, invalid).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Messages waiting (on disk too, for a durable store).
    pub depth: usize,
    /// Messages taken and not yet settled.
    pub in_flight: usize,
    /// Messages stored.
    pub accepted: u64,
    /// Deliveries made (a redelivery counts again).
    pub delivered: u64,
    /// Deliveries acknowledged.
    pub acked: u64,
    /// Deliveries put back.
    pub requeued: u64,
}

/// One bounded, acknowledging FIFO queue of messages: what a channel (or one subscription)
/// keeps its messages in. See the [module](self) for the guarantees.
///
/// A store implements what a store is: room ([`capacity`](Self::capacity),
/// [`accepts_now`](Self::accepts_now), [`writable`](Self::writable)), putting in
/// ([`try_push`](Self::try_push), [`force_push`](Self::force_push)), taking out
/// ([`try_take`](Self::try_take), [`take`](Self::take)), settling
/// ([`settle`](Self::settle), [`requeue`](Self::requeue)), [`purge`](Self::purge),
/// [`close`](Self::close), [`is_closed`](Self::is_closed) and [`stats`](Self::stats). The
/// rest has a default that is right for any store, and a store overrides it only to do it
/// cheaper or to count it apart: a waiting [`push`](Self::push) built on `try_push` and
/// `writable`, [`release`](Self::release) as `settle`, [`unprefetch`](Self::unprefetch) as
/// requeues, [`ready`](Self::ready) at once, [`browse`](Self::browse) refused. How a receiver waits is the channel's: a store
/// that wants its receivers to park without a boxed wait says where, with
/// [`parking`](Self::parking); which receivers select is the receivers' own business (a
/// parked selective receiver counts itself where the store's `Parking` says).
///
/// The hot paths ([`push`](Self::push) when there is room, [`try_take`](Self::try_take),
/// [`settle`](Self::settle)) are plain calls; only waiting is boxed.
pub trait MessageStore: Send + Sync + 'static {
    /// How many messages it holds at most, waiting and in flight.
    fn capacity(&self) -> usize;

    /// Whether messages survive the process.
    fn is_durable(&self) -> bool {
        false
    }

    /// Waits until the store can take and give messages: one that connects in the
    /// background (a broker's subscription) has connected and declared what it reads, so it
    /// sees what is published from then on. Ready at once by default.
    fn ready(&self) -> Waiting<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Stores `msg` if that needs no waiting. A durable store queues the write and returns
    /// before it is on disk: for copies that may be lost (wire taps) and for paths that can not
    /// wait.
    fn try_push(&self, msg: Message) -> Push;

    /// Stores the message in `slot`, waiting for room; completes once it is stored (on disk,
    /// for a durable store). Cancel-safe: the message leaves `slot` only once it is stored (or
    /// it is handed back in the result).
    ///
    /// By default: [`try_push`](Self::try_push), and while it finds the store full,
    /// [`writable`](Self::writable) and again (right for a store whose `try_push` stores it
    /// for good).
    fn push<'a>(&'a self, slot: &'a mut Option<Message>) -> Pushing<'a> {
        let Some(msg) = slot.take() else {
            return Pushing::ready(Push::Stored);
        };
        match self.try_push(msg) {
            Push::Full(msg) => {
                *slot = Some(msg);
                Pushing::waiting(push_when_writable(self, slot))
            }
            pushed => Pushing::ready(pushed),
        }
    }

    /// Stores `msg` at once when that needs no waiting and is final, saying how it went; hands
    /// it back (`Err`) for [`push`](Self::push) to store, waiting, otherwise. The fast path of a
    /// send: it keeps the waiting out of the send's future. By default always handed back; a
    /// store whose `try_push` stores for good (in memory) answers with it unless full.
    fn push_now(&self, msg: Message) -> Result<Push, Message> {
        Err(msg)
    }

    /// Stores `msg` ignoring the capacity, without waiting: for paths that can not wait (drop
    /// handlers), where losing the message would be worse than holding one more than the bound.
    fn force_push(&self, msg: Message) -> Result<(), Message>;

    /// Whether a push would complete now without waiting for room.
    fn accepts_now(&self) -> bool;

    /// Waits until there is room (or the store is closed).
    fn writable(&self) -> Waiting<'_, ()>;

    /// Moves up to `max` messages (that `select` selects) into `into`; each is in flight from
    /// now on.
    fn try_take(
        &self,
        select: Option<&dyn Select>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> Take;

    /// Takes up to `max` messages from the head, as [`try_take`](Self::try_take) without a
    /// selector, but hands the first back directly and appends only the others to `rest`:
    /// what a receiver that selects everything asks when its buffer is empty. A receiver
    /// taking one at a time never touches a buffer, and one that finds a single message
    /// waiting (a consumer keeping up) does not pass it through one. By default
    /// [`TakeOne::Batched`]: the receiver goes through [`try_take`](Self::try_take).
    fn try_take_first(&self, _max: usize, _rest: &mut VecDeque<Message>) -> TakeOne {
        TakeOne::Batched
    }

    /// [`try_take_first`](Self::try_take_first) of one: what a receiver taking one at a time
    /// asks, through a call with less to pass and nothing to buffer.
    fn try_take_one(&self) -> TakeOne {
        TakeOne::Batched
    }

    /// Waits until [`try_take`](Self::try_take) takes something: `true`, or `false` once the
    /// store is closed and holds nothing more for this selector.
    fn take<'a>(
        &'a self,
        select: Option<&'a dyn Select>,
        max: usize,
        into: &'a mut VecDeque<Message>,
    ) -> Waiting<'a, bool>;

    /// Where a receiver may park inline (no boxed wait) when [`try_take`](Self::try_take)
    /// found nothing; see [`Parking`]. `None` (the default): the receiver waits through
    /// [`take`](Self::take).
    fn parking(&self) -> Option<Parking<'_>> {
        None
    }

    /// Messages taken and never handed to a consumer, given back to the head in their order
    /// (no redelivery counted). Returns those it could not take back (the store is closed).
    ///
    /// By default each is [requeued](Self::requeue), the last first (so the store counts them
    /// as requeued).
    fn unprefetch(&self, messages: &mut VecDeque<Message>) -> Vec<Message> {
        let mut orphans = Vec::new();
        while let Some(msg) = messages.pop_back() {
            if let Err(msg) = self.requeue(msg) {
                orphans.push(msg);
            }
        }
        orphans.reverse();
        orphans
    }

    /// The acknowledgement of the taken message `id`, for a step that writes it in a commit of
    /// its own (an idempotent receiver's seen key, an aggregator's group), so the two happen
    /// together or not at all. The message stays in flight: settle it as usual afterwards (its
    /// ack is then already done). `None` (the default) for a store that is not durable, or a
    /// message it did not hand out.
    fn durable_ack(&self, id: MessageId) -> Option<durable::DurableAck> {
        let _ = id;
        None
    }

    /// A taken message was acknowledged: it is gone.
    fn settle(&self, msg: &Message);

    /// A taken message left without an ack (dead-lettered, discarded). By default as
    /// [`settle`](Self::settle) (counted as acknowledged).
    fn release(&self, msg: &Message) {
        self.settle(msg);
    }

    /// A taken message goes back to the head, to be taken again; `Err` gives it back when the
    /// store is closed. The caller has raised its redelivery count.
    fn requeue(&self, msg: Message) -> Result<(), Message>;

    /// Removes the waiting messages `select` selects (all without one); how many.
    fn purge(&self, select: Option<&dyn Select>) -> usize;

    /// Shows the waiting messages (those `select` selects, if given) from the `offset`-th
    /// on, at most `limit`, in the order they would be taken, without taking them (see
    /// [`Browse`]). By default [`NotBrowsable`]: right for a store whose messages live
    /// elsewhere (a broker's queue), which the caller names better than the store can.
    fn browse(
        &self,
        select: Option<&dyn Select>,
        offset: usize,
        limit: usize,
    ) -> Result<Browse, NotBrowsable> {
        let _ = (select, offset, limit);
        Err(NotBrowsable {
            reason: "this store keeps its messages outside the process".to_owned(),
        })
    }

    /// Closes the store: no more pushes; returns every waiting message.
    fn close(&self) -> Vec<Message>;

    /// Whether it is closed.
    fn is_closed(&self) -> bool;

    /// Its counters.
    fn stats(&self) -> StoreStats;
}

/// The default [`MessageStore::push`]'s wait: room, then `try_push`, until it is stored.
async fn push_when_writable<S: MessageStore + ?Sized>(
    store: &S,
    slot: &mut Option<Message>,
) -> Push {
    loop {
        store.writable().await;
        let Some(msg) = slot.take() else {
            return Push::Stored;
        };
        match store.try_push(msg) {
            Push::Full(msg) => *slot = Some(msg),
            pushed => return pushed,
        }
    }
}

/// Where the stores of the channels built on it live: memory, a data directory, a broker.
pub trait Backend: fmt::Debug + Send + Sync + 'static {
    /// Whether its stores survive the process.
    fn is_durable(&self) -> bool;

    /// Opens the store `name` (creating it if it is new) for a channel of this capacity and
    /// overflow policy. A durable store comes back with what it held before.
    fn open(
        &self,
        name: &str,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError>;

    /// The names of the stores that exist and start with `prefix` (durable subscriptions find
    /// themselves again after a restart this way).
    fn names(&self, prefix: &str) -> Vec<String>;

    /// Removes the store `name` and whatever it held.
    fn remove(&self, name: &str) -> Waiting<'_, Result<(), BackendError>>;

    /// Where it keeps messages, for people (a directory, a broker address).
    fn location(&self) -> String;

    /// Whether the backend fans a publish-subscribe channel's messages out itself, as a broker
    /// shared by several processes must: the channel then publishes each message once, into
    /// the store [`open`](Self::open) gives for the channel's own name, and each subscription
    /// is a store of [`open_subscription`](Self::open_subscription) that the backend fills
    /// (so a subscriber in another process gets its copy too). Otherwise (the default) the
    /// channel pushes a copy into each of its subscriptions' stores itself.
    fn fans_out(&self) -> bool {
        false
    }

    /// For a backend that [fans out](Self::fans_out): the store of the subscription `name` of
    /// `channel`, which the backend fills with every message published from now on; `None` for
    /// a subscription that ends with its subscriber (its store is removed when it closes).
    fn open_subscription(
        &self,
        channel: &str,
        name: Option<&str>,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        let _ = (name, capacity, overflow);
        Err(BackendError {
            store: channel.to_owned(),
            location: self.location(),
            cause: StoreFailure::new(std::io::Error::other(
                "this backend does not fan out: subscriptions are the channel's own stores",
            )),
        })
    }
}

/// A backend could not open or remove a store.
#[derive(Debug, Clone, thiserror::Error)]
#[error("store `{store}` in {location}: {cause}")]
pub struct BackendError {
    /// The store.
    pub store: String,
    /// Where the backend keeps it.
    pub location: String,
    /// Why.
    pub cause: StoreFailure,
}

/// The memory backend: what channels are built on unless told otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory;

impl Backend for Memory {
    fn is_durable(&self) -> bool {
        false
    }

    fn open(
        &self,
        _name: &str,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        Ok(Arc::new(memory::Queue::new(capacity, overflow)))
    }

    fn names(&self, _prefix: &str) -> Vec<String> {
        Vec::new()
    }

    fn remove(&self, _name: &str) -> Waiting<'_, Result<(), BackendError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn location(&self) -> String {
        "memory".to_owned()
    }
}

impl PartialEq for BackendError {
    fn eq(&self, other: &Self) -> bool {
        self.store == other.store
            && self.location == other.location
            && self.cause.to_string() == other.cause.to_string()
    }
}

impl Eq for BackendError {}
