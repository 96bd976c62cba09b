//! Reading the broker into the store's window, and acknowledging to the broker what the
//! channel settled: two tasks per store, on the runtime it was opened on, ending with it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eip_core::log::Escaped;
use eip_core::message::Message;
use eip_core::store::{MessageStore, Push};
use tokio::sync::{mpsc, watch};

use super::{ENVELOPE_ERROR, Shared};
use crate::bridge::{Backoff, BridgeError, Delivery, Source};

/// How long a closed store keeps acknowledging what its consumers settle.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Acknowledges to the broker what the store hands over, a few at a time, until the store
/// is gone.
pub(super) async fn acknowledge<D: Delivery>(
    mut acks: mpsc::UnboundedReceiver<D>,
    describe: String,
) {
    use futures::StreamExt;
    let mut pending = futures::stream::FuturesUnordered::new();
    loop {
        tokio::select! {
            next = acks.recv() => match next {
                Some(delivery) => pending.push(delivery.ack()),
                None => break,
            },
            Some(acked) = pending.next(), if !pending.is_empty() => {
                if let Err(error) = acked {
                    // The broker delivers it again: a duplicate, never a loss.
                    tracing::warn!(store = %describe, error = %Escaped(&error), "acknowledging to the broker failed");
                }
            }
        }
    }
    while let Some(acked) = pending.next().await {
        if let Err(error) = acked {
            tracing::warn!(store = %describe, error = %Escaped(&error), "acknowledging to the broker failed");
        }
    }
}

/// How one connection ended.
enum Ended {
    /// The store closed or was dropped: no more reading.
    Stopped,
    /// The connection was lost: connect again after a wait.
    Lost(BridgeError),
}

/// Reads the broker into the store's window until the store closes, connecting again with a
/// backoff whenever the connection is lost. `ready` is set at the first connection.
pub(super) async fn read<S: Source>(
    shared: std::sync::Arc<Shared<S::Delivery>>,
    mut source: S,
    mut stopped: watch::Receiver<bool>,
    ready: watch::Sender<bool>,
) {
    let mut backoff = Backoff::default();
    if !shared.wanted.load(Ordering::Acquire) {
        tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => return,
            () = shared.demand.notified() => {}
        }
    }
    let mut reconnecting = false;
    loop {
        let context = Reading {
            shared: &shared,
            ready: &ready,
            reconnecting,
        };
        let lost = match read_once(context, &mut source, &mut stopped, &mut backoff).await {
            Ended::Stopped => break,
            Ended::Lost(error) => error,
        };
        reconnecting = true;
        let wait = backoff.next_wait();
        tracing::warn!(store = %shared.describe, error = %Escaped(&lost), ?wait, "broker store: reading again after a wait");
        tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    // What consumers hold may still be settled for a moment; then the connection closes and
    // the broker has every message not acknowledged, to deliver again.
    let until = Instant::now() + CLOSE_GRACE;
    while shared.local.stats().in_flight > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(source);
}

/// What one connection's reading needs of the store.
struct Reading<'a, D> {
    shared: &'a Shared<D>,
    /// Set at the first connection.
    ready: &'a watch::Sender<bool>,
    /// Whether a connection was lost before: a connection that works is then said at the
    /// level its loss was.
    reconnecting: bool,
}

/// Connects once and reads until the connection is lost or the store stops.
async fn read_once<S: Source>(
    context: Reading<'_, S::Delivery>,
    source: &mut S,
    stopped: &mut watch::Receiver<bool>,
    backoff: &mut Backoff,
) -> Ended {
    let Reading {
        shared,
        ready,
        reconnecting,
    } = context;
    let connected = tokio::select! {
        biased;
        _ = stopped.wait_for(|stop| *stop) => return Ended::Stopped,
        connected = source.connect(shared.local.capacity()) => connected,
    };
    if let Err(error) = connected {
        return Ended::Lost(error);
    }
    backoff.reset();
    ready.send_replace(true);
    if reconnecting {
        tracing::warn!(store = %shared.describe, "broker store: reconnected, reading again");
    } else {
        tracing::debug!(store = %shared.describe, "broker store reading");
    }
    loop {
        let next = tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => return Ended::Stopped,
            next = source.next() => next,
        };
        match next {
            Ok(delivery) => {
                if !keep(shared, delivery, stopped).await {
                    return Ended::Stopped;
                }
            }
            Err(error) => return Ended::Lost(error),
        }
    }
}

/// Puts one delivery into the window (waiting for room); false once the store is closed or
/// stopped (the delivery then goes back to the broker).
async fn keep<D: Delivery>(
    shared: &Shared<D>,
    delivery: D,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let msg = match delivery.message() {
        Ok(msg) => msg,
        Err(error) => {
            tracing::warn!(store = %shared.describe, error = %Escaped(&error), "a delivery that is not an eip message: passed on as it came");
            let mut msg = Message::new(delivery.payload());
            msg.headers_mut().insert(ENVELOPE_ERROR, error.to_string());
            msg
        }
    };
    let id = msg.id();
    // Held before the message can be taken, so that its settling finds it.
    shared
        .deliveries()
        .entry(id)
        .or_default()
        .push_back(delivery);
    let mut slot = Some(msg);
    let pushed = tokio::select! {
        biased;
        _ = stopped.wait_for(|stop| *stop) => None,
        pushed = shared.local.push(&mut slot) => Some(pushed),
    };
    match pushed {
        Some(Push::Stored) => true,
        _ => {
            shared.give_back(id);
            false
        }
    }
}
