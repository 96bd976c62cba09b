//! The aggregator's timer: gives up groups whose timeout passed, with no new message needed.
//!
//! One tokio task per aggregator (shared by its clones). It sleeps until the oldest group's
//! deadline, or, with no group open, until one opens; groups open in time order and share one
//! timeout, so no later group can be due sooner. It holds the state only weakly and is aborted
//! when the last clone of the aggregator is dropped.

use std::sync::{Arc, Weak};
use std::time::Duration;

use eip_core::message::Message;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};
use tower::Service;

use super::config::Rule;
use super::release::give_up_and_forget;
use super::state::Shared;

/// Starts the timer of `shared` if it has a timeout, none runs yet, and a tokio runtime is
/// there to run it (otherwise the next call tries again).
pub(crate) fn ensure_started<S>(shared: &Arc<Shared>, inner: &S)
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: std::fmt::Display + Send + 'static,
{
    let Some(timeout) = shared.config.timeout else {
        return;
    };
    if shared.timer.get().is_some() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let task = runtime.spawn(run(
        Arc::downgrade(shared),
        shared.wake.clone(),
        timeout,
        inner.clone(),
    ));
    if shared.timer.set(task.abort_handle()).is_err() {
        task.abort();
    }
}

async fn run<S>(shared: Weak<Shared>, wake: Arc<Notify>, timeout: Duration, inner: S)
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: std::fmt::Display + Send + 'static,
{
    loop {
        let oldest = match shared.upgrade() {
            None => return,
            Some(s) => s.oldest_opened(),
        };
        match oldest {
            None => wake.notified().await,
            Some(opened) => sleep_until(opened + timeout).await,
        }
        let Some(s) = shared.upgrade() else { return };
        for group in s.take_expired(Instant::now(), timeout) {
            give_up_and_forget(&s, group, Rule::Timeout, inner.clone()).await;
        }
    }
}
