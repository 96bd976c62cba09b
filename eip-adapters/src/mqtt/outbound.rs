//! The outbound half: each message published at QoS 1, `Ok` once its PUBACK came back.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use eip_core::Message;
use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{PubAck, PubAckReason};
use rumqttc::v5::{AsyncClient, Event, EventLoop, Incoming};
use tokio::sync::{Notify, Semaphore, oneshot};

use super::broker::MqttBroker;
use super::properties::to_properties;
use super::topic::TopicTemplate;
use crate::bridge::{Backoff, BridgeError, Outbound, Publisher};
use eip_core::log::Escaped;

/// The outbound bridge's settings: plain data.
#[derive(Debug, Clone)]
pub struct MqttOutboundConfig {
    /// The broker.
    pub broker: MqttBroker,
    /// The client id of the bridge's connection (a clean session each time).
    pub client_id: String,
    /// Where each message goes.
    pub topic: TopicTemplate,
    /// The most publishes waiting for their PUBACK at once (default 64, at least 1).
    pub in_flight: usize,
    /// Whether the broker keeps the last message of each topic for new subscribers.
    pub retain: bool,
    /// How long a publish may wait for its PUBACK before it fails (default 10 s); the
    /// connection is then taken as stalled and made again.
    pub ack_timeout: Duration,
    /// The waits between reconnection attempts.
    pub backoff: Backoff,
}

impl MqttOutboundConfig {
    /// Publishes to `topic` on `broker` as `client_id`.
    pub fn new(broker: MqttBroker, client_id: impl Into<String>, topic: TopicTemplate) -> Self {
        MqttOutboundConfig {
            broker,
            client_id: client_id.into(),
            topic,
            in_flight: 64,
            retain: false,
            ack_timeout: Duration::from_secs(10),
            backoff: Backoff::default(),
        }
    }

    /// The most publishes waiting for their PUBACK at once (1 to 65 535).
    pub fn in_flight(mut self, n: usize) -> Self {
        self.in_flight = n.clamp(1, usize::from(u16::MAX));
        self
    }

    /// Sets the retain flag on every publish.
    pub fn retain(mut self, retain: bool) -> Self {
        self.retain = retain;
        self
    }

    /// How long a publish may wait for its PUBACK.
    pub fn ack_timeout(mut self, timeout: Duration) -> Self {
        self.ack_timeout = timeout;
        self
    }

    /// The waits between reconnection attempts.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }
}

/// Publishes messages to an MQTT topic at QoS 1.
///
/// [`MqttOutbound`] is a `tower::Service<Message>` (drive it with a
/// [`Consumer`](eip_core::endpoint::Consumer)). Its connection lives on a task of its own,
/// which polls the client's event loop: it hands each publish the packet id the client gave it
/// (the client sends publishes in the order they were queued, so the n-th queued publish is
/// the n-th one sent) and completes the call when the PUBACK with that id arrives. At most
/// `in_flight` publishes wait for their PUBACK at once; further calls wait for room. The
/// broker's receive maximum (Mosquitto: 20 by default) caps what is on the wire; the rest of
/// the window waits in the client's queue, still in order.
///
/// When the connection is lost, every call still waiting fails (the broker may or may not have
/// the message: the consumer's redelivery sends it again, a duplicate rather than a loss), and
/// so does every call made until the task has connected again (with [`Backoff`]). A PUBACK
/// overdue by `ack_timeout` fails its call and counts as a stalled connection: that connection
/// is dropped and made again. Each connection starts a clean session: nothing is resent behind
/// the consumer's back.
///
/// A PUBACK with a failure reason fails the call; `not authorized`, `topic name invalid` and
/// `payload format invalid` are permanent (see [`BridgeError::is_permanent`]), the others
/// (quota exceeded, unspecified) are retried. So is a message whose topic can not be made (no
/// subject, a subject with a wildcard): permanent.
pub type MqttOutbound = Outbound<MqttPublisher>;

/// How an [`MqttOutbound`] publishes: its connection task and the calls waiting for a PUBACK.
pub struct MqttPublisher {
    broker: String,
    topic: TopicTemplate,
    retain: bool,
    ack_timeout: Duration,
    permits: Arc<Semaphore>,
    link: Arc<Mutex<Link>>,
    health: crate::bridge::ConnectionHealth,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MqttPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The live connection, shared by the calls and the connection task.
#[derive(Default)]
struct Link {
    /// The client of the connection that is up; `None` during an outage.
    client: Option<AsyncClient>,
    /// The publishes queued to the client and not sent yet, in order.
    queued: VecDeque<Waiter>,
    /// Tells the task serving the connection that is up that a PUBACK is overdue.
    stalled: Arc<Notify>,
}

type Waiter = oneshot::Sender<Result<(), BridgeError>>;

impl MqttOutbound {
    /// Connects (the first connection must succeed, so a wrong address shows at once) and
    /// starts the connection task on the current tokio runtime; later losses are reconnected.
    pub async fn connect(config: MqttOutboundConfig) -> Result<MqttOutbound, BridgeError> {
        let in_flight = config.in_flight.clamp(1, usize::from(u16::MAX));
        let link = Arc::new(Mutex::new(Link::default()));
        let connection = Connection {
            broker: config.broker.clone(),
            client_id: config.client_id.clone(),
            in_flight,
            link: link.clone(),
            backoff: config.backoff.clone(),
            health: crate::bridge::ConnectionHealth::new(),
        };
        let (client, eventloop) = connection.connect().await?;
        let health = connection.health.clone();
        health.connected();
        // Set before the first call can be made: the outbound is connected when it is returned.
        let stalled = connection.install(client);
        let task = tokio::spawn(connection.run(eventloop, stalled));
        Ok(Outbound::from_publisher(MqttPublisher {
            broker: config.broker.describe(),
            topic: config.topic,
            retain: config.retain,
            ack_timeout: config.ack_timeout,
            permits: Arc::new(Semaphore::new(in_flight)),
            link,
            health,
            task,
        }))
    }

    /// Whether a connection to the broker is up now.
    pub fn is_connected(&self) -> bool {
        lock(&self.get_ref().link).client.is_some()
    }
}

impl Publisher for MqttPublisher {
    type Receipt = ();

    async fn publish(&self, msg: &Message) -> Result<(), BridgeError> {
        let topic = self
            .topic
            .topic_for(msg)
            .map_err(|e| e.into_bridge_error(&self.broker))?;
        let properties = to_properties(msg);
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| BridgeError::Task(e.to_string()))?;
        let (done, acked) = oneshot::channel();
        let stalled = {
            let mut link = lock(&self.link);
            let Some(client) = link.client.as_ref() else {
                return Err(BridgeError::Connection {
                    broker: self.broker.clone(),
                    reason: "not connected (reconnecting)".to_owned(),
                });
            };
            client
                .try_publish_with_properties(
                    topic.as_str(),
                    QoS::AtLeastOnce,
                    self.retain,
                    msg.payload().clone(),
                    properties,
                )
                .map_err(|e| BridgeError::Connection {
                    broker: self.broker.clone(),
                    reason: format!("publish to {topic}: {e}"),
                })?;
            link.queued.push_back(done);
            link.stalled.clone()
        };
        match tokio::time::timeout(self.ack_timeout, acked).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(BridgeError::Connection {
                broker: self.broker.clone(),
                reason: format!("the connection closed before the PUBACK for {topic}"),
            }),
            Err(_) => {
                stalled.notify_one();
                Err(BridgeError::Connection {
                    broker: self.broker.clone(),
                    reason: format!("no PUBACK for {topic} within {:?}", self.ack_timeout),
                })
            }
        }
    }

    fn describe(&self) -> String {
        format!("{} topic {}", self.broker, self.topic)
    }

    fn health(&self) -> Option<crate::bridge::ConnectionHealth> {
        Some(self.health.clone())
    }
}

/// The connection task's state.
struct Connection {
    broker: MqttBroker,
    client_id: String,
    in_flight: usize,
    link: Arc<Mutex<Link>>,
    backoff: Backoff,
    health: crate::bridge::ConnectionHealth,
}

impl Connection {
    /// Connects once: the client and its event loop, past the CONNACK.
    async fn connect(&self) -> Result<(AsyncClient, EventLoop), BridgeError> {
        let mut options = self.broker.options(&self.client_id);
        options.set_clean_start(true);
        let window = u16::try_from(self.in_flight).unwrap_or(u16::MAX);
        options.set_outgoing_inflight_upper_limit(window);
        let (client, mut eventloop) = AsyncClient::new(options, self.in_flight + 8);
        match eventloop.poll().await {
            Ok(Event::Incoming(Incoming::ConnAck(_))) => Ok((client, eventloop)),
            Ok(other) => Err(self.broker.lost(format!("expected CONNACK, got {other:?}"))),
            Err(e) => Err(self.broker.lost(e)),
        }
    }

    /// Serves connections until the outbound is dropped: `first`, then each new one after a
    /// loss.
    async fn run(mut self, first: EventLoop, stalled: Arc<Notify>) {
        let (mut eventloop, mut stalled) = (first, stalled);
        loop {
            let error = self.serve(eventloop, &stalled).await;
            self.health.failed(&error);
            let wait = self.backoff.next_wait();
            tracing::warn!(error = %Escaped(&error), ?wait, "mqtt outbound: connection lost, reconnecting");
            tokio::time::sleep(wait).await;
            eventloop = loop {
                match self.connect().await {
                    Ok((client, eventloop)) => {
                        self.backoff.reset();
                        self.health.connected();
                        stalled = self.install(client);
                        tracing::warn!(broker = %self.broker.describe(), "mqtt outbound reconnected");
                        break eventloop;
                    }
                    Err(error) => {
                        self.health.failed(&error);
                        let wait = self.backoff.next_wait();
                        tracing::warn!(error = %Escaped(&error), ?wait, "mqtt outbound: connecting failed");
                        tokio::time::sleep(wait).await;
                    }
                }
            };
        }
    }

    /// Makes `client` the one calls publish with; gives the notice of its stall.
    fn install(&self, client: AsyncClient) -> Arc<Notify> {
        let stalled = Arc::new(Notify::new());
        let mut link = lock(&self.link);
        link.client = Some(client);
        link.stalled = stalled.clone();
        stalled
    }

    /// Matches publishes to their PUBACKs until the connection fails; then fails every call
    /// still waiting.
    async fn serve(&self, mut eventloop: EventLoop, stalled: &Notify) -> BridgeError {
        let mut sent: HashMap<u16, Waiter> = HashMap::new();
        let error = loop {
            let event = tokio::select! {
                event = eventloop.poll() => event,
                () = stalled.notified() => {
                    break self.broker.lost("a PUBACK is overdue: the connection is stalled");
                }
            };
            match event {
                Ok(Event::Outgoing(Outgoing::Publish(pkid))) => {
                    if let Some(waiter) = lock(&self.link).queued.pop_front() {
                        sent.insert(pkid, waiter);
                    }
                }
                Ok(Event::Incoming(Incoming::PubAck(ack))) => {
                    if let Some(waiter) = sent.remove(&ack.pkid) {
                        let _ = waiter.send(self.settled(&ack));
                    }
                }
                Ok(_) => {}
                Err(e) => break self.broker.lost(e),
            }
        };
        let queued = {
            let mut link = lock(&self.link);
            link.client = None;
            std::mem::take(&mut link.queued)
        };
        for waiter in queued.into_iter().chain(sent.into_values()) {
            let _ = waiter.send(Err(self.broker.lost(format!(
                "the connection was lost before the PUBACK ({error})"
            ))));
        }
        error
    }

    /// The call's result for a PUBACK.
    fn settled(&self, ack: &PubAck) -> Result<(), BridgeError> {
        let permanent = match ack.reason {
            PubAckReason::Success | PubAckReason::NoMatchingSubscribers => return Ok(()),
            PubAckReason::NotAuthorized
            | PubAckReason::TopicNameInvalid
            | PubAckReason::PayloadFormatInvalid => true,
            _ => false,
        };
        let detail = ack
            .properties
            .as_ref()
            .and_then(|p| p.reason_string.as_deref())
            .map(|s| format!(": {s}"))
            .unwrap_or_default();
        Err(BridgeError::Refused {
            broker: self.broker.describe(),
            what: "a publish".to_owned(),
            reason: format!("{:?}{detail}", ack.reason),
            permanent,
        })
    }
}

fn lock(link: &Mutex<Link>) -> std::sync::MutexGuard<'_, Link> {
    // A panic while holding the lock leaves the link consistent (each step is one push or
    // pop): carry on with it.
    link.lock().unwrap_or_else(PoisonError::into_inner)
}
