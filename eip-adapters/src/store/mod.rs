//! Broker-backed channels: a channel whose messages live in a broker, so that every process
//! attached to it shares them (the way a deployment grows past one machine).
//!
//! A [`Backend`](eip_core::store::Backend) of this module gives a channel stores that keep
//! nothing of their own but a window: the broker holds the messages.
//! - **Sending** publishes to the broker and completes once the broker confirmed (a RabbitMQ
//!   publisher confirm, a JetStream ack), so a send that completed survives this process.
//!   While the broker can not be reached the send waits and tries again, for at most the
//!   backend's `retry_for`, then fails with the broker's error; a refusal that will not change
//!   (a declaration the broker refuses) fails it at once.
//! - **Receiving** reads the broker's queue or durable consumer into a local window of the
//!   channel's capacity (the broker's prefetch), and acknowledges a message to the broker only
//!   when its consumer acknowledged it on the channel. A message dead-lettered, discarded or
//!   purged here is acknowledged too (it left the channel another way). What is waiting here
//!   or in flight when the process dies is the broker's to deliver again, to this process or
//!   another one: at least once.
//! - **Point-to-point** channels are competing consumers across processes: every process reads
//!   the same queue (RabbitMQ) or the same durable consumer (JetStream).
//! - **Publish-subscribe** channels publish once to the broker, which fans out: each durable
//!   subscription is a queue bound to the channel's fanout exchange, or a durable consumer of
//!   the channel's stream, so subscribers in other processes get their copies; processes
//!   that subscribe under one name compete for that subscription's messages.
//! - A redelivery asked for on the channel (a nack, a failed attempt) stays in this process
//!   with its count raised; a message the broker delivers again after a lost connection or a
//!   dead process comes marked redelivered.
//! - Closing the channel in one process (deleting it) stops this process reading; what it
//!   held goes back to the broker for the others, so nothing is dead-lettered for it.
//!
//! The connection is the store's own: it connects in the background, and after a lost
//! connection connects again with a backoff and declares again what it declares.

#[cfg(feature = "nats")]
mod jetstream;
#[cfg(feature = "amqp")]
mod rabbitmq;

#[cfg(feature = "nats")]
pub use jetstream::JetStream;
#[cfg(feature = "amqp")]
pub use rabbitmq::RabbitMq;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use eip_core::message::{Message, MessageId};
use eip_core::store::memory;
use eip_core::store::{
    MessageStore, Overflow, Push, Pushing, Select, StoreFailure, StoreStats, Take, Waiting,
};
use futures::future::BoxFuture;
use tokio::sync::{Notify, mpsc, watch};

use crate::bridge::{Backoff, BridgeError, Delivery, Source};
use eip_core::log::Escaped;

/// The header a message gets when what the broker delivered could not be read as an eip
/// message (its headers did not parse): the payload arrives as it came, with the reason here.
pub const ENVELOPE_ERROR: &str = "eip-envelope-error";

/// How long a send keeps trying while the broker can not be reached (30 s by default).
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(30);

/// How many publishes of one store may wait for their confirms at once (256 by default).
pub const DEFAULT_PUBLISH_WINDOW: usize = 256;

/// How long a closed store keeps acknowledging what its consumers settle.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The stores opened and not yet waited for by [`connected`]: each one's first connection.
static OPENING: Mutex<Vec<(String, watch::Receiver<bool>)>> = Mutex::new(Vec::new());

/// Waits until every broker store opened so far (in this process, since the last call) has
/// connected and declared what it reads (its queue, its binding, its durable consumer), for at
/// most `limit`: a subscription sees what is published after it is made on the broker, so a
/// flow starts sending once this returns. `Err` names the stores still not connected.
pub async fn connected(limit: Duration) -> Result<(), Vec<String>> {
    let opening = std::mem::take(
        &mut *OPENING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let deadline = tokio::time::Instant::now() + limit;
    let mut late = Vec::new();
    for (describe, mut ready) in opening {
        let waited = tokio::time::timeout_at(deadline, ready.wait_for(|ready| *ready)).await;
        // A store dropped before it connected (its sender gone) waits for nothing.
        if waited.is_err() {
            late.push(describe);
        }
    }
    match late.is_empty() {
        true => Ok(()),
        false => Err(late),
    }
}

/// Publishes one message and answers once the broker confirmed it.
pub(crate) trait Publish: Send + Sync + 'static {
    fn publish<'a>(&'a self, msg: &'a Message) -> BoxFuture<'a, Result<(), BridgeError>>;
}

/// When a store starts reading its broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// When a receiver first asks: a queue shared by processes, some of which only send.
    OnDemand,
    /// At once: a subscription, which sees what is published after it is made.
    AtOnce,
}

/// What a broker store does besides the broker's own settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Publishes waiting for their confirms at once.
    pub(crate) publish_window: usize,
    /// How long a send keeps trying while the broker can not be reached.
    pub(crate) retry_for: Duration,
}

/// A channel's store in a broker; see the [module](self).
pub struct BrokerStore<D: Delivery> {
    shared: Arc<Shared<D>>,
}

struct Shared<D> {
    /// The broker destination, for logs and errors.
    describe: String,
    /// What this process read and not yet settled: waiting here or in flight.
    local: memory::Queue,
    /// The broker's deliveries of the messages in `local`, by message id, to acknowledge.
    deliveries: Mutex<HashMap<MessageId, VecDeque<D>>>,
    acks: mpsc::UnboundedSender<D>,
    publisher: Option<Arc<dyn Publish>>,
    publishing: AtomicUsize,
    room: Notify,
    limits: Limits,
    closed: AtomicBool,
    stop: watch::Sender<bool>,
    published: AtomicU64,
    /// Whether anyone has asked for a message: a store that is only sent to reads nothing
    /// (it would hold messages its process never takes).
    wanted: AtomicBool,
    demand: Notify,
}

impl<D: Delivery> BrokerStore<D> {
    /// A store publishing through `publisher` and reading `source` (either may be missing: a
    /// fan-out's publishing side reads nothing, a subscription publishes nothing), holding at
    /// most `capacity` messages read and not settled. A queue's store (`Reading::OnDemand`)
    /// starts reading when a receiver first asks for a message; a subscription's
    /// (`Reading::AtOnce`) at once, and [`connected`] waits for it. Needs a tokio runtime: the
    /// reading and acknowledging run on it.
    pub(crate) fn open<S>(
        describe: String,
        capacity: usize,
        publisher: Option<Arc<dyn Publish>>,
        source: Option<(S, Reading)>,
        limits: Limits,
    ) -> Result<Arc<dyn MessageStore>, StoreFailure>
    where
        S: Source<Delivery = D>,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            StoreFailure::new(std::io::Error::other(format!(
                "{describe}: a broker-backed channel is opened inside a tokio runtime"
            )))
        })?;
        let (acks, acks_in) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            describe,
            local: memory::Queue::new(capacity, Overflow::Backpressure),
            deliveries: Mutex::new(HashMap::new()),
            acks,
            publisher,
            publishing: AtomicUsize::new(0),
            room: Notify::new(),
            limits,
            closed: AtomicBool::new(false),
            stop,
            published: AtomicU64::new(0),
            wanted: AtomicBool::new(false),
            demand: Notify::new(),
        });
        runtime.spawn(acknowledge(acks_in, shared.describe.clone()));
        if let Some((source, reading)) = source {
            let (ready, connected) = watch::channel(false);
            match reading {
                Reading::AtOnce => {
                    shared.wanted.store(true, Ordering::Release);
                    OPENING
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((shared.describe.clone(), connected));
                }
                Reading::OnDemand => drop(connected),
            }
            runtime.spawn(read(shared.clone(), source, stopped, ready));
        }
        Ok(Arc::new(BrokerStore { shared }))
    }
}

impl<D: Delivery> Drop for BrokerStore<D> {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
    }
}

impl<D> Shared<D> {
    fn deliveries(&self) -> MutexGuard<'_, HashMap<MessageId, VecDeque<D>>> {
        self.deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The broker's delivery of one message with this id, if any is held.
    fn take_delivery(&self, id: MessageId) -> Option<D> {
        let mut deliveries = self.deliveries();
        let held = deliveries.get_mut(&id)?;
        let delivery = held.pop_front();
        if held.is_empty() {
            deliveries.remove(&id);
        }
        delivery
    }

    /// The message with this id left the channel: acknowledges it to the broker.
    fn done(&self, id: MessageId) {
        if let Some(delivery) = self.take_delivery(id) {
            // The acknowledging task ends only after the store: the send can not fail while
            // anyone can call this.
            let _ = self.acks.send(delivery);
        }
    }

    /// The message with this id goes back to the broker unacknowledged (it delivers it again
    /// once the connection closes, or after its ack wait).
    fn give_back(&self, id: MessageId) {
        drop(self.take_delivery(id));
    }

    fn failure(&self, cause: impl std::fmt::Display) -> StoreFailure {
        StoreFailure::new(std::io::Error::other(format!("{}: {cause}", self.describe)))
    }
}

/// Acknowledges to the broker what the store hands over, a few at a time, until the store
/// is gone.
async fn acknowledge<D: Delivery>(mut acks: mpsc::UnboundedReceiver<D>, describe: String) {
    use futures::StreamExt;
    let mut pending = futures::stream::FuturesUnordered::new();
    loop {
        tokio::select! {
            next = acks.recv() => match next {
                Some(delivery) => pending.push(delivery.ack()),
                None => break,
            },
            Some(acked) = pending.next(), if !pending.is_empty() => {
                if let Err(error) = acked {
                    // The broker delivers it again: a duplicate, never a loss.
                    tracing::warn!(store = %describe, error = %Escaped(&error), "acknowledging to the broker failed");
                }
            }
        }
    }
    while let Some(acked) = pending.next().await {
        if let Err(error) = acked {
            tracing::warn!(store = %describe, error = %Escaped(&error), "acknowledging to the broker failed");
        }
    }
}

/// Reads the broker into the store's window until the store closes, connecting again with a
/// backoff whenever the connection is lost.
async fn read<S: Source>(
    shared: Arc<Shared<S::Delivery>>,
    mut source: S,
    mut stopped: watch::Receiver<bool>,
    ready: watch::Sender<bool>,
) {
    let mut backoff = Backoff::default();
    let window = shared.local.capacity();
    if !shared.wanted.load(Ordering::Acquire) {
        tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => return,
            () = shared.demand.notified() => {}
        }
    }
    'connect: loop {
        let connected = tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => break,
            connected = source.connect(window) => connected,
        };
        let lost = match connected {
            Ok(()) => {
                backoff.reset();
                ready.send_replace(true);
                tracing::debug!(store = %shared.describe, "broker store reading");
                loop {
                    let next = tokio::select! {
                        biased;
                        _ = stopped.wait_for(|stop| *stop) => break 'connect,
                        next = source.next() => next,
                    };
                    match next {
                        Ok(delivery) => {
                            if !keep(&shared, delivery, &mut stopped).await {
                                break 'connect;
                            }
                        }
                        Err(error) => break error,
                    }
                }
            }
            Err(error) => error,
        };
        let wait = backoff.next_wait();
        tracing::warn!(store = %shared.describe, error = %Escaped(&lost), ?wait, "broker store: reading again after a wait");
        tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    // What consumers hold may still be settled for a moment; then the connection closes and
    // the broker has every message not acknowledged, to deliver again.
    let until = Instant::now() + CLOSE_GRACE;
    while shared.local.stats().in_flight > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(source);
}

/// Puts one delivery into the window (waiting for room); false once the store is closed or
/// stopped (the delivery then goes back to the broker).
async fn keep<D: Delivery>(
    shared: &Shared<D>,
    delivery: D,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let msg = match delivery.message() {
        Ok(msg) => msg,
        Err(error) => {
            tracing::warn!(store = %shared.describe, error = %Escaped(&error), "a delivery that is not an eip message: passed on as it came");
            let mut msg = Message::new(delivery.payload());
            msg.headers_mut().insert(ENVELOPE_ERROR, error.to_string());
            msg
        }
    };
    let id = msg.id();
    // Held before the message can be taken, so that its settling finds it.
    shared
        .deliveries()
        .entry(id)
        .or_default()
        .push_back(delivery);
    let mut slot = Some(msg);
    let pushed = tokio::select! {
        biased;
        _ = stopped.wait_for(|stop| *stop) => None,
        pushed = shared.local.push(&mut slot) => Some(pushed),
    };
    match pushed {
        Some(Push::Stored) => true,
        _ => {
            shared.give_back(id);
            false
        }
    }
}

/// Holds one place of the publish window until dropped.
struct Publishing<'a, D>(&'a Shared<D>);

impl<D> Drop for Publishing<'_, D> {
    fn drop(&mut self) {
        self.0.publishing.fetch_sub(1, Ordering::AcqRel);
        self.0.room.notify_waiters();
    }
}

impl<D: Delivery> Shared<D> {
    /// A place in the publish window, waiting for one; `None` once the store is closed.
    async fn publish_place(&self) -> Option<Publishing<'_, D>> {
        loop {
            let room = self.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            if self.publishing.fetch_add(1, Ordering::AcqRel) < self.limits.publish_window {
                return Some(Publishing(self));
            }
            self.publishing.fetch_sub(1, Ordering::AcqRel);
            room.await;
        }
    }

    /// Publishes `msg` until the broker confirms it, the refusal is permanent, or `retry_for`
    /// is over.
    async fn publish(&self, publisher: &dyn Publish, msg: &Message) -> Result<(), BridgeError> {
        let started = Instant::now();
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        loop {
            match publisher.publish(msg).await {
                Ok(()) => {
                    self.published.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(error)
                    if error.is_permanent()
                        || started.elapsed() >= self.limits.retry_for
                        || self.closed.load(Ordering::Acquire) =>
                {
                    return Err(error);
                }
                Err(error) => {
                    let left = self.limits.retry_for.saturating_sub(started.elapsed());
                    let wait = backoff.next_wait().min(left);
                    tracing::debug!(store = %self.describe, error = %Escaped(&error), ?wait, "publishing again");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// Takes note of the messages a purge removes, so that they are acknowledged.
struct Noting<'a> {
    select: Option<&'a dyn Select>,
    removed: Mutex<Vec<MessageId>>,
}

impl Select for Noting<'_> {
    fn selects(&self, msg: &Message) -> bool {
        let selected = self.select.is_none_or(|s| s.selects(msg));
        if selected {
            self.removed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(msg.id());
        }
        selected
    }
}

impl<D> Shared<D> {
    /// A receiver asks for messages: the reading starts, if it has not.
    fn want(&self) {
        if !self.wanted.load(Ordering::Relaxed) && !self.wanted.swap(true, Ordering::AcqRel) {
            self.demand.notify_one();
        }
    }
}

impl<D: Delivery> MessageStore for BrokerStore<D> {
    fn capacity(&self) -> usize {
        self.shared.local.capacity()
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn try_push(&self, msg: Message) -> Push {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Push::Closed(msg);
        }
        let Some(publisher) = shared.publisher.clone() else {
            return Push::Failed(
                msg,
                shared.failure("a subscription is filled by the broker"),
            );
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Push::Full(msg);
        };
        // A copy that may be lost (a wire tap's): published in the background.
        let shared = shared.clone();
        runtime.spawn(async move {
            if let Some(_place) = shared.publish_place().await
                && let Err(error) = shared.publish(&*publisher, &msg).await
            {
                tracing::warn!(store = %shared.describe, error = %Escaped(&error), message = %msg.id(), "a copy sent without waiting was not published");
            }
        });
        Push::Stored
    }

    fn push<'a>(&'a self, slot: &'a mut Option<Message>) -> Pushing<'a> {
        let shared = &*self.shared;
        Pushing::waiting(async move {
            let Some(msg) = slot.clone() else {
                return Push::Stored;
            };
            let Some(publisher) = &shared.publisher else {
                return Push::Failed(
                    msg,
                    shared.failure("a subscription is filled by the broker"),
                );
            };
            let Some(_place) = shared.publish_place().await else {
                return Push::Closed(msg);
            };
            match shared.publish(&**publisher, &msg).await {
                Ok(()) => {
                    *slot = None;
                    Push::Stored
                }
                Err(error) => {
                    *slot = None;
                    Push::Failed(msg, StoreFailure::new(error))
                }
            }
        })
    }

    fn force_push(&self, msg: Message) -> Result<(), Message> {
        match self.try_push(msg) {
            Push::Stored => Ok(()),
            Push::StoredDropping(_) => Ok(()),
            Push::Full(msg) | Push::Closed(msg) | Push::Failed(msg, _) => Err(msg),
        }
    }

    fn accepts_now(&self) -> bool {
        let shared = &self.shared;
        !shared.closed.load(Ordering::Acquire)
            && shared.publishing.load(Ordering::Acquire) < shared.limits.publish_window
    }

    fn writable(&self) -> Waiting<'_, ()> {
        Box::pin(async move {
            loop {
                let room = self.shared.room.notified();
                let mut room = std::pin::pin!(room);
                room.as_mut().enable();
                if self.accepts_now() || self.shared.closed.load(Ordering::Acquire) {
                    return;
                }
                room.await;
            }
        })
    }

    fn try_take(
        &self,
        select: Option<&dyn Select>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> Take {
        self.shared.want();
        self.shared.local.try_take(select, max, into)
    }

    fn take<'a>(
        &'a self,
        select: Option<&'a dyn Select>,
        max: usize,
        into: &'a mut VecDeque<Message>,
    ) -> Waiting<'a, bool> {
        self.shared.want();
        self.shared.local.take(select, max, into)
    }

    fn parking(&self) -> Option<(&Notify, &AtomicUsize)> {
        self.shared.want();
        self.shared.local.parking()
    }

    fn rearm(&self) {
        self.shared.local.rearm();
    }

    fn unprefetch(&self, messages: &mut VecDeque<Message>) -> Vec<Message> {
        for msg in self.shared.local.unprefetch(messages) {
            // Closed: the broker has it, for this process or another.
            self.shared.give_back(msg.id());
        }
        Vec::new()
    }

    fn settle(&self, msg: &Message) {
        self.shared.local.settle(msg);
        self.shared.done(msg.id());
    }

    fn release(&self, msg: &Message) {
        self.shared.local.release(msg);
        self.shared.done(msg.id());
    }

    fn requeue(&self, msg: Message) -> Result<(), Message> {
        if let Err(msg) = self.shared.local.requeue(msg) {
            // Closed: not dead-lettered, the broker delivers it again elsewhere.
            self.shared.give_back(msg.id());
        }
        Ok(())
    }

    fn add_selective(&self, delta: isize) {
        self.shared.local.add_selective(delta);
    }

    fn purge(&self, select: Option<&dyn Select>) -> usize {
        let noting = Noting {
            select,
            removed: Mutex::new(Vec::new()),
        };
        let n = self.shared.local.purge(Some(&noting));
        let removed = noting
            .removed
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for id in removed {
            self.shared.done(id);
        }
        n
    }

    fn close(&self) -> Vec<Message> {
        let shared = &self.shared;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return Vec::new();
        }
        shared.stop.send_replace(true);
        for msg in shared.local.close() {
            shared.give_back(msg.id());
        }
        shared.room.notify_waiters();
        Vec::new()
    }

    fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    fn stats(&self) -> StoreStats {
        StoreStats {
            accepted: self.shared.published.load(Ordering::Relaxed),
            ..self.shared.local.stats()
        }
    }
}

/// A name for a subscription that ends with its subscriber: unique on the broker.
pub(crate) fn passing_name(base: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    let host: String = host
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(24)
        .collect();
    format!("{base}-{host}{}-{n}", std::process::id())
}

/// The store name's subscription, if it names one (`prices#audit` → `audit`).
pub(crate) fn subscription_of(store: &str) -> Option<&str> {
    store
        .split_once(eip_core::store::SUBSCRIPTION_SEPARATOR)
        .map(|(_, name)| name)
}
