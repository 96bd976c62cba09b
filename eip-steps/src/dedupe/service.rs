//! The idempotent receiver as a `tower::Service`, and its layer.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use eip_core::channel::{Channel, Outcome, SendError};
use eip_core::message::Message;
use tokio::time::Instant;
use tower::{Layer, Service};

use crate::aggregate::Key;

use super::store::{InMemorySeen, Seen, SeenStore};

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// What becomes of a duplicate.
#[derive(Clone, Default)]
pub enum OnDuplicate {
    /// Dropped and counted: a successful outcome, so a consumer acks it.
    #[default]
    Drop,
    /// Sent to this channel (waiting for room).
    Divert(Channel),
    /// Handed to this function.
    Callback(Arc<dyn Fn(Message) + Send + Sync>),
}

impl fmt::Debug for OnDuplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnDuplicate::Drop => f.write_str("Drop"),
            OnDuplicate::Divert(c) => write!(f, "Divert({})", c.name()),
            OnDuplicate::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}

/// An idempotent receiver's configuration.
#[derive(Debug, Clone)]
pub struct DedupeConfig {
    pub(crate) key: Key,
    pub(crate) window: Duration,
    pub(crate) max_keys: usize,
    pub(crate) on_duplicate: OnDuplicate,
}

impl DedupeConfig {
    /// Keys by message id, kept for `window`, at most 100 000 of them, duplicates dropped.
    pub fn new(window: Duration) -> Self {
        DedupeConfig {
            key: Key::message_id(),
            window,
            max_keys: 100_000,
            on_duplicate: OnDuplicate::Drop,
        }
    }

    /// Keys messages by `key` instead of their id.
    #[must_use]
    pub fn key(mut self, key: Key) -> Self {
        self.key = key;
        self
    }

    /// Keeps at most `max` keys (at least 1); past that the oldest expire first.
    #[must_use]
    pub fn max_keys(mut self, max: usize) -> Self {
        self.max_keys = max.max(1);
        self
    }

    /// What becomes of duplicates.
    #[must_use]
    pub fn on_duplicate(mut self, on_duplicate: OnDuplicate) -> Self {
        self.on_duplicate = on_duplicate;
        self
    }
}

/// What an idempotent receiver does, or would do, with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not seen within the window: passed on.
    Passes {
        /// Its key.
        key: String,
    },
    /// Seen `age` ago, within the window: a duplicate.
    Duplicate {
        /// Its key.
        key: String,
        /// How long ago it was seen.
        age: Duration,
    },
    /// Its key could not be computed.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// What the idempotent receiver did with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deduped<R> {
    /// An original: the inner service's response.
    Passed(R),
    /// A duplicate, dropped (counted).
    Dropped,
    /// A duplicate, sent to the divert channel.
    Diverted(Outcome),
    /// A duplicate, handed to the callback.
    HandedOver,
}

/// A message an idempotent receiver could not take or pass on.
#[derive(Debug, thiserror::Error)]
pub enum DedupeError<E> {
    /// Its key could not be computed: invalid (a permanent error).
    #[error("message {} has no dedupe key: {reason}", message.id())]
    Invalid {
        /// Why.
        reason: String,
        /// The message.
        message: Box<Message>,
    },
    /// The inner service refused the original (its key was forgotten again, so a redelivery
    /// is not taken for a duplicate).
    #[error(transparent)]
    Inner(E),
    /// The inner service took the original, but its key could not be kept (a durable store
    /// could not write it): the message is redelivered, and caught as a duplicate while this
    /// process runs.
    #[error("the dedupe key could not be kept: {0}")]
    Keep(#[source] tower::BoxError),
    /// The divert channel is closed; the duplicate is in the error.
    #[error("divert channel: {0}")]
    Divert(#[source] SendError),
}

impl<E> DedupeError<E> {
    /// Whether trying again can not help.
    pub fn is_permanent(&self) -> bool {
        matches!(self, DedupeError::Invalid { .. })
    }
}

/// An idempotent receiver's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DedupeStats {
    /// Originals passed on.
    pub passed: u64,
    /// Duplicates (dropped, diverted or handed over).
    pub duplicates: u64,
    /// Messages without a computable key.
    pub invalid: u64,
}

#[derive(Debug, Default)]
struct Counters {
    passed: AtomicU64,
    duplicates: AtomicU64,
    invalid: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> DedupeStats {
        DedupeStats {
            passed: self.passed.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            invalid: self.invalid.load(Ordering::Relaxed),
        }
    }
}

struct Shared {
    config: DedupeConfig,
    store: Mutex<Box<dyn SeenStore>>,
    counters: Arc<Counters>,
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Box<dyn SeenStore>> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a receiver would do with `msg` now, changing nothing.
    fn peek(&self, msg: &Message) -> Decision {
        let config = &self.config;
        let key = match config.key.eval(msg) {
            Ok(k) => k,
            Err(e) => {
                return Decision::Invalid {
                    reason: format!("dedupe key: {e}"),
                };
            }
        };
        let seen = self.store().seen(&key, Instant::now(), config.window);
        decision(key.into_owned(), seen)
    }
}

/// The Idempotent Receiver: passes a message on unless its key was seen within the window
/// (see the [module](super)).
pub struct IdempotentReceiver<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: Clone> Clone for IdempotentReceiver<S> {
    fn clone(&self) -> Self {
        IdempotentReceiver {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for IdempotentReceiver<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotentReceiver")
            .field("inner", &self.inner)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl IdempotentReceiver<()> {
    /// A layer that puts an idempotent receiver in front of a service.
    pub fn layer(config: DedupeConfig) -> IdempotentReceiverLayer {
        IdempotentReceiverLayer::new(config)
    }
}

impl<S> IdempotentReceiver<S> {
    /// An idempotent receiver in front of `inner`, its keys in memory.
    pub fn new(inner: S, config: DedupeConfig) -> Self {
        let store = InMemorySeen::with_capacity(config.max_keys);
        IdempotentReceiver::with_store(inner, config, store)
    }

    /// An idempotent receiver in front of `inner`, its keys in `store`.
    pub fn with_store(inner: S, config: DedupeConfig, store: impl SeenStore) -> Self {
        Self::build(inner, config, Box::new(store), Arc::default())
    }

    fn build(
        inner: S,
        config: DedupeConfig,
        store: Box<dyn SeenStore>,
        counters: Arc<Counters>,
    ) -> Self {
        let shared = Shared {
            config,
            store: Mutex::new(store),
            counters,
        };
        IdempotentReceiver {
            inner,
            shared: Arc::new(shared),
        }
    }

    /// What the receiver would do with `msg` now, changing nothing: the dry run.
    pub fn peek(&self, msg: &Message) -> Decision {
        self.shared.peek(msg)
    }

    /// The counters.
    pub fn stats(&self) -> DedupeStats {
        self.shared.counters.snapshot()
    }

    /// How many keys are kept.
    pub fn keys(&self) -> usize {
        self.shared.store().len()
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, for change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

fn decision(key: String, seen: Seen) -> Decision {
    match seen {
        Seen::New => Decision::Passes { key },
        Seen::Duplicate { age } => Decision::Duplicate { key, age },
    }
}

impl<S> Service<Message> for IdempotentReceiver<S>
where
    S: Service<Message>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Deduped<S::Response>;
    type Error = DedupeError<S::Error>;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(DedupeError::Inner)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let shared = &self.shared;
        let key = match shared.config.key.eval_detached(&msg) {
            Ok(k) => k,
            Err(e) => {
                shared.counters.invalid.fetch_add(1, Ordering::Relaxed);
                let reason = format!("dedupe key: {e}");
                let message = Box::new(msg);
                return Box::pin(std::future::ready(Err(DedupeError::Invalid {
                    reason,
                    message,
                })));
            }
        };
        let seen = shared
            .store()
            .record(key.as_str(), Instant::now(), shared.config.window);
        if let Seen::Duplicate { .. } = seen {
            shared.counters.duplicates.fetch_add(1, Ordering::Relaxed);
            return duplicate(&shared.config.on_duplicate, msg);
        }
        shared.counters.passed.fetch_add(1, Ordering::Relaxed);
        let id = msg.id();
        let future = self.inner.call(msg);
        let shared = shared.clone();
        Box::pin(async move {
            match future.await {
                Ok(r) => {
                    let keeping = shared.store().keep(key.as_str(), shared.config.window, id);
                    keeping.await.map_err(DedupeError::Keep)?;
                    Ok(Deduped::Passed(r))
                }
                Err(e) => {
                    shared.store().forget(key.as_str());
                    Err(DedupeError::Inner(e))
                }
            }
        })
    }
}

fn duplicate<R, E>(on: &OnDuplicate, msg: Message) -> BoxFuture<Result<Deduped<R>, DedupeError<E>>>
where
    R: Send + 'static,
    E: Send + 'static,
{
    match on {
        OnDuplicate::Drop => Box::pin(std::future::ready(Ok(Deduped::Dropped))),
        OnDuplicate::Callback(f) => {
            f(msg);
            Box::pin(std::future::ready(Ok(Deduped::HandedOver)))
        }
        OnDuplicate::Divert(channel) => {
            let channel = channel.clone();
            Box::pin(async move {
                let outcome = channel.send(msg).await.map_err(DedupeError::Divert)?;
                Ok(Deduped::Diverted(outcome))
            })
        }
    }
}

/// Puts an [`IdempotentReceiver`] in front of a service. Every receiver it makes shares the
/// layer's seen keys and counters: a duplicate is one whichever of them saw the original.
#[derive(Clone)]
pub struct IdempotentReceiverLayer {
    shared: Arc<Shared>,
}

impl fmt::Debug for IdempotentReceiverLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotentReceiverLayer")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl IdempotentReceiverLayer {
    /// A layer of idempotent receivers with this configuration, sharing one in-memory store.
    pub fn new(config: DedupeConfig) -> Self {
        let store = InMemorySeen::with_capacity(config.max_keys);
        IdempotentReceiverLayer::with_store(config, store)
    }

    /// A layer of idempotent receivers with this configuration, sharing `store`.
    pub fn with_store(config: DedupeConfig, store: impl SeenStore) -> Self {
        let store: Box<dyn SeenStore> = Box::new(store);
        let shared = Shared {
            config,
            store: Mutex::new(store),
            counters: Arc::default(),
        };
        IdempotentReceiverLayer {
            shared: Arc::new(shared),
        }
    }

    /// The counters of all the receivers this layer made.
    pub fn stats(&self) -> DedupeStats {
        self.shared.counters.snapshot()
    }

    /// What its receivers would do with `msg` now, changing nothing: the dry run.
    pub fn peek(&self, msg: &Message) -> Decision {
        self.shared.peek(msg)
    }
}

impl<S> Layer<S> for IdempotentReceiverLayer {
    type Service = IdempotentReceiver<S>;

    fn layer(&self, inner: S) -> IdempotentReceiver<S> {
        IdempotentReceiver {
            inner,
            shared: self.shared.clone(),
        }
    }
}
