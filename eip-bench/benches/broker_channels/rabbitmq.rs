//! `channel in rabbitmq`: a point-to-point channel kept in a fresh durable RabbitMQ queue.
//!
//! eip: [`through_channel`] with a [`RabbitMq::queue`] store (persistent publishes with the
//! message's id and headers, publisher confirms; a consumer with prefetch 256 on a connection
//! of its own, acked to RabbitMQ as the channel's receiver acks). Baseline: lapin alone, the
//! same 64 tasks publishing persistent messages with a message id on one channel in confirm
//! mode, each awaiting its confirm; a second connection consuming the queue with prefetch
//! 256 and acking each delivery as it comes, on a task of its own.

use std::sync::Arc;
use std::time::Duration;

use eip_adapters::store::RabbitMq;
use eip_bench::{Side, numbered_payload};
use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

use crate::brokers::{RabbitQueue, amqp_url, unique};
use crate::{CAPACITY, Tally, send_concurrently, through_channel, timed};

/// Runs `side` on a fresh queue, deleted after it, and returns the time it took.
pub async fn round(messages: usize, side: Side) -> Duration {
    let queue = RabbitQueue::declare(format!("eip-bench-channel-{}", unique())).await;
    let elapsed = match side {
        Side::Eip => {
            let store = RabbitMq::queue(amqp_url(), queue.name.as_str());
            through_channel(Arc::new(store), messages).await
        }
        Side::Raw => raw(&queue, messages).await,
    };
    assert_eq!(
        queue.delete().await,
        0,
        "every message taken from the queue"
    );
    elapsed
}

async fn raw(queue: &RabbitQueue, messages: usize) -> Duration {
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("RabbitMQ connects");
    let consuming = connection.create_channel().await.expect("a channel");
    consuming
        .basic_qos(CAPACITY as u16, BasicQosOptions::default())
        .await
        .expect("prefetch");
    let mut consumer = consuming
        .basic_consume(
            queue.name.as_str().into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consuming");
    let receiving = async move {
        let mut tally = Tally::new(messages);
        let mut acks = Vec::with_capacity(messages);
        while !tally.complete() {
            let delivery = consumer
                .next()
                .await
                .expect("the consumer stays open")
                .expect("a delivery");
            tally.note(&delivery.data);
            // Not awaited here: lapin's ack completes once its frame is written, and a loop
            // waiting for each in turn reads no faster than that (eip acks from a task of
            // its own, several at once).
            acks.push(tokio::spawn(async move {
                delivery
                    .acker
                    .ack(BasicAckOptions::default())
                    .await
                    .expect("acked");
            }));
        }
        for ack in acks {
            ack.await.expect("an ack");
        }
        tally.report("raw");
    };
    // `queue.channel` is in confirm mode.
    let (publishing, name) = (queue.channel.clone(), queue.name.clone());
    let sending = send_concurrently(messages, move |i| {
        let (channel, name) = (publishing.clone(), name.clone());
        async move {
            let props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_message_id(eip_core::MessageId::new().to_string().into());
            let confirm = channel
                .basic_publish(
                    "".into(),
                    name.as_str().into(),
                    BasicPublishOptions::default(),
                    &numbered_payload(i),
                    props,
                )
                .await
                .expect("published");
            assert!(confirm.await.expect("confirmed").is_ack(), "confirmed");
        }
    });
    let elapsed = timed(receiving, sending).await;
    let _ = connection.close(200, "done".into()).await;
    elapsed
}
