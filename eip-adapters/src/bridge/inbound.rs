//! The inbound half of a bridge: a broker source feeding an eip channel, at least once.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use eip_core::channel::{Channel, SendError, marked_dead};
use eip_core::endpoint::PauseGate;
use eip_core::message::{DeathReason, Message};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Notify;

use super::envelope::EnvelopeError;
use super::{Backoff, BridgeError, ConnectionHealth};
use eip_core::log::Escaped;

/// How long a stopping bridge waits for the deliveries in hand.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Where an inbound bridge reads: a queue, a durable consumer, a subscription, a consumer
/// group.
pub trait Source: Send + 'static {
    /// One message read and not yet acknowledged.
    type Delivery: Delivery;

    /// Connects and declares what the bridge needs (again, after a lost connection), then
    /// starts reading with at most `window` deliveries unacknowledged at a time.
    fn connect(&mut self, window: usize) -> impl Future<Output = Result<(), BridgeError>> + Send;

    /// The next delivery. An error means the connection is lost: [`connect`](Self::connect)
    /// is called again.
    fn next(&mut self) -> impl Future<Output = Result<Self::Delivery, BridgeError>> + Send;

    /// The source in a few words, for logs: `rabbitmq queue orders`.
    fn describe(&self) -> String;
}

/// A message read from a broker, not yet acknowledged.
pub trait Delivery: Send + Sync + 'static {
    /// The eip message it carries, or why it can not be one.
    fn message(&self) -> Result<Message, EnvelopeError>;

    /// Its payload as it came, for the dead letter of a delivery that is not a message.
    fn payload(&self) -> bytes::Bytes;

    /// Tells the broker the message is taken care of.
    fn ack(self) -> impl Future<Output = Result<(), BridgeError>> + Send;
}

/// A broker source feeding a channel.
///
/// [`InboundBridge`] owns the loop every broker shares, so each broker module only says how to
/// connect and how to read one delivery ([`Source`], [`Delivery`]):
/// - connect (declaring what the bridge declares), retried with [`Backoff`] until it works;
/// - take deliveries while fewer than `window` are unacknowledged; for each, send its message to
///   the channel (waiting for room: a full channel stops the bridge reading, and the broker
///   keeps the rest) and acknowledge it to the broker only once the channel accepted it (for a
///   durable channel: once it is on disk);
/// - a delivery that can not become a message (a poison message: its headers do not parse)
///   goes to the channel's dead letter channel with reason `invalid` and the error, then is
///   acknowledged, so it never blocks the bridge;
/// - when the connection is lost, what was not acknowledged is the broker's to deliver again
///   (a duplicate, never a loss): the bridge reconnects with backoff and resumes. The loss is
///   a warning, and so is the reconnection that ends it (`bridge reconnected`), so the default
///   log level shows both ends of an outage.
pub struct InboundBridge<S> {
    source: S,
    channel: Channel,
    window: usize,
    backoff: Backoff,
    health: ConnectionHealth,
    gate: Option<PauseGate>,
}

impl<S: Source> InboundBridge<S> {
    /// Feeds `channel` from `source`, at most `window` deliveries unacknowledged (at least 1).
    pub fn new(source: S, channel: impl Into<Channel>, window: usize) -> Self {
        InboundBridge {
            source,
            channel: channel.into(),
            window: window.max(1),
            backoff: Backoff::default(),
            health: ConnectionHealth::new(),
            gate: None,
        }
    }

    /// Reads nothing new from the broker while `gate`'s switch is paused (a Detour): the
    /// broker keeps what was not read, the connection stays up, and what was in hand is
    /// forwarded as usual. Resumed, it reads on.
    pub fn pause_gate(mut self, gate: PauseGate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The record of its connection's ups and downs, for the flow's watchers.
    pub fn health(&self) -> ConnectionHealth {
        self.health.clone()
    }

    /// Keeps its connection's record in `health` (made beforehand, for a watcher to hold).
    pub fn with_health(mut self, health: ConnectionHealth) -> Self {
        self.health = health;
        self
    }

    /// The waits between reconnection attempts (default: 100 ms doubling to 10 s).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Runs until `shutdown` completes (the deliveries in hand get a second to be sent and
    /// acknowledged; the broker delivers the others again) or the channel is closed.
    pub async fn run_until(
        mut self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), BridgeError> {
        let mut shutdown = pin!(shutdown);
        let what = self.source.describe();
        // Whether a loss or a failed attempt was warned of: its end is said as loudly.
        let mut reconnecting = false;
        loop {
            tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                connected = self.source.connect(self.window) => match connected {
                    Ok(()) if reconnecting => {
                        self.health.connected();
                        tracing::warn!(source = %what, channel = self.channel.name(), "bridge reconnected");
                        self.backoff.reset();
                    }
                    Ok(()) => {
                        self.health.connected();
                        tracing::info!(source = %what, channel = self.channel.name(), "bridge connected");
                        self.backoff.reset();
                    }
                    Err(error) => {
                        reconnecting = true;
                        self.health.failed(&error);
                        let wait = self.backoff.next_wait();
                        tracing::warn!(source = %what, error = %Escaped(&error), ?wait, "bridge: connecting failed");
                        tokio::select! {
                            biased;
                            () = &mut shutdown => return Ok(()),
                            () = tokio::time::sleep(wait) => continue,
                        }
                    }
                },
            }
            match self.consume(&mut shutdown).await {
                Consumed::Shutdown => return Ok(()),
                Consumed::Closed(channel) => return Err(BridgeError::ChannelClosed(channel)),
                Consumed::Lost(error) => {
                    reconnecting = true;
                    self.health.failed(&error);
                    let wait = self.backoff.next_wait();
                    tracing::warn!(source = %what, error = %Escaped(&error), ?wait, "bridge: connection lost, reconnecting");
                    tokio::select! {
                        biased;
                        () = &mut shutdown => return Ok(()),
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// Reads and forwards until the connection is lost, the channel closes or `shutdown`.
    async fn consume(&mut self, shutdown: &mut (impl Future<Output = ()> + Unpin)) -> Consumed {
        let mut in_flight = FuturesUnordered::new();
        let outcome = loop {
            let room = in_flight.len() < self.window;
            let paused = self.gate.as_ref().is_some_and(PauseGate::is_paused);
            let resumed = async {
                if let Some(gate) = &self.gate {
                    gate.resumed().await;
                }
            };
            tokio::select! {
                biased;
                () = &mut *shutdown => break Consumed::Shutdown,
                () = resumed, if paused => {}
                Some(done) = in_flight.next(), if !in_flight.is_empty() => match done {
                    Forwarded::Done => {}
                    Forwarded::Closed(channel) => break Consumed::Closed(channel),
                    Forwarded::Failed(error) => break Consumed::Lost(error),
                },
                next = self.source.next(), if room && !paused => match next {
                    Ok(delivery) => in_flight.push(forward(self.channel.clone(), delivery)),
                    Err(error) => break Consumed::Lost(error),
                },
            }
        };
        // At a shutdown what is in hand gets a moment to finish (a full channel may never take
        // it); what does not finish, or was in hand when the connection was lost, is dropped
        // unacknowledged, and the broker delivers it again.
        if let Consumed::Shutdown = outcome {
            let finish = async {
                while let Some(done) = in_flight.next().await {
                    if let Forwarded::Failed(error) = done {
                        tracing::debug!(error = %Escaped(&error), "bridge: an acknowledgement failed while stopping");
                    }
                }
            };
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, finish).await;
        }
        outcome
    }

    /// Runs on the current tokio runtime; the handle stops it.
    pub fn spawn(self) -> InboundBridgeHandle {
        let stop = Arc::new(Notify::new());
        let signal = stop.clone();
        let task = tokio::spawn(self.run_until(async move { signal.notified().await }));
        InboundBridgeHandle { stop, task }
    }
}

enum Consumed {
    Shutdown,
    Closed(String),
    Lost(BridgeError),
}

enum Forwarded {
    Done,
    Closed(String),
    Failed(BridgeError),
}

/// Sends one delivery's message (or, for a poison one, its dead letter) and acknowledges it.
async fn forward<D: Delivery>(channel: Channel, delivery: D) -> Forwarded {
    let sent = match delivery.message() {
        Ok(msg) => channel.send(msg).await.map(drop),
        Err(error) => dead_letter(&channel, &delivery, error).await,
    };
    match sent {
        Ok(()) => match delivery.ack().await {
            Ok(()) => Forwarded::Done,
            Err(error) => Forwarded::Failed(error),
        },
        Err(SendError::Closed { channel, .. }) => Forwarded::Closed(channel),
        // The store refused it (a full disk): leave it to the broker, and back off.
        Err(error) => Forwarded::Failed(BridgeError::Send(error.to_string())),
    }
}

/// A delivery that is not a message goes to the channel's dead letter channel, its payload as
/// it came and the reason in its death record.
async fn dead_letter<D: Delivery>(
    channel: &Channel,
    delivery: &D,
    error: EnvelopeError,
) -> Result<(), SendError> {
    let raw = Message::new(delivery.payload());
    let dead = marked_dead(
        raw,
        channel.name(),
        DeathReason::Invalid,
        Some(error.to_string()),
    );
    match channel.dead_letter_channel() {
        Some(dead_letters) => dead_letters.send(dead).await.map(drop),
        None => {
            tracing::error!(channel = channel.name(), error = %Escaped(&error), "bridge: a message that can not be read was dropped (the channel has no dead letter channel)");
            Ok(())
        }
    }
}

/// Stops a spawned [`InboundBridge`].
#[derive(Debug)]
pub struct InboundBridgeHandle {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<Result<(), BridgeError>>,
}

impl InboundBridgeHandle {
    /// Stops reading (the deliveries in hand get a second to be forwarded) and waits.
    pub async fn shutdown(self) -> Result<(), BridgeError> {
        self.stop.notify_one();
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(BridgeError::Task(e.to_string())),
        }
    }

    /// Whether the bridge has stopped (its channel closed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}
