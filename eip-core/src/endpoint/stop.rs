//! Stopping a consumer in a bounded time.
//!
//! A consumer stops in two phases. **Stopping**: it takes no new deliveries, a delivery waiting
//! out its redelivery backoff is given back to its channel at once (nacked: back at the head,
//! its redelivery count raised, as the end of the backoff would have done), and calls in
//! progress go on. **Abandoning**: the calls still in progress are dropped, and with them
//! their deliveries, which go back to their channel unacknowledged like any dropped delivery.
//! A handle moves a consumer through the phases; [`Stopped`] says what each one gave back.
//!
//! What is given back stays in its channel: a durable channel delivers it again after a
//! restart, marked redelivered; a memory channel's contents end with the process. The rest of
//! a backoff is not remembered: the next delivery of the message comes without it.

use tokio::sync::watch;

/// How far a consumer is in stopping, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Taking and processing deliveries.
    Running,
    /// No new deliveries; backoffs cut short; calls in progress finish.
    Stopping,
    /// Calls in progress dropped.
    Abandoning,
}

/// Waits until `phase` has been reached. If the handle that moves the phases is gone without
/// moving them, never completes: a consumer whose handle was dropped runs on, detached.
pub(crate) async fn reached(mut watching: watch::Receiver<Phase>, phase: Phase) {
    if watching.wait_for(|now| *now >= phase).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// What a consumer gave back, unacknowledged, when it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Deliveries that were waiting out a redelivery backoff (or failed while the consumer was
    /// stopping), given back to their channel without the rest of their wait.
    pub given_back: usize,
    /// Calls still in progress when the time to finish them was up: dropped, their deliveries
    /// given back to their channel.
    pub abandoned: usize,
}

impl Stopped {
    /// Whether nothing was given back: every delivery taken was settled.
    pub fn is_clean(&self) -> bool {
        self.given_back == 0 && self.abandoned == 0
    }
}

impl std::ops::Add for Stopped {
    type Output = Stopped;

    fn add(self, other: Stopped) -> Stopped {
        Stopped {
            given_back: self.given_back + other.given_back,
            abandoned: self.abandoned + other.abandoned,
        }
    }
}

impl std::iter::Sum for Stopped {
    fn sum<I: Iterator<Item = Stopped>>(iter: I) -> Stopped {
        iter.fold(Stopped::default(), |all, one| all + one)
    }
}
