//! `bridge rabbitmq->jetstream`: a RabbitMQ queue preloaded with messages of 1 KiB (published
//! persistent with confirms, not timed) drained into a JetStream stream.
//!
//! eip: an [`AmqpSource`] through [`drain_with_bridge`] into a [`JetStreamOutbound`]
//! (`Nats-Msg-Id` set from the message id). Baseline: one lapin consumer with prefetch 256 and,
//! for each delivery, a JetStream publish (with `Nats-Msg-Id` from the AMQP message id, as eip
//! sets it) whose ack is awaited before the delivery is acked, at most 256 at once. Both end
//! when every message is in the stream (counted by acks).
//!
//! [`JetStreamOutbound`]: eip_adapters::nats::JetStreamOutbound

use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_adapters::amqp::{AmqpSource, AmqpSourceConfig};
use futures::StreamExt;
use lapin::BasicProperties;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions};
use lapin::types::FieldTable;
use tokio::sync::Semaphore;

use crate::brokers::{JetStreamTarget, RabbitQueue, amqp_url, unique};
use crate::{PAYLOAD, Progress, Side, WINDOW, drain_with_bridge};

/// Preloads a fresh queue, drains it into a fresh stream with `side`, and returns the time the
/// draining took.
pub async fn round(messages: usize, side: Side) -> Duration {
    let tag = unique();
    let queue = RabbitQueue::declare(format!("eip-bench-bridge-{tag}")).await;
    preload(&queue, messages).await;
    let target = JetStreamTarget::create(&tag).await;
    let progress = Progress::new(messages, 0);
    let elapsed = match side {
        Side::Eip => {
            let source = AmqpSource::new(AmqpSourceConfig::new(amqp_url(), &queue.name));
            drain_with_bridge(source, target.outbound().await, &progress).await
        }
        Side::Raw => raw(&queue, &target, &progress).await,
    };
    assert_eq!(
        target.delete().await,
        messages,
        "every message in the stream"
    );
    queue.delete().await;
    elapsed
}

/// Publishes `messages` persistent messages, each with a fresh message id, and waits for
/// their confirms.
async fn preload(queue: &RabbitQueue, messages: usize) {
    let payload = vec![b'x'; PAYLOAD];
    let mut confirms = Vec::with_capacity(messages);
    for _ in 0..messages {
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(eip_core::MessageId::new().to_string().into());
        confirms.push(
            queue
                .channel
                .basic_publish(
                    "".into(),
                    queue.name.as_str().into(),
                    BasicPublishOptions::default(),
                    &payload,
                    props,
                )
                .await
                .expect("published"),
        );
    }
    for confirm in confirms {
        assert!(confirm.await.expect("confirmed").is_ack());
    }
}

async fn raw(queue: &RabbitQueue, target: &JetStreamTarget, progress: &Arc<Progress>) -> Duration {
    let channel = queue.connection.create_channel().await.expect("a channel");
    channel
        .basic_qos(WINDOW as u16, BasicQosOptions::default())
        .await
        .expect("prefetch");
    let started = Instant::now();
    let mut consumer = channel
        .basic_consume(
            queue.name.as_str().into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consuming");
    let permits = Arc::new(Semaphore::new(WINDOW));
    for _ in 0..progress.messages {
        let delivery = consumer
            .next()
            .await
            .expect("the consumer stays open")
            .expect("a delivery");
        let permit = permits.clone().acquire_owned().await.expect("open");
        let (js, subject, progress) = (target.js.clone(), target.subject.clone(), progress.clone());
        tokio::spawn(async move {
            let mut headers = async_nats::HeaderMap::new();
            if let Some(id) = delivery.properties.message_id() {
                headers.insert("Nats-Msg-Id", id.as_str());
            }
            js.publish_with_headers(subject, headers, delivery.data.clone().into())
                .await
                .expect("published")
                .await
                .expect("acked by JetStream");
            delivery
                .acker
                .ack(BasicAckOptions::default())
                .await
                .expect("acked to RabbitMQ");
            progress.through();
            drop(permit);
        });
    }
    progress.all_through().await;
    let elapsed = started.elapsed();
    let _ = channel.close(200, "done".into()).await;
    elapsed
}
