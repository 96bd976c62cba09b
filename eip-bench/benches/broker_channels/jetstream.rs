//! `channel in jetstream`: a point-to-point channel kept in a fresh JetStream stream with
//! work-queue retention.
//!
//! eip: [`through_channel`] with a [`JetStream::queue`] store (publishes carrying the message's
//! envelope headers and `Nats-Msg-Id`, each awaiting JetStream's ack; the durable pull
//! consumer `eip` with explicit acks and `max_ack_pending` 256 on a connection of its own,
//! acked to JetStream as the channel's receiver acks). Baseline: async-nats alone, the same
//! stream and consumer settings, the same 64 tasks publishing with `Nats-Msg-Id` and awaiting
//! each ack, a second connection pulling (batches of 256) and acking each message as it comes
//! with the client's plain ack (flushed at the end). eip acks with the client's double ack,
//! which waits for JetStream's reply, from a task of its own, several at once: that reply, one
//! more message per message for the server to send and the client to match, is most of what
//! separates the two sides (with double acks in the baseline too the ratio comes out near 1).

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use eip_adapters::store::JetStream;
use eip_bench::{Side, numbered_payload};
use futures::StreamExt;

use crate::brokers::{nats_url, unique};
use crate::{CAPACITY, Tally, send_concurrently, through_channel, timed};

/// The consumer every process of an eip point-to-point channel reads through; the baseline's
/// too.
const CONSUMER: &str = "eip";
/// How long JetStream waits for an ack before delivering again: the store's default.
const ACK_WAIT: Duration = Duration::from_secs(30);
/// How often an idle pull consumer hears from the server: the store's default.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How long to wait, after a round, for JetStream to have let every acked message go (eip's
/// last acks may still be on their way when its round ends).
const EMPTYING: Duration = Duration::from_secs(5);

/// Runs `side` on a fresh stream, deleted after it, and returns the time it took.
pub async fn round(messages: usize, side: Side) -> Duration {
    let stream = format!("EIPBENCH_CHANNEL_{}", unique());
    let elapsed = match side {
        Side::Eip => {
            let store = JetStream::queue(nats_url(), stream.as_str()).expect("a stream name");
            through_channel(Arc::new(store), messages).await
        }
        Side::Raw => raw(&stream, messages).await,
    };
    let js = jetstream::new(
        async_nats::connect(nats_url())
            .await
            .expect("NATS connects"),
    );
    let held = emptied(&js, &stream).await;
    js.delete_stream(&stream).await.expect("the stream deleted");
    assert_eq!(
        held, 0,
        "every message acked and let go by the work-queue stream"
    );
    elapsed
}

/// How many messages `stream` still holds once it holds none, or [`EMPTYING`] passed.
async fn emptied(js: &jetstream::Context, stream: &str) -> u64 {
    let deadline = tokio::time::Instant::now() + EMPTYING;
    loop {
        let held = js
            .get_stream(stream)
            .await
            .expect("the stream")
            .info()
            .await
            .expect("its info")
            .state
            .messages;
        if held == 0 || tokio::time::Instant::now() >= deadline {
            return held;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn raw(name: &str, messages: usize) -> Duration {
    // The store's stream: work-queue retention, its subject, a duplicate window of 2 minutes.
    let subject = format!("eip.{name}");
    let publishing = jetstream::new(
        async_nats::connect(nats_url())
            .await
            .expect("NATS connects"),
    );
    publishing
        .create_stream(stream::Config {
            name: name.to_owned(),
            subjects: vec![subject.clone()],
            duplicate_window: Duration::from_secs(120),
            retention: stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .expect("the stream");
    let client = async_nats::connect(nats_url())
        .await
        .expect("NATS connects");
    let consuming = jetstream::new(client.clone());
    let mut pulled = consuming
        .get_stream(name)
        .await
        .expect("the stream")
        .create_consumer(consumer::pull::Config {
            durable_name: Some(CONSUMER.to_owned()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: ACK_WAIT,
            max_ack_pending: CAPACITY as i64,
            ..Default::default()
        })
        .await
        .expect("the consumer")
        .stream()
        .max_messages_per_batch(CAPACITY)
        .heartbeat(HEARTBEAT)
        .expires(HEARTBEAT * 6)
        .messages()
        .await
        .expect("pulling");
    let receiving = async move {
        let mut tally = Tally::new(messages);
        while !tally.complete() {
            let message = pulled
                .next()
                .await
                .expect("the consumer stays open")
                .expect("a message");
            tally.note(&message.payload);
            message.ack().await.expect("acked");
        }
        // A plain ack is only queued in the client: the last ones reach the server with this.
        client.flush().await.expect("the acks sent");
        tally.report("raw");
    };
    let sending = send_concurrently(messages, move |i| {
        let (js, subject) = (publishing.clone(), subject.clone());
        async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(
                "Nats-Msg-Id",
                eip_core::MessageId::new().to_string().as_str(),
            );
            js.publish_with_headers(subject, headers, numbered_payload(i).into())
                .await
                .expect("published")
                .await
                .expect("acked by JetStream");
        }
    });
    timed(receiving, sending).await
}
