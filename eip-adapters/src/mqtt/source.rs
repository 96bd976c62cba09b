//! The inbound half: a persistent QoS 1 subscription, each publish acknowledged (its PUBACK
//! sent) only once the channel accepted its message.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use eip_core::Message;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Publish, RetainForwardRule, SubscribeReasonCode};
use rumqttc::v5::{AsyncClient, Event, EventLoop, Incoming};
use tokio::sync::mpsc;

use super::broker::MqttBroker;
use super::properties::to_message;
use crate::bridge::envelope::EnvelopeError;
use crate::bridge::{BridgeError, Delivery, Source};

/// The inbound bridge's settings: plain data.
#[derive(Debug, Clone)]
pub struct MqttSourceConfig {
    /// The broker.
    pub broker: MqttBroker,
    /// The client id the session lives under: keep it fixed, and give each bridge its own.
    pub client_id: String,
    /// The topic filter subscribed to (wildcards `+` and `#` allowed).
    pub filter: String,
    /// How long the broker keeps the session (subscription and unacknowledged publishes)
    /// while the bridge is disconnected (default 1 day).
    pub session_expiry: Duration,
}

impl MqttSourceConfig {
    /// Subscribes to `filter` on `broker` in the session of `client_id`.
    pub fn new(
        broker: MqttBroker,
        client_id: impl Into<String>,
        filter: impl Into<String>,
    ) -> Self {
        MqttSourceConfig {
            broker,
            client_id: client_id.into(),
            filter: filter.into(),
            session_expiry: Duration::from_secs(24 * 60 * 60),
        }
    }

    /// How long the broker keeps the session while the bridge is away.
    pub fn session_expiry(mut self, expiry: Duration) -> Self {
        self.session_expiry = expiry;
        self
    }
}

/// A persistent QoS 1 subscription.
///
/// [`MqttSource`] is a [`Source`] for [`InboundBridge`](crate::bridge::InboundBridge). It
/// connects under a fixed client id without a clean start and with a session expiry interval,
/// so the broker keeps the subscription and every publish not acknowledged while the bridge is
/// away (stopped, crashed, cut off) and delivers them again to the next connection with that
/// client id. Acknowledgements are manual: the PUBACK for a publish is sent by
/// [`Delivery::ack`], which the bridge calls after the channel took the message. The bridge's
/// `window` is the connection's receive maximum: the broker sends no more than that many
/// publishes unacknowledged.
///
/// The client's event loop is polled on a task of its own while the connection lives (the
/// bridge stops reading when its window is full, and acknowledgements must still go out); its
/// publishes reach [`Source::next`] in order.
#[derive(Debug)]
pub struct MqttSource {
    config: MqttSourceConfig,
    connection: Option<Live>,
}

/// One connection: its client, the publishes its event loop delivered, its task.
#[derive(Debug)]
struct Live {
    client: AsyncClient,
    /// Publishes that arrived before the SUBACK (a resumed session's redeliveries).
    early: VecDeque<Publish>,
    events: mpsc::UnboundedReceiver<Pumped>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Live {
    fn drop(&mut self) {
        // The event loop and its socket go with the task; the broker keeps the session.
        self.task.abort();
    }
}

/// What the event loop task passes on.
#[derive(Debug)]
enum Pumped {
    SubAck(Vec<SubscribeReasonCode>),
    Publish(Publish),
    Lost(String),
}

impl MqttSource {
    /// The subscription `config` describes; nothing connects before the bridge runs.
    pub fn new(config: MqttSourceConfig) -> Self {
        MqttSource {
            config,
            connection: None,
        }
    }

    fn lost(&self, reason: impl std::fmt::Display) -> BridgeError {
        self.config.broker.lost(reason)
    }

    async fn subscribed(&mut self, window: usize) -> Result<Live, BridgeError> {
        let config = &self.config;
        let mut options = config.broker.options(&config.client_id);
        let window = u16::try_from(window.max(1)).unwrap_or(u16::MAX);
        let expiry = u32::try_from(config.session_expiry.as_secs()).unwrap_or(u32::MAX);
        options
            .set_clean_start(false)
            .set_manual_acks(true)
            .set_session_expiry_interval(Some(expiry))
            .set_receive_maximum(Some(window));
        let (client, eventloop) = AsyncClient::new(options, usize::from(window) + 16);
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(pump(eventloop, tx));
        let mut live = Live {
            client,
            early: VecDeque::new(),
            events,
            task,
        };
        let mut filter = Filter::new(config.filter.clone(), QoS::AtLeastOnce);
        // A resumed session keeps its subscription: subscribing again must not resend the
        // retained messages.
        filter.retain_forward_rule = RetainForwardRule::OnNewSubscribe;
        live.client
            .subscribe_many([filter])
            .await
            .map_err(|e| self.lost(format!("subscribe to {}: {e}", config.filter)))?;
        let wait = config.broker.connect_timeout * 2;
        let codes = tokio::time::timeout(wait, async {
            loop {
                match live.events.recv().await {
                    Some(Pumped::SubAck(codes)) => return Ok(codes),
                    Some(Pumped::Publish(p)) => live.early.push_back(p),
                    Some(Pumped::Lost(reason)) => return Err(self.lost(reason)),
                    None => return Err(self.lost("the event loop ended")),
                }
            }
        })
        .await
        .map_err(|_| self.lost(format!("no SUBACK within {wait:?}")))??;
        match codes.first() {
            Some(SubscribeReasonCode::Success(_)) => Ok(live),
            other => Err(BridgeError::Refused {
                broker: config.broker.describe(),
                what: format!("the subscription to {}", config.filter),
                reason: format!("{other:?}"),
                permanent: false,
            }),
        }
    }
}

/// Polls the event loop, passing SUBACKs and publishes on, until the connection fails.
async fn pump(mut eventloop: EventLoop, tx: mpsc::UnboundedSender<Pumped>) {
    loop {
        let pumped = match eventloop.poll().await {
            Ok(Event::Incoming(Incoming::Publish(publish))) => Pumped::Publish(publish),
            Ok(Event::Incoming(Incoming::SubAck(ack))) => Pumped::SubAck(ack.return_codes),
            Ok(_) => continue,
            Err(e) => Pumped::Lost(e.to_string()),
        };
        let lost = matches!(pumped, Pumped::Lost(_));
        if tx.send(pumped).is_err() || lost {
            return;
        }
    }
}

impl Source for MqttSource {
    type Delivery = MqttDelivery;

    async fn connect(&mut self, window: usize) -> Result<(), BridgeError> {
        // The old connection goes first: one client id has one connection at a time.
        self.connection = None;
        let live = self.subscribed(window).await?;
        self.connection = Some(live);
        Ok(())
    }

    async fn next(&mut self) -> Result<MqttDelivery, BridgeError> {
        let Some(live) = self.connection.as_mut() else {
            return Err(self.config.broker.lost("not connected"));
        };
        let publish = match live.early.pop_front() {
            Some(p) => p,
            None => loop {
                match live.events.recv().await {
                    Some(Pumped::Publish(p)) => break p,
                    Some(Pumped::SubAck(_)) => {}
                    Some(Pumped::Lost(reason)) => return Err(self.config.broker.lost(reason)),
                    None => return Err(self.config.broker.lost("the event loop ended")),
                }
            },
        };
        Ok(MqttDelivery {
            client: live.client.clone(),
            publish,
            broker: self.config.broker.describe(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} subscription {} (client id {})",
            self.config.broker.describe(),
            self.config.filter,
            self.config.client_id
        )
    }
}

/// A publish received and not yet acknowledged to the broker.
#[derive(Debug)]
pub struct MqttDelivery {
    client: AsyncClient,
    publish: Publish,
    broker: String,
}

impl MqttDelivery {
    /// The topic it was published to.
    pub fn topic(&self) -> String {
        String::from_utf8_lossy(&self.publish.topic).into_owned()
    }

    /// Whether the broker sent it before (the DUP flag: a redelivery after a lost connection).
    pub fn is_redelivery(&self) -> bool {
        self.publish.dup
    }
}

impl Delivery for MqttDelivery {
    fn message(&self) -> Result<Message, EnvelopeError> {
        to_message(
            &self.topic(),
            self.publish.properties.as_ref(),
            self.publish.payload.clone(),
        )
    }

    fn payload(&self) -> Bytes {
        self.publish.payload.clone()
    }

    async fn ack(self) -> Result<(), BridgeError> {
        // Queued for this delivery's own connection: once that one is gone, the ack fails and
        // the broker delivers the publish again on the next.
        self.client
            .ack(&self.publish)
            .await
            .map_err(|e| BridgeError::Connection {
                broker: self.broker,
                reason: format!("acknowledging a publish: {e}"),
            })
    }
}
