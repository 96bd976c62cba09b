use std::fmt::Display;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;
use tower::{Service, ServiceExt};

use super::pause::PauseGate;
use super::stop::{self, Phase, Stopped};
use crate::channel::{Delivery, Receiver, RedeliveryPolicy, Subscriber};
use crate::log::Escaped;
use crate::message::{DeathReason, Message};

/// Where a consumer takes deliveries from: a channel's [`Receiver`] or a [`Subscriber`].
pub trait Inbox: Send + 'static {
    /// The next delivery; `None` once the source is closed.
    fn next_delivery(&mut self) -> impl Future<Output = Option<Delivery>> + Send;
}

impl Inbox for Receiver {
    fn next_delivery(&mut self) -> impl Future<Output = Option<Delivery>> + Send {
        self.recv()
    }
}

impl Inbox for Subscriber {
    fn next_delivery(&mut self) -> impl Future<Output = Option<Delivery>> + Send {
        self.recv()
    }
}

/// Tells a permanent error (retrying would fail the same way) from a transient one.
type Permanence<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;

/// Drives a service with the messages of a channel, acking, retrying and dead-lettering.
pub struct Consumer<I, S: Service<Message>> {
    inbox: I,
    service: S,
    concurrency: usize,
    redelivery: Option<RedeliveryPolicy>,
    permanent: Option<Permanence<S::Error>>,
    gate: Option<PauseGate>,
}

impl<I, S> Consumer<I, S>
where
    I: Inbox,
    S: Service<Message> + Send + 'static,
    S::Future: Send,
    S::Error: Display + Send,
{
    /// A consumer of `inbox` calling `service`, one message at a time.
    pub fn new(inbox: I, service: S) -> Self {
        Consumer {
            inbox,
            service,
            concurrency: 1,
            redelivery: None,
            permanent: None,
            gate: None,
        }
    }

    /// Takes no new delivery while `gate`'s [`PauseSwitch`](super::PauseSwitch) is paused.
    pub fn pause_gate(mut self, gate: PauseGate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// How many messages may be in processing at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// A redelivery policy for this consumer, instead of the channel's.
    pub fn redelivery(mut self, policy: RedeliveryPolicy) -> Self {
        self.redelivery = Some(policy);
        self
    }

    /// Which errors are permanent: for those `is_permanent` says yes to, the message is not
    /// redelivered but goes to the dead letter channel at once, with reason `rejected` and the
    /// error's text (an HTTP 4xx answer, a constraint violation: trying again would fail the
    /// same way). Other errors follow the redelivery policy.
    pub fn permanent_errors(
        mut self,
        is_permanent: impl Fn(&S::Error) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.permanent = Some(Arc::new(is_permanent));
        self
    }

    /// Runs until the channel closes or `shutdown` completes, then stops: takes no new
    /// deliveries, gives back at once those waiting out a redelivery backoff, and waits until
    /// every call in progress is settled. Says what it gave back.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Stopped {
        self.run(shutdown, std::future::pending()).await
    }

    /// [`run_until`](Self::run_until), and once `abandon` completes, drops the calls still in
    /// progress (their deliveries go back to their channel, unacknowledged).
    async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
        abandon: impl Future<Output = ()>,
    ) -> Stopped {
        let mut shutdown = pin!(shutdown);
        let mut abandon = pin!(abandon);
        // Tells the deliveries waiting out a backoff that the consumer is stopping.
        let (stopping, _) = watch::channel(false);
        let stopping = &stopping;
        let mut in_flight = FuturesUnordered::new();
        let mut taking = true;
        let mut stopped = Stopped::default();
        let mut gate = self.gate.take().map(|g| g.0);
        loop {
            if !taking && in_flight.is_empty() {
                return stopped;
            }
            let paused = gate.as_mut().is_some_and(|g| *g.borrow_and_update());
            let room = taking && !paused && in_flight.len() < self.concurrency;
            let gate_moved = async {
                match gate.as_mut() {
                    Some(g) => {
                        if g.changed().await.is_err() {
                            // The switch is gone: nobody can pause it any more.
                            std::future::pending::<()>().await;
                        }
                    }
                    None => std::future::pending().await,
                }
            };
            let next = async {
                if self.service.ready().await.is_err() {
                    return Err(());
                }
                Ok(self.inbox.next_delivery().await)
            };
            tokio::select! {
                biased;
                () = &mut shutdown, if taking => {
                    taking = false;
                    stopping.send_replace(true);
                }
                Some(settled) = in_flight.next(), if !in_flight.is_empty() => {
                    if settled == Settled::GivenBack {
                        stopped.given_back += 1;
                    }
                }
                () = gate_moved => {}
                () = &mut abandon => {
                    stopped.abandoned = in_flight.len();
                    if stopped.abandoned > 0 {
                        tracing::warn!(calls = stopped.abandoned, "consumer stopped with calls in progress: abandoned, their messages given back");
                    }
                    return stopped;
                }
                next = next, if room => match next {
                    Ok(Some(delivery)) => {
                        let call = self.service.call(delivery.message().clone());
                        let policy = self
                            .redelivery
                            .clone()
                            .unwrap_or_else(|| delivery.redelivery_policy().clone());
                        let permanent = self.permanent.clone();
                        in_flight.push(async move {
                            let result = call.await.map(drop).map_err(|error| {
                                let permanent = permanent.as_ref().is_some_and(|p| p(&error));
                                (error, permanent)
                            });
                            settle(delivery, result, &policy, stopping).await
                        });
                    }
                    Ok(None) => taking = false,
                    Err(()) => {
                        tracing::error!("consumer service failed while getting ready: stopping");
                        taking = false;
                    }
                },
            }
        }
    }

    /// Runs on the current tokio runtime; the handle stops it.
    pub fn spawn(self) -> ConsumerHandle
    where
        I: Send,
        S: Send,
    {
        let (phase, watching) = watch::channel(Phase::Running);
        let shutdown = stop::reached(watching.clone(), Phase::Stopping);
        let abandon = stop::reached(watching, Phase::Abandoning);
        let task = tokio::spawn(self.run(shutdown, abandon));
        ConsumerHandle { phase, task }
    }
}

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Acked, dead-lettered, or nacked after its backoff.
    Done,
    /// Given back without waiting out its backoff: the consumer is stopping.
    GivenBack,
}

async fn settle<R, E: Display>(
    delivery: Delivery,
    result: Result<R, (E, bool)>,
    policy: &RedeliveryPolicy,
    stopping: &watch::Sender<bool>,
) -> Settled {
    match result {
        Ok(_) => delivery.ack(),
        Err((error, true)) => {
            tracing::warn!(channel = delivery.channel(), message = %delivery.message().id(), error = %Escaped(&error), "processing failed permanently: rejected");
            delivery.reject(error.to_string()).await;
        }
        Err((error, false)) => {
            let attempts = delivery
                .message()
                .redelivery_count()
                .unwrap_or(0)
                .saturating_add(1);
            if policy.allows_another(attempts) {
                tracing::debug!(channel = delivery.channel(), message = %delivery.message().id(), attempts, error = %Escaped(&error), "processing failed: will redeliver");
                return back_off(delivery, policy.next_backoff(attempts), stopping).await;
            }
            tracing::warn!(channel = delivery.channel(), message = %delivery.message().id(), attempts, error = %Escaped(&error), "processing failed: redeliveries exhausted");
            delivery
                .dead_letter(DeathReason::MaxRedeliveries, Some(error.to_string()))
                .await;
        }
    }
    Settled::Done
}

/// Waits `backoff`, then nacks `delivery`; if the consumer is told to stop first (or already
/// was), nacks it at once: the message waits in its channel, not in a stopping consumer.
async fn back_off(
    delivery: Delivery,
    backoff: Duration,
    stopping: &watch::Sender<bool>,
) -> Settled {
    let mut told = stopping.subscribe();
    let settled = tokio::select! {
        biased;
        () = async { let _ = told.wait_for(|stop| *stop).await; } => {
            tracing::debug!(channel = delivery.channel(), message = %delivery.message().id(), "consumer stopping: given back during its redelivery backoff");
            Settled::GivenBack
        }
        () = tokio::time::sleep(backoff) => Settled::Done,
    };
    delivery.nack();
    settled
}

/// A running consumer.
pub struct ConsumerHandle {
    phase: watch::Sender<Phase>,
    task: tokio::task::JoinHandle<Stopped>,
}

impl ConsumerHandle {
    /// Stops: takes no new deliveries, gives back at once those waiting out a redelivery
    /// backoff, and waits until every call in progress is settled, however long that takes
    /// ([`shutdown_within`](Self::shutdown_within) bounds it).
    pub async fn shutdown(self) -> Stopped {
        self.phase.send_replace(Phase::Stopping);
        joined(self.task.await)
    }

    /// Stops like [`shutdown`](Self::shutdown), waiting up to `limit` for the calls in
    /// progress; those still running then are abandoned (dropped), their deliveries given back
    /// to their channel unacknowledged. Returns soon after `limit` whatever the calls wait for.
    pub async fn shutdown_within(mut self, limit: Duration) -> Stopped {
        self.phase.send_replace(Phase::Stopping);
        let result = match tokio::time::timeout(limit, &mut self.task).await {
            Ok(result) => result,
            Err(_) => {
                self.phase.send_replace(Phase::Abandoning);
                (&mut self.task).await
            }
        };
        joined(result)
    }

    /// Whether the consumer has stopped (its channel closed, or it was shut down).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// What the consumer's task reported; nothing when it panicked (its deliveries were dropped,
/// and so given back, as it unwound).
fn joined(result: Result<Stopped, tokio::task::JoinError>) -> Stopped {
    result.unwrap_or_else(|e| {
        tracing::error!(error = %Escaped(&e), "consumer task failed");
        Stopped::default()
    })
}
