//! [`Later`]: the rest of a route as a `tower::Service`, for a step that hands messages on
//! outside any call (an aggregator's timeout, a resequencer's gap timeout). The step's
//! eip-steps service is built over it before the route exists; the route attaches itself once
//! built ([`RouteStep::attach`](super::RouteStep::attach)).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use eip_core::message::Message;
use futures::future::BoxFuture;
use tower::Service;

use crate::compile::{RouteFailure, WeakRest};

/// The rest of the route, known once the route is built; what a released message goes to.
/// Held weakly: once the route is dropped a message handed to it fails with
/// [`RouteFailure::Stopped`].
#[derive(Clone, Default)]
pub(super) struct Later(Arc<OnceLock<WeakRest>>);

impl Later {
    /// Sets the rest of the route; built once, attached once: a second attach would be the
    /// same rest, and is ignored.
    pub(super) fn attach(&self, rest: WeakRest) {
        let _ = self.0.set(rest);
    }
}

impl fmt::Debug for Later {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Later")
    }
}

impl Service<Message> for Later {
    type Response = ();
    type Error = RouteFailure;
    type Future = BoxFuture<'static, Result<(), RouteFailure>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteFailure>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let rest = self.0.get().and_then(WeakRest::upgrade);
        Box::pin(async move {
            match rest {
                Some(rest) => rest.run(msg).await,
                None => Err(RouteFailure::Stopped),
            }
        })
    }
}
