use std::fmt::Display;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Notify;
use tower::{Service, ServiceExt};

use crate::channel::{Delivery, Receiver, RedeliveryPolicy, Subscriber};
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
        }
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

    /// Runs until the channel closes or `shutdown` completes, then drains: waits for every
    /// message in processing to be settled.
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        let mut in_flight = FuturesUnordered::new();
        let mut taking = true;
        loop {
            if !taking && in_flight.is_empty() {
                return;
            }
            let room = taking && in_flight.len() < self.concurrency;
            let next = async {
                if self.service.ready().await.is_err() {
                    return Err(());
                }
                Ok(self.inbox.next_delivery().await)
            };
            tokio::select! {
                biased;
                () = &mut shutdown, if taking => taking = false,
                Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
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
                            settle(delivery, result, &policy).await;
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

    /// Runs on the current tokio runtime; the handle shuts it down.
    pub fn spawn(self) -> ConsumerHandle
    where
        I: Send,
        S: Send,
    {
        let stop = Arc::new(Notify::new());
        let signal = stop.clone();
        let task = tokio::spawn(self.run_until(async move { signal.notified().await }));
        ConsumerHandle { stop, task }
    }
}

async fn settle<R, E: Display>(
    delivery: Delivery,
    result: Result<R, (E, bool)>,
    policy: &RedeliveryPolicy,
) {
    match result {
        Ok(_) => delivery.ack(),
        Err((error, true)) => {
            tracing::warn!(channel = delivery.channel(), message = %delivery.message().id(), %error, "processing failed permanently: rejected");
            delivery.reject(error.to_string()).await;
        }
        Err((error, false)) => {
            let attempts = delivery
                .message()
                .redelivery_count()
                .unwrap_or(0)
                .saturating_add(1);
            if policy.allows_another(attempts) {
                tracing::debug!(channel = delivery.channel(), message = %delivery.message().id(), attempts, %error, "processing failed: will redeliver");
                tokio::time::sleep(policy.next_backoff(attempts)).await;
                delivery.nack();
            } else {
                tracing::warn!(channel = delivery.channel(), message = %delivery.message().id(), attempts, %error, "processing failed: redeliveries exhausted");
                delivery
                    .dead_letter(DeathReason::MaxRedeliveries, Some(error.to_string()))
                    .await;
            }
        }
    }
}

/// A running consumer.
pub struct ConsumerHandle {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl ConsumerHandle {
    /// Stops taking deliveries and waits until those in processing are settled.
    pub async fn shutdown(self) {
        self.stop.notify_one();
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "consumer task failed");
        }
    }

    /// Whether the consumer has stopped (its channel closed, or it was shut down).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}
