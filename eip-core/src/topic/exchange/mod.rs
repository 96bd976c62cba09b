//! Topic Exchange: routes each message to the channels whose bindings match its subject.
//!
//! An exchange holds [`Binding`]s, each a key (a [topic pattern](crate::topic)) and one or more
//! target channels. A published message's subject (its `subject` header; none is the empty
//! subject, zero words) is matched against every key at once through a [`TopicTrie`], and the
//! message goes to every target of every matching binding, **once per target** however many of
//! its bindings matched. When nothing matches, it goes to the exchange's alternate target if
//! there is one, else it is counted as dropped ([`ExchangeStats::dropped`]). A subject that can
//! not be routed (a `subject` header that is not a string, or longer than 255 bytes) matches
//! nothing, keyless bindings included, and takes the same way.
//!
//! Bindings change at runtime, while messages flow. Each message is routed against one
//! snapshot of the bindings, taken when it is published: it sees a change (or a batch of
//! changes, [`TopicExchange::update`]) entirely or not at all. A change edits the bindings in
//! place when no message is being routed against them (a publish that starts meanwhile waits
//! for the edit), and otherwise edits a copy, made outside the lock, then swaps it in: a
//! publish takes the lock only to clone an `Arc`.
//!
//! Match results are cached per subject ([`MatchCache`], [`DEFAULT_CACHE_CAPACITY`] entries),
//! tagged with the generation of the bindings they came from; each batch of changes starts a
//! new generation, so a message is always routed by the bindings of its own snapshot.

mod binding;
mod error;
mod table;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

pub use binding::{Binding, BindingChanges, BindingId};
pub use error::{ExchangeError, PublishError};

use self::binding::Change;
use self::table::Table;
use crate::channel::Channel;
use crate::message::Message;
use crate::sync::lock;
#[cfg(doc)]
use crate::topic::TopicTrie;
use crate::topic::{CacheStats, DEFAULT_CACHE_CAPACITY, MAX_TOPIC_LEN, MatchCache};

/// A named exchange that routes messages to channels by matching their subject against its
/// bindings' topic patterns.
///
/// Cheap to clone: clones share the bindings and the counters. It is a
/// `tower::Service<Message>` too (always ready; the future waits for the targets' room).
///
/// ```
/// use eip_core::Message;
/// use eip_core::channel::{Channel, PointToPoint};
/// use eip_core::topic::{Binding, Routed, TopicExchange};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let nyse = PointToPoint::new("nyse", 10)?;
/// let ibm = PointToPoint::new("ibm", 10)?;
/// let exchange = TopicExchange::new("stocks");
/// exchange.bind(Binding::new("stock.*.nyse", [nyse.clone()])?);
/// exchange.bind(Binding::new("stock.ibm.#", [ibm.clone(), nyse.clone()])?);
///
/// // Both bindings match; `nyse` is a target of both and still gets one copy.
/// let msg = Message::builder("buy 100").subject("stock.ibm.nyse").build();
/// assert_eq!(exchange.publish(msg).await?, Routed::Targets(2));
/// assert_eq!(nyse.stats().accepted, 1);
/// assert_eq!(ibm.stats().accepted, 1);
///
/// // Nothing matches and there is no alternate: dropped, and counted.
/// let msg = Message::builder("sell 5").subject("bond.ibm.nyse").build();
/// assert_eq!(exchange.publish(msg).await?, Routed::Dropped);
/// assert_eq!(exchange.stats().dropped, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TopicExchange {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    table: RwLock<Arc<Table>>,
    /// Serialises changes; holds the next binding id.
    writer: Mutex<u64>,
    counters: Counters,
    /// Subject → the target slots it matched, per table generation.
    cache: MatchCache<u32>,
}

#[derive(Default)]
struct Counters {
    published: AtomicU64,
    routed: AtomicU64,
    deliveries: AtomicU64,
    alternate: AtomicU64,
    dropped: AtomicU64,
    unroutable: AtomicU64,
    failed: AtomicU64,
}

/// An exchange's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExchangeStats {
    /// Messages published.
    pub published: u64,
    /// Messages that matched at least one binding.
    pub routed: u64,
    /// Copies accepted by targets (a message routed to three targets counts three).
    pub deliveries: u64,
    /// Messages that matched nothing and were accepted by the alternate target.
    pub alternate: u64,
    /// Messages that matched nothing with no alternate target set.
    pub dropped: u64,
    /// Messages whose subject could not be routed (not a string, or over 255 bytes); they are
    /// also counted under `alternate`, `dropped` or `failed`.
    pub unroutable: u64,
    /// Copies refused by a target or the alternate because it was closed.
    pub failed: u64,
}

/// What publishing a message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routed {
    /// It matched, and this many targets accepted it (each once).
    Targets(usize),
    /// It matched nothing and went to the alternate target.
    Alternate,
    /// It matched nothing, and there is no alternate target.
    Dropped,
}

/// Where a message would go, as [`TopicExchange::route_message`] answers without sending it.
#[derive(Debug, Clone)]
pub enum Route {
    /// To these targets, each once, ordered by name.
    Targets(Vec<Channel>),
    /// To the alternate target: nothing matched.
    Alternate(Channel),
    /// Nowhere: nothing matched and there is no alternate target.
    Dropped,
}

impl TopicExchange {
    /// An exchange with no bindings and no alternate target.
    pub fn new(name: impl Into<String>) -> Self {
        TopicExchange {
            inner: Arc::new(Inner {
                name: name.into(),
                table: RwLock::new(Arc::new(Table::default())),
                writer: Mutex::new(0),
                counters: Counters::default(),
                cache: MatchCache::new(DEFAULT_CACHE_CAPACITY),
            }),
        }
    }

    /// Sets the alternate target, where messages that match no binding go.
    pub fn with_alternate(self, channel: impl Into<Channel>) -> Self {
        self.set_alternate(Some(channel.into()));
        self
    }

    /// The exchange's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds a binding.
    pub fn bind(&self, binding: Binding) -> BindingId {
        let mut next_id = lock(&self.inner.writer);
        let id = BindingId(*next_id);
        self.commit(vec![Change::Bind(binding)], &mut next_id);
        id
    }

    /// Removes a binding and returns it. A binding that is not on the exchange (never was, or
    /// was removed already) is [`ExchangeError::UnknownBinding`], and nothing changes.
    pub fn unbind(&self, id: BindingId) -> Result<Binding, ExchangeError> {
        let (_, mut removed) = self.change(vec![Change::Unbind(id)])?;
        removed.pop().ok_or_else(|| self.unknown(id))
    }

    /// Applies several changes at once: every message is routed either before all of them or
    /// after all of them. If any unbind names a binding that is not on the exchange (or names
    /// one twice), nothing changes. Returns the ids of the new bindings, in order.
    pub fn update(&self, changes: BindingChanges) -> Result<Vec<BindingId>, ExchangeError> {
        Ok(self.change(changes.changes)?.0)
    }

    /// Sets or removes the alternate target.
    pub fn set_alternate(&self, channel: Option<Channel>) {
        let mut next_id = lock(&self.inner.writer);
        self.commit(vec![Change::Alternate(channel)], &mut next_id);
    }

    /// The alternate target, if set.
    pub fn alternate(&self) -> Option<Channel> {
        self.snapshot().alternate.clone()
    }

    /// The bindings, by id (ids ascend in the order the bindings were made).
    pub fn bindings(&self) -> Vec<(BindingId, Binding)> {
        let table = self.snapshot();
        table
            .bindings()
            .iter()
            .map(|(id, b)| (*id, b.clone()))
            .collect()
    }

    /// One binding, if it is on the exchange.
    pub fn binding(&self, id: BindingId) -> Option<Binding> {
        self.snapshot().bindings().get(&id).cloned()
    }

    /// How many bindings there are.
    pub fn binding_count(&self) -> usize {
        self.snapshot().bindings().len()
    }

    /// The targets a message with this subject would go to, each once, ordered by name; empty
    /// when nothing matches (or the subject is over 255 bytes). Sends nothing, counts nothing.
    pub fn route(&self, subject: &str) -> Vec<Channel> {
        self.targets(&self.snapshot(), subject)
    }

    /// Where `msg` would go if published now, alternate target included. Sends nothing,
    /// counts nothing.
    pub fn route_message(&self, msg: &Message) -> Route {
        let table = self.snapshot();
        let targets = match routable_subject(msg) {
            Some(subject) => self.targets(&table, subject),
            None => Vec::new(),
        };
        if !targets.is_empty() {
            return Route::Targets(targets);
        }
        match table.alternate.clone() {
            Some(alternate) => Route::Alternate(alternate),
            None => Route::Dropped,
        }
    }

    /// Routes `msg`: sends it to each matching target once (one after another, each send
    /// waiting for room), or to the alternate target, or drops it. Completes when every
    /// target has accepted its copy.
    ///
    /// A closed target does not stop the others: they all get their copy, and the error
    /// hands the message back with the names of those that refused it.
    pub async fn publish(&self, msg: Message) -> Result<Routed, PublishError> {
        let counters = &self.inner.counters;
        counters.published.fetch_add(1, Ordering::Relaxed);
        let table = self.snapshot();
        let slots = match routable_subject(&msg) {
            Some(subject) => self.matching_slots(&table, subject),
            None => {
                counters.unroutable.fetch_add(1, Ordering::Relaxed);
                Arc::from([])
            }
        };
        if slots.is_empty() {
            let alternate = table.alternate.clone();
            drop(table);
            return self.unmatched(msg, alternate).await;
        }
        counters.routed.fetch_add(1, Ordering::Relaxed);
        let (mut delivered, mut failed) = (0, Vec::new());
        let mut msg = Some(msg);
        let mut returned = None;
        for (n, channel) in slots.iter().filter_map(|s| table.channel(*s)).enumerate() {
            // The last target takes the message itself: one clone fewer.
            let copy = if n + 1 == slots.len() {
                msg.take()
            } else {
                msg.clone()
            };
            let Some(copy) = copy else { break };
            match channel.send(copy).await {
                Ok(_) => delivered += 1,
                Err(e) => {
                    failed.push(channel.name().to_owned());
                    returned.get_or_insert(e.into_message());
                }
            }
        }
        counters
            .deliveries
            .fetch_add(delivered as u64, Ordering::Relaxed);
        match returned.or(msg) {
            Some(message) if !failed.is_empty() => {
                counters
                    .failed
                    .fetch_add(failed.len() as u64, Ordering::Relaxed);
                Err(PublishError {
                    exchange: self.inner.name.clone(),
                    failed,
                    delivered,
                    message: Box::new(message),
                })
            }
            _ => Ok(Routed::Targets(delivered)),
        }
    }

    /// The exchange's counters.
    pub fn stats(&self) -> ExchangeStats {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ExchangeStats {
            published: get(&c.published),
            routed: get(&c.routed),
            deliveries: get(&c.deliveries),
            alternate: get(&c.alternate),
            dropped: get(&c.dropped),
            unroutable: get(&c.unroutable),
            failed: get(&c.failed),
        }
    }

    /// The match cache's hits, misses and entries.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.cache.stats()
    }

    async fn unmatched(
        &self,
        msg: Message,
        alternate: Option<Channel>,
    ) -> Result<Routed, PublishError> {
        let counters = &self.inner.counters;
        let Some(alternate) = alternate else {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(exchange = %self.inner.name, id = %msg.id(), "no binding matched; message dropped");
            return Ok(Routed::Dropped);
        };
        match alternate.send(msg).await {
            Ok(_) => {
                counters.alternate.fetch_add(1, Ordering::Relaxed);
                Ok(Routed::Alternate)
            }
            Err(e) => {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                Err(PublishError {
                    exchange: self.inner.name.clone(),
                    failed: vec![alternate.name().to_owned()],
                    delivered: 0,
                    message: Box::new(e.into_message()),
                })
            }
        }
    }

    /// The bindings as they are now; later changes do not touch this copy.
    fn snapshot(&self) -> Arc<Table> {
        self.inner
            .table
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Checks and applies `changes` as one. Returns the new ids and the removed bindings.
    fn change(
        &self,
        changes: Vec<Change>,
    ) -> Result<(Vec<BindingId>, Vec<Binding>), ExchangeError> {
        let mut next_id = lock(&self.inner.writer);
        if let Some(id) = self.snapshot().first_unknown(&changes) {
            return Err(self.unknown(id));
        }
        Ok(self.commit(changes, &mut next_id))
    }

    /// Applies checked `changes` (the caller holds the writer lock): in place if no message is
    /// being routed against the current table, else to a copy that then replaces it.
    fn commit(&self, changes: Vec<Change>, next_id: &mut u64) -> (Vec<BindingId>, Vec<Binding>) {
        {
            let mut current = self.inner.table.write().unwrap_or_else(|p| p.into_inner());
            if let Some(table) = Arc::get_mut(&mut current) {
                return table.apply(changes, next_id);
            }
        }
        // Messages are being routed against the current table: change a copy, made without
        // holding the lock, so publishers keep going meanwhile.
        let mut table = Table::clone(&self.snapshot());
        let result = table.apply(changes, next_id);
        let old = std::mem::replace(
            &mut *self.inner.table.write().unwrap_or_else(|p| p.into_inner()),
            Arc::new(table),
        );
        // This may be the last reference: free a large table outside the lock.
        drop(old);
        result
    }

    /// The slots of the targets in `table` that match `subject`, ascending, each once: from
    /// the cache if `table`'s generation has them.
    fn matching_slots(&self, table: &Table, subject: &str) -> Arc<[u32]> {
        self.inner
            .cache
            .get_or_insert_with(subject, table.generation, || table.matching_slots(subject))
    }

    /// The targets of the bindings in `table` that match `subject`, each once, ordered by name.
    fn targets(&self, table: &Table, subject: &str) -> Vec<Channel> {
        let mut targets: Vec<Channel> = self
            .matching_slots(table, subject)
            .iter()
            .filter_map(|slot| table.channel(*slot).cloned())
            .collect();
        targets.sort_by(|a, b| a.name().cmp(b.name()));
        targets
    }

    fn unknown(&self, id: BindingId) -> ExchangeError {
        ExchangeError::UnknownBinding {
            exchange: self.inner.name.clone(),
            id,
        }
    }
}

impl std::fmt::Debug for TopicExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = self.snapshot();
        f.debug_struct("TopicExchange")
            .field("name", &self.inner.name)
            .field("bindings", &table.bindings().len())
            .field("alternate", &table.alternate.as_ref().map(Channel::name))
            .finish()
    }
}

/// The subject to route by: none is the empty subject (zero words); a subject header that is
/// not a string, or longer than [`MAX_TOPIC_LEN`] bytes, can not be routed.
fn routable_subject(msg: &Message) -> Option<&str> {
    match msg.subject() {
        Ok(subject) => Some(subject.unwrap_or("")).filter(|s| s.len() <= MAX_TOPIC_LEN),
        Err(_) => None,
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Publishing as a service. Always ready: which targets a message needs is known only once it
/// arrives, so backpressure happens in the future, which waits for each target's room.
impl tower::Service<Message> for TopicExchange {
    type Response = Routed;
    type Error = PublishError;
    type Future = BoxFuture<Result<Routed, PublishError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), PublishError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let exchange = self.clone();
        Box::pin(async move { exchange.publish(msg).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PointToPoint;

    fn target(name: &str) -> Channel {
        PointToPoint::new(name, 10).unwrap().into()
    }

    #[test]
    fn a_change_edits_in_place_when_no_message_is_being_routed() {
        let x = TopicExchange::new("x");
        let before = Arc::as_ptr(&x.snapshot());
        x.bind(Binding::new("a", [target("t")]).unwrap());
        assert_eq!(Arc::as_ptr(&x.snapshot()), before);
    }

    #[test]
    fn a_change_copies_the_bindings_a_message_is_being_routed_against() {
        let x = TopicExchange::new("x");
        let id = x.bind(Binding::new("a", [target("t")]).unwrap());
        let held = x.snapshot();
        x.unbind(id).unwrap();
        x.bind(Binding::new("b", [target("u")]).unwrap());
        assert_eq!(
            held.matching_slots("a").len(),
            1,
            "the held snapshot is unchanged"
        );
        assert!(held.matching_slots("b").is_empty());
        assert!(x.route("a").is_empty());
        assert_eq!(x.route("b").len(), 1);
    }

    #[test]
    fn a_target_slot_is_freed_with_its_last_binding_and_reused() {
        let x = TopicExchange::new("x");
        let a = x.bind(Binding::new("a", [target("t")]).unwrap());
        let b = x.bind(Binding::new("b", [target("t")]).unwrap());
        x.unbind(a).unwrap();
        assert_eq!(x.snapshot().matching_slots("b"), [0]);
        x.unbind(b).unwrap();
        x.bind(Binding::new("c", [target("u")]).unwrap());
        assert_eq!(x.snapshot().matching_slots("c"), [0]);
        assert_eq!(x.route("c")[0].name(), "u");
    }

    #[test]
    fn binding_ids_are_never_reused() {
        let x = TopicExchange::new("x");
        let a = x.bind(Binding::new("a", [target("t")]).unwrap());
        x.unbind(a).unwrap();
        let b = x.bind(Binding::new("a", [target("t")]).unwrap());
        assert_ne!(a, b);
        assert_eq!(b.to_string(), "#1");
    }
}
