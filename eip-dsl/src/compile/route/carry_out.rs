//! A compiled route at work: [`Route::handle`] takes one message from the route's channel and
//! carries out what [`Route::decide`] makes of it, step by step, calling out where a step
//! does (a program's service) and handing a message on to a step that wraps the rest of the
//! route. A failure hands the message back to the consumer's redelivery policy, or sends it to
//! an `on-error` channel.
//!
//! Each call stands alone: a route with `concurrency:` above 1 has several in progress at once,
//! sharing only what its steps share (a dedupe's keys, a throttle's bucket, the counters).

use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use eip_core::channel::{Channel, marked_dead};
use eip_core::message::{DeathReason, Message};
use eip_core::router::RouteError;
use futures::future::BoxFuture;
use tower::BoxError;
use tracing::Instrument;

use super::{IfClosed, Route, Step};
use crate::compile::rest::Rest;
use crate::step::Side;

impl Route {
    /// Processes one message taken from the route's channel: works out, without sending
    /// anything, what each step makes of it and what the action sends, then carries that out in
    /// order. Completes when every channel has accepted what it was sent (taps that wait and
    /// discards included); an error hands the message back for the consumer's redelivery
    /// policy.
    ///
    /// With `on-error`, a step's failure on the message's last delivery the policy allows
    /// sends the message, as it was taken, to the `on-error` channel with a death record
    /// (reason `max-redeliveries`, the step's place and error), and the message counts as
    /// handled; other failures (a send, the flow stopping) are handed back as without it.
    pub async fn handle(&self, msg: Message) -> Result<(), RouteFailure> {
        let span = tracing::debug_span!("route", route = %self.inner.name, id = %msg.id());
        let done = self.handle_once(msg).instrument(span).await;
        self.inner.outcomes.record(&done);
        done
    }

    async fn handle_once(&self, msg: Message) -> Result<(), RouteFailure> {
        self.inner.counters.taken.fetch_add(1, Ordering::Relaxed);
        if !self.inner.calls_out {
            // Every step decides alone: no step can fail.
            return Ok(self.carry_out(self.decide(msg, false)).await?);
        }
        let Some(on_error) = &self.inner.on_error else {
            return self.run_from(0, msg).await;
        };
        let taken = msg.clone();
        match self.run_from(0, msg).await {
            Err(failure @ RouteFailure::Step { .. }) if self.last_delivery(&taken) => {
                self.divert(on_error, taken, failure, DeathReason::MaxRedeliveries)
                    .await
            }
            done => done,
        }
    }

    /// Whether `msg` is on the last delivery its channel's redelivery policy allows, counted
    /// as the consumer counts.
    fn last_delivery(&self, msg: &Message) -> bool {
        let attempts = msg.redelivery_count().unwrap_or(0).saturating_add(1);
        !self.inner.redelivery.allows_another(attempts)
    }

    /// Sends `msg`, whose step failed with `failure`, to an `on-error` channel with its death
    /// record (`reason`, the route's channel, the failure). A channel that does not take it
    /// (closed, or refusing it) hands the failure back: the message is then redelivered or
    /// dead-lettered as without `on-error`, so it is not lost.
    async fn divert(
        &self,
        channel: &Channel,
        msg: Message,
        failure: RouteFailure,
        reason: DeathReason,
    ) -> Result<(), RouteFailure> {
        let error = failure.to_string();
        let msg = marked_dead(msg, self.from().name(), reason, Some(error));
        match channel.send(msg).await {
            Ok(_) => {
                self.inner.counters.diverted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(refused) => {
                tracing::warn!(route = self.name(), channel = channel.name(), error = %refused, "the on-error channel did not take a failed message: handed back as a failure");
                Err(failure)
            }
        }
    }

    /// [`decide`](Self::decide) and [`carry_out`](Self::carry_out) in a running flow from step
    /// `first` on: a step that calls out does so, and one that [wraps](RouteStep::wraps) the
    /// rest is handed it, once what the steps before it did was carried out.
    pub(in crate::compile) fn run_from(
        &self,
        first: usize,
        msg: Message,
    ) -> BoxFuture<'_, Result<(), RouteFailure>> {
        Box::pin(async move {
            let mut steps = Vec::with_capacity(2);
            let counts = &self.inner.step_counts;
            if let Some(wrapping) = first.checked_sub(1).and_then(|i| counts.get(i)) {
                // The step before wraps the rest and hands this message on now.
                wrapping.sent(1);
            }
            let mut current = vec![self.entered(first, msg)];
            for (index, step) in self.inner.steps.iter().enumerate().skip(first) {
                let count = &counts[index];
                if step.wraps() {
                    self.carry_out(steps).await?;
                    for msg in current {
                        count.received();
                        let rest = Rest {
                            route: self.clone(),
                            first: index + 1,
                        };
                        step.around(msg, rest)
                            .instrument(self.step_span(index))
                            .await?;
                    }
                    return Ok(());
                }
                let mut next = Vec::with_capacity(current.len());
                let on_error = self.inner.step_errors.get(index).and_then(Option::as_ref);
                for msg in current {
                    count.received();
                    if !step.calls_out() {
                        let made = self.step_span(index).in_scope(|| step.decide(msg));
                        count.sent(made.next.len());
                        self.take(index, made, &mut steps, &mut next);
                        continue;
                    }
                    // Kept only where the step's own `on-error` may need it.
                    let received = on_error.map(|_| msg.clone());
                    match step.call(msg).instrument(self.step_span(index)).await {
                        Ok(made) => {
                            count.sent(made.next.len());
                            self.take(index, made, &mut steps, &mut next);
                        }
                        Err(error) => {
                            count.failed();
                            let failure = self.step_failed(index, error);
                            let (Some(channel), Some(received)) = (on_error, received) else {
                                return Err(failure);
                            };
                            // What the steps before decided happens first, in order.
                            self.carry_out(std::mem::take(&mut steps)).await?;
                            self.divert(channel, received, failure, DeathReason::Rejected)
                                .await?;
                        }
                    }
                }
                current = next;
            }
            for msg in current {
                self.act(msg, &mut steps);
            }
            Ok(self.carry_out(steps).await?)
        })
    }

    /// Step `index` failed with `error`.
    pub(crate) fn step_failed(&self, index: usize, error: BoxError) -> RouteFailure {
        RouteFailure::Step {
            route: self.name().to_owned(),
            step: index + 1,
            does: self.step_described(index).to_owned(),
            error,
        }
    }

    /// Carries out what was decided, in order.
    pub(in crate::compile) async fn carry_out(
        &self,
        steps: Vec<Step<'_>>,
    ) -> Result<(), RouteError> {
        let c = &self.inner.counters;
        let mut dead_lettered = 0u64;
        let mut sent = false;
        for step in steps {
            match step {
                Step::Made { .. } => {}
                Step::Side(Side::Tap {
                    channel,
                    copy,
                    wait,
                }) => {
                    let taken = match wait {
                        true => channel.send(copy).await.is_ok(),
                        false => channel.offer(copy),
                    };
                    let counter = if taken { &c.tapped } else { &c.tap_dropped };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                Step::Side(Side::Filtered { discard, msg }) => {
                    if let Some(channel) = discard {
                        channel.send(msg).await?;
                    }
                    c.filtered.fetch_add(1, Ordering::Relaxed);
                }
                Step::Side(Side::Duplicate { divert }) => {
                    if let Some((channel, msg)) = divert {
                        channel.send(msg).await?;
                    }
                    c.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                Step::Side(Side::Invalid { msg, error }) => {
                    self.bury(msg, self.from().name(), DeathReason::Invalid, error)
                        .await?;
                    c.invalid.fetch_add(1, Ordering::Relaxed);
                }
                Step::Send {
                    target,
                    if_closed,
                    msg,
                } => {
                    sent = true;
                    match target.send(msg).await {
                        Ok(_) => {}
                        Err(error) if if_closed == IfClosed::Fail => return Err(error),
                        Err(error) => {
                            let reason = error.to_string();
                            let copy = error.into_message();
                            self.bury(copy, target.name(), DeathReason::ChannelDeleted, reason)
                                .await?;
                            dead_lettered += 1;
                        }
                    }
                }
                Step::NoRoute { origin, error, msg } => {
                    sent = true;
                    self.bury(msg, &origin, DeathReason::NoRoute, error).await?;
                    dead_lettered += 1;
                }
            }
        }
        c.dead_lettered.fetch_add(dead_lettered, Ordering::Relaxed);
        if sent {
            c.passed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Puts `msg` on the route's dead letter channel.
    async fn bury(
        &self,
        msg: Message,
        origin: &str,
        reason: DeathReason,
        error: String,
    ) -> Result<(), RouteError> {
        let dead_letters = self.dead_letters();
        dead_letters
            .bury(msg, origin, reason, Some(error))
            .await
            .map_err(|message| RouteError::DeadLetterClosed {
                channel: dead_letters.name().to_owned(),
                message: Box::new(message),
            })
    }
}

/// Why a route could not take a message: the message goes back to its channel for redelivery.
#[derive(Debug, thiserror::Error)]
pub enum RouteFailure {
    /// A step handed a message on after its route was dropped (the flow stopped).
    #[error("the route is no longer running")]
    Stopped,
    /// A send failed.
    #[error(transparent)]
    Send(#[from] RouteError),
    /// A step that calls out (a program's service) failed.
    #[error("route `{route}`, step {step} ({does}): {error}")]
    Step {
        /// The route.
        route: String,
        /// The step's place, from 1.
        step: usize,
        /// The step in a few words.
        does: String,
        /// What the step said.
        error: BoxError,
    },
}

/// A route as a `tower::Service`, for a consumer to drive.
impl tower::Service<Message> for Route {
    type Response = ();
    type Error = RouteFailure;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<(), RouteFailure>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteFailure>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let route = self.clone();
        Box::pin(async move { route.handle(msg).await })
    }
}
