//! The resequencer as a `tower::Service`, its layer, its counters and its gap timer.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};

use eip_core::message::{Message, MessageId};
use futures::future::{Either, Ready, ready};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::decision::{Decision, ResequencerConfig, decide};
use super::store::{InMemorySequence, Released, SequenceStore};
use crate::Keeping;

mod release;
use release::{Sent, send, send_unsent, start_timer};

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// The future of a call: ready at once when the message is held or dropped.
pub type ResequenceFuture<E> = Either<
    Ready<Result<Resequenced, ResequenceError<E>>>,
    BoxFuture<Result<Resequenced, ResequenceError<E>>>,
>;

/// What the resequencer did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resequenced {
    /// Held for later (in memory held counts as accepted; a durable store made it lasting
    /// first).
    Held,
    /// It went out, with others after it: the inner service accepted `count` messages, in
    /// order.
    Released {
        /// How many went out.
        count: usize,
    },
    /// A duplicate, dropped.
    Duplicate,
    /// Late after its gap was skipped: sent on at once.
    Late,
    /// The inner service refused a released message (logged); a store that keeps its state
    /// kept it and the ones released after it, to go out when it is read back.
    Kept {
        /// How many went out before.
        sent: usize,
        /// How many the store kept.
        kept: usize,
    },
}

/// A message the resequencer could not take, or messages it could not send on.
#[derive(Debug, thiserror::Error)]
pub enum ResequenceError<E> {
    /// No sequence number could be read: the message is invalid (a permanent error).
    #[error("message {} can not be resequenced: {reason}", message.id())]
    Invalid {
        /// Why.
        reason: String,
        /// The message.
        message: Box<Message>,
    },
    /// The inner service refused a released message; the ones not sent are here, in order.
    #[error("the inner service refused a released message: {error}")]
    Inner {
        /// Its error.
        error: E,
        /// The messages from the refused one on (the refused one is in the error when the
        /// inner service gives it back).
        messages: Vec<Message>,
    },
    /// The inner service failed its readiness check; no message was taken.
    #[error("the inner service is not available: {0}")]
    Unavailable(E),
    /// The store could not make a change lasting (a held message, a released run): the
    /// message is not acknowledged, and comes again.
    #[error("the resequencer's store could not keep its state: {0}")]
    Keep(tower::BoxError),
}

impl<E> ResequenceError<E> {
    /// Whether trying again can not help.
    pub fn is_permanent(&self) -> bool {
        matches!(self, ResequenceError::Invalid { .. })
    }
}

/// A resequencer's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResequencerStats {
    /// Messages held for a while.
    pub held: u64,
    /// Messages sent on in order.
    pub released: u64,
    /// Duplicates dropped.
    pub duplicates: u64,
    /// Messages that arrived after their gap was skipped, sent on out of order.
    pub late: u64,
    /// Gaps given up (by the timeout or the bound).
    pub gaps: u64,
    /// Numbers skipped by those gaps.
    pub missing: u64,
    /// Gaps given up because too many messages were held.
    pub overflows: u64,
    /// Messages without a readable sequence number.
    pub invalid: u64,
    /// Released messages the gap timer could not send (logged).
    pub lost: u64,
}

#[derive(Debug, Default)]
struct Counters {
    held: AtomicU64,
    released: AtomicU64,
    duplicates: AtomicU64,
    late: AtomicU64,
    gaps: AtomicU64,
    missing: AtomicU64,
    overflows: AtomicU64,
    invalid: AtomicU64,
    lost: AtomicU64,
}

fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

impl Counters {
    fn snapshot(&self) -> ResequencerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ResequencerStats {
            held: get(&self.held),
            released: get(&self.released),
            duplicates: get(&self.duplicates),
            late: get(&self.late),
            gaps: get(&self.gaps),
            missing: get(&self.missing),
            overflows: get(&self.overflows),
            invalid: get(&self.invalid),
            lost: get(&self.lost),
        }
    }
}

/// Messages to send in order, after the batch released before them, each with its number.
struct Batch {
    after: Option<oneshot::Receiver<()>>,
    done: oneshot::Sender<()>,
    messages: Vec<(u64, Message)>,
    /// The next number to release once this batch was released.
    next: u64,
}

struct State {
    store: Box<dyn SequenceStore>,
    /// Settles when the last batch released has been sent.
    last: Option<oneshot::Receiver<()>>,
    /// Messages a store read back as released but not sent, to go out first.
    unsent: Option<Batch>,
}

impl State {
    fn batch(&mut self, messages: Vec<(u64, Message)>) -> Batch {
        let (done, next) = oneshot::channel();
        Batch {
            after: self.last.replace(next),
            done,
            messages,
            next: self.store.next(),
        }
    }
}

/// `messages` numbered from `first`.
fn numbered(first: u64, messages: Vec<Message>) -> Vec<(u64, Message)> {
    (first..).zip(messages).collect()
}

struct Shared {
    config: ResequencerConfig,
    state: Mutex<State>,
    /// Whether the store keeps its state on disk ([`SequenceStore::keeps`]).
    keeps: bool,
    counters: Arc<Counters>,
    wake: Arc<Notify>,
    timer: OnceLock<AbortHandle>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(t) = self.timer.get() {
            t.abort();
        }
    }
}

enum Step {
    Ready(Resequenced),
    /// Held; done once the store kept it.
    Kept(Keeping),
    /// A batch to send, once the store kept what was held (an overflow holds its message).
    Send(Batch, Resequenced, Option<Keeping>),
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn step(&self, n: u64, msg: Message) -> Step {
        let now = Instant::now();
        let mut st = self.state();
        let c = &self.counters;
        match decide(&self.config, &*st.store, n) {
            Decision::Releases { .. } => {
                let out = numbered(n, st.store.release(msg, now));
                let count = out.len();
                Step::Send(st.batch(out), Resequenced::Released { count }, None)
            }
            Decision::Held { .. } => {
                st.store.hold(n, msg, now);
                bump(&c.held, 1);
                self.wake.notify_one();
                match st.store.keep_held(n) {
                    Some(keeping) => Step::Kept(keeping),
                    None => Step::Ready(Resequenced::Held),
                }
            }
            Decision::Overflows { .. } => {
                st.store.hold(n, msg, now);
                bump(&c.held, 1);
                bump(&c.overflows, 1);
                let mut out = Vec::new();
                while st.store.held() > self.config.max_held {
                    if !self.skip_one(&mut st, now, &mut out) {
                        break;
                    }
                }
                // Still held (the gaps given up were before others): kept as any held one.
                let kept = st.store.is_held(n).then(|| st.store.keep_held(n)).flatten();
                let count = out.len();
                Step::Send(st.batch(out), Resequenced::Released { count }, kept)
            }
            Decision::Duplicate { .. } => {
                bump(&c.duplicates, 1);
                Step::Ready(Resequenced::Duplicate)
            }
            // `decide` never says Invalid (the number was read); were it to, sending the
            // message on beats losing it.
            Decision::Late { .. } | Decision::Invalid { .. } => {
                bump(&c.late, 1);
                Step::Send(st.batch(vec![(n, msg)]), Resequenced::Late, None)
            }
        }
    }

    /// Gives up one gap, adding the run after it to `out`; false when nothing is held.
    fn skip_one(&self, st: &mut State, now: Instant, out: &mut Vec<(u64, Message)>) -> bool {
        let Some(skipped) = st.store.skip_gap(now) else {
            return false;
        };
        bump(&self.counters.gaps, 1);
        bump(
            &self.counters.missing,
            skipped.to.saturating_sub(skipped.from).saturating_add(1),
        );
        out.extend(numbered(skipped.to.saturating_add(1), skipped.messages));
        true
    }

    /// Has the store keep a released run (under the state's lock, so keeps are in the order
    /// the runs were released and see the state as it is now).
    fn keep_released(
        &self,
        sent: &[(u64, MessageId)],
        unsent: &[(u64, Message)],
        next: u64,
    ) -> Option<Keeping> {
        let released = Released { sent, unsent, next };
        self.state().store.keep_released(&released)
    }

    /// When the gap timeout strikes, if something is held.
    fn gap_deadline(&self) -> Option<Instant> {
        let timeout = self.config.gap_timeout?;
        self.state().store.waiting_since().map(|t| t + timeout)
    }

    /// Gives up every gap if the timeout passed: all that is held goes out in order.
    fn time_out(&self, now: Instant) -> Option<Batch> {
        let deadline = self.gap_deadline()?;
        if deadline > now {
            return None;
        }
        Some(self.give_up_all(now))
    }

    /// Gives up every gap, whatever the timeout: all that is held goes out in order.
    fn give_up_all(&self, now: Instant) -> Batch {
        let mut st = self.state();
        let mut out = Vec::new();
        while self.skip_one(&mut st, now, &mut out) {}
        st.batch(out)
    }
}

/// The Resequencer: sends messages on in the order of their sequence numbers (see the
/// [module](super)).
pub struct Resequencer<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: Clone> Clone for Resequencer<S> {
    fn clone(&self) -> Self {
        Resequencer {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for Resequencer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resequencer")
            .field("inner", &self.inner)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Resequencer<()> {
    /// A layer that puts a resequencer in front of a service.
    pub fn layer(config: ResequencerConfig) -> ResequencerLayer {
        ResequencerLayer::new(config)
    }
}

impl<S> Resequencer<S> {
    /// A resequencer in front of `inner`, its state in memory.
    pub fn new(inner: S, config: ResequencerConfig) -> Self {
        let store = InMemorySequence::starting_at(config.first);
        Resequencer::with_store(inner, config, store)
    }

    /// A resequencer in front of `inner`, its state in `store`.
    pub fn with_store(inner: S, config: ResequencerConfig, store: impl SequenceStore) -> Self {
        Self::build(inner, config, Box::new(store), Arc::default())
    }

    fn build(
        inner: S,
        config: ResequencerConfig,
        store: Box<dyn SequenceStore>,
        counters: Arc<Counters>,
    ) -> Self {
        let keeps = store.keeps();
        let shared = Shared {
            config,
            state: Mutex::new(State {
                store,
                last: None,
                unsent: None,
            }),
            keeps,
            counters,
            wake: Arc::new(Notify::new()),
            timer: OnceLock::new(),
        };
        Resequencer {
            inner,
            shared: Arc::new(shared),
        }
    }

    /// What the resequencer would do with `msg`, changing nothing: the dry run.
    pub fn peek(&self, msg: &Message) -> Decision {
        match self.shared.config.sequence.eval_number(msg) {
            Err(e) => Decision::Invalid {
                reason: format!("sequence number: {e}"),
            },
            Ok(n) => decide(&self.shared.config, &*self.shared.state().store, n),
        }
    }

    /// The counters.
    pub fn stats(&self) -> ResequencerStats {
        self.shared.counters.snapshot()
    }

    /// How many messages are held.
    pub fn held(&self) -> usize {
        self.shared.state().store.held()
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

impl<S> Service<Message> for Resequencer<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    type Response = Resequenced;
    type Error = ResequenceError<S::Error>;
    type Future = ResequenceFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner
            .poll_ready(cx)
            .map_err(ResequenceError::Unavailable)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        start_timer(&self.shared, &self.inner);
        send_unsent(&self.shared, &self.inner);
        let n = match self.shared.config.sequence.eval_number(&msg) {
            Ok(n) => n,
            Err(e) => {
                bump(&self.shared.counters.invalid, 1);
                return Either::Left(ready(Err(ResequenceError::Invalid {
                    reason: format!("sequence number: {e}"),
                    message: Box::new(msg),
                })));
            }
        };
        match self.shared.step(n, msg) {
            Step::Ready(done) => Either::Left(ready(Ok(done))),
            Step::Kept(keeping) => Either::Right(Box::pin(async move {
                keeping.await.map_err(ResequenceError::Keep)?;
                Ok(Resequenced::Held)
            })),
            Step::Send(batch, done, kept) => {
                let sending = send(batch, self.inner.clone(), self.shared.clone());
                Either::Right(Box::pin(async move {
                    // Sent whatever the hold's keep comes to: later batches wait for this one.
                    let sent = sending.await;
                    if let Some(keeping) = kept {
                        keeping.await.map_err(ResequenceError::Keep)?;
                    }
                    match sent.map_err(ResequenceError::Keep)? {
                        Sent::All => Ok(done),
                        Sent::Kept { sent, kept } => Ok(Resequenced::Kept { sent, kept }),
                        Sent::Refused { error, rest } => Err(ResequenceError::Inner {
                            error,
                            messages: rest,
                        }),
                    }
                }))
            }
        }
    }
}

/// Puts a [`Resequencer`] in front of a service; each has its own state, all share the
/// layer's counters.
#[derive(Clone, Debug)]
pub struct ResequencerLayer {
    config: ResequencerConfig,
    counters: Arc<Counters>,
}

impl ResequencerLayer {
    /// A layer of resequencers with this configuration.
    pub fn new(config: ResequencerConfig) -> Self {
        ResequencerLayer {
            config,
            counters: Arc::default(),
        }
    }

    /// The counters of all the resequencers this layer made.
    pub fn stats(&self) -> ResequencerStats {
        self.counters.snapshot()
    }

    /// A resequencer in front of `inner` whose state is in `store` (a durable one, read
    /// back), counted with the others of this layer.
    pub fn layer_with_store<S>(&self, inner: S, store: impl SequenceStore) -> Resequencer<S> {
        Resequencer::build(
            inner,
            self.config.clone(),
            Box::new(store),
            self.counters.clone(),
        )
    }
}

impl<S> Layer<S> for ResequencerLayer {
    type Service = Resequencer<S>;

    fn layer(&self, inner: S) -> Resequencer<S> {
        let store = InMemorySequence::starting_at(self.config.first);
        Resequencer::build(
            inner,
            self.config.clone(),
            Box::new(store),
            self.counters.clone(),
        )
    }
}
