//! The resequencer as a `tower::Service`, its layer, its counters and its gap timer.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Poll};

use eip_core::message::{Message, MessageId};
use futures::future::{Either, Ready, ready};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;
use tokio::time::{Instant, sleep_until};
use tower::{Layer, Service, ServiceExt};

use super::decision::{Decision, ResequencerConfig, decide};
use super::store::{InMemorySequence, Released, SequenceStore};
use crate::Keeping;

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

/// What sending a batch came to.
enum Sent<E> {
    /// The inner service took them all.
    All,
    /// It refused one; the store kept it and the rest.
    Kept { sent: usize, kept: usize },
    /// It refused one; the rest after it, unsent (a store that does not keep its state).
    Refused { error: E, rest: Vec<Message> },
}

/// A message the inner service refused, and the ones after it.
struct Refusal<E> {
    error: E,
    /// A copy of the refused one, when the store keeps its state.
    refused: Option<(u64, Message)>,
    rest: Vec<(u64, Message)>,
}

/// Sends a batch after the one before it, then has the store keep what went out (and what
/// did not, if it keeps its state).
async fn send<S>(
    batch: Batch,
    inner: S,
    shared: Arc<Shared>,
) -> Result<Sent<S::Error>, tower::BoxError>
where
    S: Service<Message>,
    S::Error: fmt::Display,
{
    let Batch {
        after,
        done,
        messages,
        next,
    } = batch;
    if let Some(before) = after {
        // An error only means the batch before was dropped unsent: nothing to wait for.
        let _ = before.await;
    }
    let (sent, refusal) = send_in_order(messages, inner, &shared).await;
    let refusal = refusal.map(|r| {
        let unsent: Vec<(u64, Message)> = r.refused.into_iter().chain(r.rest).collect();
        (r.error, unsent)
    });
    let kept = match &refusal {
        _ if !shared.keeps => None,
        Some((_, unsent)) => shared.keep_released(&sent, unsent, next),
        None => shared.keep_released(&sent, &[], next),
    };
    // The next batch may go: its keep comes after this one's, which is on its way.
    drop(done);
    if let Some(keeping) = kept {
        keeping.await?;
    }
    Ok(match refusal {
        None => Sent::All,
        Some((error, unsent)) if shared.keeps => {
            tracing::error!(
                %error,
                kept = unsent.len(),
                "resequencer: the inner service refused a released message; it and the ones \
                 released after it stay in the store, and go out when it is read back"
            );
            Sent::Kept {
                sent: sent.len(),
                kept: unsent.len(),
            }
        }
        Some((error, unsent)) => Sent::Refused {
            error,
            rest: unsent.into_iter().map(|(_, m)| m).collect(),
        },
    })
}

/// Sends `messages` in order until the inner service refuses one: the numbers and ids of
/// those it took, and the refusal.
async fn send_in_order<S>(
    messages: Vec<(u64, Message)>,
    mut inner: S,
    shared: &Shared,
) -> (Vec<(u64, MessageId)>, Option<Refusal<S::Error>>)
where
    S: Service<Message>,
{
    let mut sent = Vec::with_capacity(messages.len());
    let mut rest = messages.into_iter();
    while let Some((n, msg)) = rest.next() {
        let id = msg.id();
        let copy = shared.keeps.then(|| (n, msg.clone()));
        let outcome = match inner.ready().await {
            Ok(svc) => svc.call(msg).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(error) = outcome {
            let refusal = Refusal {
                error,
                refused: copy,
                rest: rest.collect(),
            };
            return (sent, Some(refusal));
        }
        bump(&shared.counters.released, 1);
        sent.push((n, id));
    }
    (sent, None)
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

impl<S> Resequencer<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    /// Releases everything held, in order, now: every gap is given up and counted as the gap
    /// timeout counts it. For a flow that stops and would otherwise lose what a resequencer in
    /// memory holds. Completes once the inner service took the messages (or refused one: that
    /// one and the ones after it are counted lost and logged), and says how many went out.
    pub async fn release_held(&self) -> Result<usize, tower::BoxError> {
        let batch = self.shared.give_up_all(Instant::now());
        let count = batch.messages.len();
        if count == 0 {
            return Ok(0);
        }
        let counters = self.shared.counters.clone();
        match send(batch, self.inner.clone(), self.shared.clone()).await? {
            Sent::All => Ok(count),
            Sent::Kept { sent, .. } => Ok(sent),
            Sent::Refused { error, rest } => {
                let lost = 1 + rest.len();
                bump(&counters.lost, lost as u64);
                tracing::error!("resequencer: a message released at stop was refused: {error}");
                Ok(count - lost)
            }
        }
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

impl<S> Resequencer<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    /// Carries on from the state a durable store read back: sends `unsent` (messages the
    /// store had as released but not sent, in order) before anything released from now on,
    /// and starts the gap timer for what is held. Both need a tokio runtime; without one
    /// they start with the first call.
    pub fn resume(&self, unsent: Vec<(u64, Message)>) {
        if !unsent.is_empty() {
            let mut st = self.shared.state();
            let batch = st.batch(unsent);
            st.unsent = Some(batch);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        send_unsent(&self.shared, &self.inner);
        start_timer(&self.shared, &self.inner);
        self.shared.wake.notify_one();
    }
}

/// Sends what a store read back as released but not sent, once, on a task of its own.
fn send_unsent<S>(shared: &Arc<Shared>, inner: &S)
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let Some(batch) = shared.state().unsent.take() else {
        return;
    };
    let count = batch.messages.len();
    let sending = send(batch, inner.clone(), shared.clone());
    runtime.spawn(async move {
        match sending.await {
            Ok(Sent::All | Sent::Kept { .. }) => {
                tracing::info!(count, "resequencer: released messages read back were sent");
            }
            Ok(Sent::Refused { error, .. }) => {
                tracing::error!(%error, "resequencer: a released message read back was refused");
            }
            Err(error) => {
                tracing::error!(%error, "resequencer: the store could not keep what was sent");
            }
        }
    });
}

fn start_timer<S>(shared: &Arc<Shared>, inner: &S)
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    if shared.config.gap_timeout.is_none() || shared.timer.get().is_some() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let task = runtime.spawn(run_timer(
        Arc::downgrade(shared),
        shared.wake.clone(),
        inner.clone(),
    ));
    if shared.timer.set(task.abort_handle()).is_err() {
        task.abort();
    }
}

/// Sleeps until the gap deadline (or until something is held), then gives the gaps up. Holds
/// the state weakly; aborted when the last clone of the resequencer is dropped.
async fn run_timer<S>(shared: Weak<Shared>, wake: Arc<Notify>, inner: S)
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    loop {
        let deadline = match shared.upgrade() {
            None => return,
            Some(s) => s.gap_deadline(),
        };
        match deadline {
            None => wake.notified().await,
            Some(at) => sleep_until(at).await,
        }
        let Some(s) = shared.upgrade() else { return };
        let Some(batch) = s.time_out(Instant::now()) else {
            continue;
        };
        let counters = s.counters.clone();
        match send(batch, inner.clone(), s).await {
            Ok(Sent::All | Sent::Kept { .. }) => {}
            Ok(Sent::Refused { error, rest }) => {
                bump(&counters.lost, 1 + rest.len() as u64);
                tracing::error!(
                    "resequencer: a message released at the gap timeout was refused: {error}"
                );
            }
            Err(error) => tracing::error!(
                %error,
                "resequencer: the store could not keep a run released at the gap timeout"
            ),
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
