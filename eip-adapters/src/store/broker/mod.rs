//! What every broker store shares: a channel's store whose messages are in a broker, seen
//! through a local window (see the [store module](super) for what it guarantees).
//!
//! A broker module gives [`BrokerStore::open`] the two things that differ between brokers:
//! something that publishes one message and answers once the broker confirmed it
//! ([`Publish`], missing for a subscription, which the broker fills), and a
//! [`Source`](crate::bridge::Source) to read (missing for a fan-out's publishing side). The
//! rest is written here once: the window of what this process read and not yet settled
//! (a memory queue), the publish window, sending again while the broker is away, reading
//! again after a lost connection ([`reading`]), and acknowledging to the broker what the
//! channel settled.

mod publishing;
mod reading;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use eip_core::log::Escaped;
use eip_core::message::{Message, MessageId};
use eip_core::store::memory;
use eip_core::store::{
    MessageStore, Overflow, Parking, Push, Pushing, Select, StoreFailure, StoreStats, Take, Waiting,
};
use tokio::sync::{Notify, mpsc, watch};

use crate::bridge::{Delivery, Source};

pub(crate) use publishing::Publish;

/// The header a message gets when what the broker delivered could not be read as an eip
/// message (its headers did not parse): the payload arrives as it came, with the reason here.
pub const ENVELOPE_ERROR: &str = "eip-envelope-error";

/// How long a send keeps trying while the broker can not be reached (30 s by default).
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(30);

/// How many publishes of one store may wait for their confirms at once (256 by default).
pub const DEFAULT_PUBLISH_WINDOW: usize = 256;

/// When a store starts reading its broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// When a receiver first asks: a queue shared by processes, some of which only send.
    OnDemand,
    /// At once: a subscription, which sees what is published after it is made. Its
    /// [`ready`](MessageStore::ready) waits for its first connection.
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

impl Default for Limits {
    fn default() -> Self {
        Limits {
            publish_window: DEFAULT_PUBLISH_WINDOW,
            retry_for: DEFAULT_RETRY_FOR,
        }
    }
}

/// A channel's store whose messages are in a broker, seen through a local window: what a
/// RabbitMQ or NATS JetStream channel store is made of.
pub struct BrokerStore<D: Delivery> {
    shared: Arc<Shared<D>>,
    /// Set once the store first connected and declared what it reads; `None` for a store
    /// that is ready at once (it reads on demand, or not at all).
    connected: Option<watch::Receiver<bool>>,
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
    /// (`Reading::AtOnce`) at once, and its [`ready`](MessageStore::ready) waits for it. Needs
    /// a tokio runtime: the reading and acknowledging run on it.
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
        let wanted = matches!(source, Some((_, Reading::AtOnce)));
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
            wanted: AtomicBool::new(wanted),
            demand: Notify::new(),
        });
        runtime.spawn(reading::acknowledge(acks_in, shared.describe.clone()));
        let mut connected = None;
        if let Some((source, reading)) = source {
            let (ready, first) = watch::channel(false);
            if reading == Reading::AtOnce {
                connected = Some(first);
            }
            runtime.spawn(reading::read(shared.clone(), source, stopped, ready));
        }
        Ok(Arc::new(BrokerStore { shared, connected }))
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

    /// A receiver asks for messages: the reading starts, if it has not.
    fn want(&self) {
        if !self.wanted.load(Ordering::Relaxed) && !self.wanted.swap(true, Ordering::AcqRel) {
            self.demand.notify_one();
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

impl<D: Delivery> MessageStore for BrokerStore<D> {
    fn capacity(&self) -> usize {
        self.shared.local.capacity()
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn ready(&self) -> Waiting<'_, ()> {
        let mut connected = self.connected.clone();
        Box::pin(async move {
            if let Some(connected) = &mut connected {
                // A store whose reading ended before it connected (it closed) waits for
                // nothing.
                let _ = connected.wait_for(|connected| *connected).await;
            }
        })
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

    fn parking(&self) -> Option<Parking<'_>> {
        self.shared.want();
        self.shared.local.parking()
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
