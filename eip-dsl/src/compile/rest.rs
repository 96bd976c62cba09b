//! The rest of a route after a step that wraps it (an idempotent receiver, an aggregator):
//! the steps after that one and the action, as a `tower::Service` the step hands messages to,
//! held strongly for a call and weakly for what a step sends on later.

use std::task::{Context, Poll};

use eip_core::channel::Channel;
use eip_core::message::Message;
use eip_core::store::durable::DurableAck;
use futures::future::BoxFuture;
use tower::BoxError;

use super::route::{Inner, Route, RouteFailure, Step};
use crate::step::Side;

/// The rest of a route, held weakly: for a step that hands messages on outside any call (an
/// aggregator's timeout), so the step does not keep its own route alive.
#[derive(Debug, Clone)]
pub struct WeakRest {
    pub(super) route: std::sync::Weak<Inner>,
    pub(super) first: usize,
}

impl WeakRest {
    /// The rest, while the route is there.
    pub fn upgrade(&self) -> Option<Rest> {
        Some(Rest {
            route: Route {
                inner: self.route.upgrade()?,
            },
            first: self.first,
        })
    }
}

/// The rest of a route after a step that [wraps](crate::step::RouteStep::wraps) it: the steps
/// after that one, then the action. A `tower::Service` too, so a step can put one of eip-steps'
/// services (an idempotent receiver) in front of it.
#[derive(Debug, Clone)]
pub struct Rest {
    pub(super) route: Route,
    /// The first step it runs.
    pub(super) first: usize,
}

impl Rest {
    /// Runs `msg` through the rest of the route; completes once everything it became was
    /// accepted.
    pub async fn run(&self, msg: Message) -> Result<(), RouteFailure> {
        self.route.run_from(self.first, msg).await
    }

    /// Carries out a step's side effect (a duplicate diverted, an invalid message
    /// dead-lettered), counting it as the route counts its own.
    pub async fn carry(&self, side: Side) -> Result<(), RouteFailure> {
        Ok(self.route.carry_out(vec![Step::Side(side)]).await?)
    }

    /// The acknowledgement of `msg` if it is the message the route took from a durable
    /// channel (a step that changed it kept its id) and it is not settled yet: a step that
    /// keeps state writes it in its own commit.
    pub fn source_ack(&self, msg: &Message) -> Option<DurableAck> {
        self.route.from().durable_ack(self.route.name(), msg.id())
    }

    /// The failure of the step before this rest (the wrapping step) with `error`.
    pub fn failed(&self, error: BoxError) -> RouteFailure {
        self.route.step_failed(self.first.saturating_sub(1), error)
    }

    /// Carries out what the wrapping step made of the message it took, once its own service
    /// (which ran this rest, or will) answered.
    pub async fn finish(&self, wrapped: Wrapped) -> Result<(), RouteFailure> {
        match wrapped {
            Wrapped::Done => Ok(()),
            Wrapped::Duplicate(divert) => self.carry(Side::Duplicate { divert }).await,
            Wrapped::Invalid { msg, error } => self.carry(Side::Invalid { msg, error }).await,
            Wrapped::Failed(failure) => Err(failure),
            Wrapped::Error(error) => Err(self.failed(error)),
        }
    }
}

/// What a step that wraps the rest of its route made of a message, in the route's terms.
#[derive(Debug)]
pub enum Wrapped {
    /// Passed on (the rest accepted it), or held: nothing more to do.
    Done,
    /// A duplicate: counted, and sent to the divert channel if there is one.
    Duplicate(Option<(Channel, Message)>),
    /// The message can not be processed: dead-lettered with reason `invalid`.
    Invalid {
        /// The message.
        msg: Message,
        /// Why.
        error: String,
    },
    /// The rest of the route failed: the message goes back for redelivery.
    Failed(RouteFailure),
    /// The step itself failed (its store could not write, say): redelivery too.
    Error(BoxError),
}

impl tower::Service<Message> for Rest {
    type Response = ();
    type Error = RouteFailure;
    type Future = BoxFuture<'static, Result<(), RouteFailure>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteFailure>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let rest = self.clone();
        Box::pin(async move { rest.run(msg).await })
    }
}
