//! Publishing to the broker: at most the publish window at once, each until the broker
//! confirmed it, tried again while the broker is away for at most `retry_for`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eip_core::log::Escaped;
use eip_core::message::Message;
use futures::future::BoxFuture;

use super::Shared;
use crate::bridge::{Backoff, BridgeError};

/// Publishes one message and answers once the broker confirmed it.
pub(crate) trait Publish: Send + Sync + 'static {
    fn publish<'a>(&'a self, msg: &'a Message) -> BoxFuture<'a, Result<(), BridgeError>>;
}

/// Holds one place of the publish window until dropped.
pub(super) struct Publishing<'a, D>(&'a Shared<D>);

impl<D> Drop for Publishing<'_, D> {
    fn drop(&mut self) {
        self.0.publishing.fetch_sub(1, Ordering::AcqRel);
        self.0.room.notify_waiters();
    }
}

impl<D> Shared<D> {
    /// A place in the publish window, waiting for one; `None` once the store is closed.
    pub(super) async fn publish_place(&self) -> Option<Publishing<'_, D>> {
        loop {
            let room = self.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            if self.publishing.fetch_add(1, Ordering::AcqRel) < self.limits.publish_window {
                return Some(Publishing(self));
            }
            self.publishing.fetch_sub(1, Ordering::AcqRel);
            room.await;
        }
    }

    /// Publishes `msg` until the broker confirms it, the refusal is permanent, or `retry_for`
    /// is over.
    pub(super) async fn publish(
        &self,
        publisher: &dyn Publish,
        msg: &Message,
    ) -> Result<(), BridgeError> {
        let started = Instant::now();
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        loop {
            match publisher.publish(msg).await {
                Ok(()) => {
                    self.published.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(error)
                    if error.is_permanent()
                        || started.elapsed() >= self.limits.retry_for
                        || self.closed.load(Ordering::Acquire) =>
                {
                    return Err(error);
                }
                Err(error) => {
                    let left = self.limits.retry_for.saturating_sub(started.elapsed());
                    let wait = backoff.next_wait().min(left);
                    tracing::debug!(store = %self.describe, error = %Escaped(&error), ?wait, "publishing again");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}
