//! Ready: waiting until a channel's stores can take and give messages.

use std::sync::Arc;
use std::time::Duration;

use super::{Channel, PointToPoint, PublishSubscribe};
use crate::store::MessageStore;

/// Stores that did not get ready in time, each named by its channel and place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not ready within {limit:?}: {}", waiting.join("; "))]
pub struct NotReady {
    /// The stores still not ready: `channel `prices` subscription `audit` (rabbitmq at …)`.
    pub waiting: Vec<String>,
    /// How long they were waited for.
    pub limit: Duration,
}

/// A store to wait for, and how to name it if it is late.
pub(crate) type Awaited = (String, Arc<dyn MessageStore>);

/// Waits until every store of `channels` is ready, for at most `limit` in all.
///
/// A store in memory or on disk is ready once opened. A store that connects in the
/// background (a broker's subscription) sees only what is published after it connected and
/// declared what it reads, so whoever owns a channel waits for that before it sends:
/// [`Channel::ready`] for one channel, [`all_ready`] for a flow's channels. Each waits on the
/// stores of the channels it is given and no others (two flows in one process never wait on
/// each other), and names every store that did not get ready in time.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use eip_core::channel::{Channel, PointToPoint, PublishSubscribe, all_ready};
///
/// let orders: Channel = PointToPoint::new("orders", 16).unwrap().into();
/// let prices = PublishSubscribe::new("prices", 16).unwrap();
/// let _audit = prices.durable_subscribe("audit");
/// let flow = [orders, prices.into()];
/// // In memory: ready at once.
/// assert!(all_ready(&flow, Duration::from_secs(1)).await.is_ok());
/// # }
/// ```
pub async fn all_ready<'a>(
    channels: impl IntoIterator<Item = &'a Channel>,
    limit: Duration,
) -> Result<(), NotReady> {
    let stores = channels.into_iter().flat_map(Channel::awaited).collect();
    wait(stores, limit).await
}

/// Waits for `stores` together, for at most `limit`; names the late ones.
async fn wait(stores: Vec<Awaited>, limit: Duration) -> Result<(), NotReady> {
    let deadline = tokio::time::Instant::now() + limit;
    let waits = stores.iter().map(|(what, store)| async move {
        let ready = tokio::time::timeout_at(deadline, store.ready()).await;
        ready.is_err().then(|| what.clone())
    });
    let waiting: Vec<String> = futures::future::join_all(waits)
        .await
        .into_iter()
        .flatten()
        .collect();
    match waiting.is_empty() {
        true => Ok(()),
        false => Err(NotReady { waiting, limit }),
    }
}

impl Channel {
    /// Waits until the channel's stores (a publish-subscribe channel's: each subscription's
    /// too) are ready, for at most `limit`; see [`all_ready`].
    pub async fn ready(&self, limit: Duration) -> Result<(), NotReady> {
        wait(self.awaited(), limit).await
    }

    fn awaited(&self) -> Vec<Awaited> {
        match self {
            Channel::PointToPoint(c) => c.awaited(),
            Channel::PublishSubscribe(c) => c.awaited(),
        }
    }
}

impl PointToPoint {
    /// Waits until the channel's store is ready, for at most `limit`; see [`all_ready`].
    pub async fn ready(&self, limit: Duration) -> Result<(), NotReady> {
        wait(self.awaited(), limit).await
    }

    fn awaited(&self) -> Vec<Awaited> {
        let what = format!("channel `{}`", self.name());
        vec![(what, self.queue().store.clone())]
    }
}

impl PublishSubscribe {
    /// Waits until the channel's stores, each subscription's included, are ready, for at most
    /// `limit`; see [`all_ready`].
    pub async fn ready(&self, limit: Duration) -> Result<(), NotReady> {
        wait(self.awaited(), limit).await
    }
}
