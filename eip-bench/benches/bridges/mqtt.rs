//! `bridge mqtt->rabbitmq`: a QoS 1 MQTT subscription into a durable RabbitMQ queue, published
//! persistent with publisher confirms.
//!
//! The subscription is made (not timed) before anything is published, then a feeder publishes
//! messages of 1 KiB to its topic at QoS 1 while the round runs, the same feeder for both
//! sides. It is paced: at most [`FEED_AHEAD`] messages published and not yet confirmed by
//! RabbitMQ. Unpaced, it would outrun the subscriber, and Mosquitto drops the QoS 1 messages
//! queued for a subscriber beyond its `max_queued_messages` (1000 by default).
//!
//! eip: an [`MqttSource`] (a persistent session, PUBACK once the channel took the message)
//! through [`drain_with_bridge`] into an [`AmqpOutbound`] (the default exchange, the queue's
//! name as routing key). Baseline: a rumqttc subscription with the same session settings
//! (manual acks, receive maximum 256) and, for each publish, a lapin publish (persistent,
//! mandatory) on a channel in confirm mode whose confirm is awaited before the PUBACK is sent;
//! the receive maximum keeps at most 256 at once. Both end when RabbitMQ confirmed every message;
//! the queue then holds exactly the round's messages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use eip_adapters::amqp::{AmqpOutbound, AmqpOutboundConfig, RoutingKey};
use eip_adapters::bridge::Source;
use eip_adapters::mqtt::{MqttSource, MqttSourceConfig};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::{BasicProperties, Confirmation};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Publish, SubscribeReasonCode};
use rumqttc::v5::{AsyncClient, Event, EventLoop, Incoming, MqttOptions};
use tokio::task::JoinHandle;

use crate::brokers::{RabbitQueue, amqp_url, mqtt_broker, unique};
use crate::{PAYLOAD, Progress, Side, WINDOW, drain_with_bridge};

/// The most messages published and not yet through. The broker then holds at most this many
/// plus the window (through, their PUBACK not yet in) unacknowledged for the subscriber: 768,
/// under Mosquitto's `max_queued_messages` even where it does not count the window apart
/// (with 3 windows ahead, a round once lost messages that way). Enough to keep 256 publishes
/// awaiting their confirm on both sides.
const FEED_AHEAD: usize = 2 * WINDOW;
/// How long the broker keeps a subscriber's session once it is gone.
const SESSION_EXPIRY: Duration = Duration::from_secs(30);

/// Subscribes, feeds the topic while draining the subscription into a fresh queue with
/// `side`, and returns the time from the first publish until RabbitMQ confirmed the last.
pub async fn round(messages: usize, side: Side) -> Duration {
    let tag = unique();
    let topic = format!("eip-bench/{tag}");
    let subscriber = format!("eip-bench-sub-{tag}");
    let feeder = format!("eip-bench-feed-{tag}");
    let queue = RabbitQueue::declare(format!("eip-bench-mqtt-{tag}")).await;
    let progress = Progress::new(messages, FEED_AHEAD);
    let elapsed = match side {
        Side::Eip => {
            let config = MqttSourceConfig::new(mqtt_broker(), subscriber, &topic)
                .session_expiry(SESSION_EXPIRY);
            let mut source = MqttSource::new(config);
            // The session exists before the first publish; the bridge resumes it.
            source.connect(WINDOW).await.expect("subscribed");
            let outbound = AmqpOutbound::new(AmqpOutboundConfig {
                routing_key: RoutingKey::Fixed(queue.name.clone()),
                ..AmqpOutboundConfig::new(amqp_url(), "")
            });
            outbound.connect().await.expect("RabbitMQ connects");
            let _feeder = Feeder::start(&feeder, &topic, &progress);
            drain_with_bridge(source, outbound, &progress).await
        }
        Side::Raw => {
            let subscription = subscribe(&subscriber, &topic).await;
            let channel = queue.connection.create_channel().await.expect("a channel");
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await
                .expect("confirms");
            let _feeder = Feeder::start(&feeder, &topic, &progress);
            raw(subscription, channel, &queue.name, &progress).await
        }
    };
    assert_eq!(queue.delete().await, messages, "every message in the queue");
    elapsed
}

/// Publishes the round's messages to a topic at QoS 1, paced by [`Progress::room`]; stops
/// when dropped.
struct Feeder {
    publishing: JoinHandle<()>,
    event_loop: JoinHandle<()>,
}

impl Feeder {
    fn start(client_id: &str, topic: &str, progress: &Arc<Progress>) -> Feeder {
        let broker = mqtt_broker();
        let options = MqttOptions::new(client_id, broker.host, broker.port);
        let (client, event_loop) = AsyncClient::new(options, WINDOW);
        let (topic, progress) = (topic.to_owned(), progress.clone());
        let publishing = tokio::spawn(async move {
            let payload = Bytes::from(vec![b'x'; PAYLOAD]);
            for _ in 0..progress.messages {
                progress.room().await;
                client
                    .publish(&topic, QoS::AtLeastOnce, false, payload.clone())
                    .await
                    .expect("the feeder's event loop runs");
            }
        });
        Feeder {
            publishing,
            event_loop: tokio::spawn(run(event_loop, |_| {})),
        }
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.publishing.abort();
        self.event_loop.abort();
    }
}

/// Polls `event_loop`, handing each incoming publish to `on_publish`, until the connection
/// is closed (after a DISCONNECT of ours) or lost.
async fn run(mut event_loop: EventLoop, mut on_publish: impl FnMut(Publish)) {
    loop {
        match event_loop.poll().await {
            Ok(Event::Incoming(Incoming::Publish(publish))) => on_publish(publish),
            Ok(Event::Outgoing(rumqttc::Outgoing::Disconnect)) => return,
            Ok(_) => {}
            Err(e) => {
                eprintln!("  mqtt connection lost: {e}");
                return;
            }
        }
    }
}

/// The baseline's subscription, with the session settings [`MqttSource`] uses: subscribed
/// (SUBACK received) on return.
async fn subscribe(client_id: &str, topic: &str) -> (AsyncClient, EventLoop) {
    let broker = mqtt_broker();
    let mut options = MqttOptions::new(client_id, broker.host, broker.port);
    options
        .set_clean_start(false)
        .set_manual_acks(true)
        .set_session_expiry_interval(Some(SESSION_EXPIRY.as_secs() as u32))
        .set_receive_maximum(Some(WINDOW as u16));
    let (client, mut event_loop) = AsyncClient::new(options, WINDOW + 16);
    client
        .subscribe(topic, QoS::AtLeastOnce)
        .await
        .expect("subscribing");
    loop {
        if let Event::Incoming(Incoming::SubAck(ack)) =
            event_loop.poll().await.expect("the MQTT broker connects")
        {
            assert!(
                matches!(
                    ack.return_codes.first(),
                    Some(SubscribeReasonCode::Success(_))
                ),
                "subscribed: {:?}",
                ack.return_codes
            );
            return (client, event_loop);
        }
    }
}

/// Each publish of `subscription` published to the queue `name` on `channel` (in confirm
/// mode), acknowledged once confirmed.
async fn raw(
    (client, event_loop): (AsyncClient, EventLoop),
    channel: lapin::Channel,
    name: &str,
    progress: &Arc<Progress>,
) -> Duration {
    let started = Instant::now();
    let on_publish = {
        let (client, name, progress) = (client.clone(), name.to_owned(), progress.clone());
        move |publish: Publish| {
            let (client, channel, name, progress) = (
                client.clone(),
                channel.clone(),
                name.clone(),
                progress.clone(),
            );
            tokio::spawn(async move {
                let options = BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                };
                let confirmation = channel
                    .basic_publish(
                        "".into(),
                        name.as_str().into(),
                        options,
                        &publish.payload,
                        BasicProperties::default().with_delivery_mode(2),
                    )
                    .await
                    .expect("published")
                    .await
                    .expect("confirmed");
                assert!(matches!(confirmation, Confirmation::Ack(None)), "routed");
                client.ack(&publish).await.expect("PUBACK queued");
                progress.through();
            });
        }
    };
    let mut event_loop = tokio::spawn(run(event_loop, on_publish));
    progress.all_through().await;
    let elapsed = started.elapsed();
    // The PUBACKs queued before the DISCONNECT go out first.
    let _ = client.disconnect().await;
    if tokio::time::timeout(Duration::from_secs(1), &mut event_loop)
        .await
        .is_err()
    {
        event_loop.abort();
    }
    elapsed
}
