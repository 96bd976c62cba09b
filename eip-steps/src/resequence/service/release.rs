//! Sending released runs on: each after the one released before it, and the releases no
//! caller waits for (at the gap timeout, at stop, and what a restart found released but not
//! sent).

use std::fmt;
use std::sync::{Arc, Weak};

use eip_core::message::{Message, MessageId};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};
use tower::{Service, ServiceExt};

use super::{Batch, Resequencer, Shared, bump};

/// What sending a batch came to.
pub(super) enum Sent<E> {
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
pub(super) async fn send<S>(
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
pub(super) fn send_unsent<S>(shared: &Arc<Shared>, inner: &S)
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

pub(super) fn start_timer<S>(shared: &Arc<Shared>, inner: &S)
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
