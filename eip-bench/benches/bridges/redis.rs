//! `bridge redis->jetstream`: a Redis stream preloaded with entries of 1 KiB (an `eip-id` field
//! and the payload, not timed) drained through a consumer group into a JetStream stream.
//!
//! eip: a [`RedisStreamSource`] through [`drain_with_bridge`] into a [`JetStreamOutbound`].
//! Baseline: `XREADGROUP` of up to 256 entries at a time and, for each, a JetStream publish
//! (with `Nats-Msg-Id`) whose ack is awaited before the entry is `XACK`ed, at most 256 at once.
//!
//! [`JetStreamOutbound`]: eip_adapters::nats::JetStreamOutbound

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::AsyncCommands;
use ::redis::streams::{StreamReadOptions, StreamReadReply};
use eip_adapters::redis::{RedisStreamSource, RedisStreamSourceConfig};
use tokio::sync::Semaphore;

use crate::brokers::{JetStreamTarget, redis_url, unique};
use crate::{PAYLOAD, Progress, Side, WINDOW, drain_with_bridge};

/// Preloads a fresh Redis stream, drains it into a fresh JetStream stream with `side`, and
/// returns the time the draining took.
pub async fn round(messages: usize, side: Side) -> Duration {
    let tag = unique();
    let key = format!("eipbench:{tag}");
    let client = ::redis::Client::open(redis_url()).expect("a Redis URL");
    let mut redis = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis connects");
    let payload = vec![b'x'; PAYLOAD];
    let mut pipe = ::redis::pipe();
    for _ in 0..messages {
        pipe.xadd(
            &key,
            "*",
            &[
                (
                    "eip-id",
                    eip_core::MessageId::new().to_string().into_bytes(),
                ),
                ("payload", payload.clone()),
            ],
        )
        .ignore();
    }
    let () = pipe.query_async(&mut redis).await.expect("preloaded");
    let () = redis
        .xgroup_create_mkstream(&key, "bench", "0")
        .await
        .expect("the group");
    let target = JetStreamTarget::create(&format!("R{tag}")).await;
    let progress = Progress::new(messages, 0);
    let elapsed = match side {
        Side::Eip => {
            let source = RedisStreamSource::new(RedisStreamSourceConfig::new(
                redis_url(),
                key.clone(),
                "bench",
                "eip",
            ))
            .expect("the source config");
            drain_with_bridge(source, target.outbound().await, &progress).await
        }
        Side::Raw => raw(&redis, &target, &key, &progress).await,
    };
    assert_eq!(
        target.delete().await,
        messages,
        "every message in the stream"
    );
    let _: Result<(), _> = redis.del(&key).await;
    elapsed
}

async fn raw(
    redis: &::redis::aio::MultiplexedConnection,
    target: &JetStreamTarget,
    key: &str,
    progress: &Arc<Progress>,
) -> Duration {
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(WINDOW));
    let mut reader = redis.clone();
    let mut taken = 0;
    while taken < progress.messages {
        let room = permits.available_permits().max(1);
        let options = StreamReadOptions::default()
            .group("bench", "raw")
            .count(room)
            .block(1000);
        let reply: Option<StreamReadReply> = reader
            .xread_options(&[key], &[">"], &options)
            .await
            .expect("XREADGROUP");
        for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
            taken += 1;
            let permit = permits.clone().acquire_owned().await.expect("open");
            let (js, subject, progress) =
                (target.js.clone(), target.subject.clone(), progress.clone());
            let mut acker = redis.clone();
            let key = key.to_owned();
            tokio::spawn(async move {
                let bytes = |name: &str| match entry.map.get(name) {
                    Some(::redis::Value::BulkString(b)) => b.clone(),
                    _ => Vec::new(),
                };
                let mut headers = async_nats::HeaderMap::new();
                headers.insert(
                    "Nats-Msg-Id",
                    String::from_utf8_lossy(&bytes("eip-id")).as_ref(),
                );
                js.publish_with_headers(subject, headers, bytes("payload").into())
                    .await
                    .expect("published")
                    .await
                    .expect("acked by JetStream");
                let _: usize = acker.xack(&key, "bench", &[&entry.id]).await.expect("XACK");
                progress.through();
                drop(permit);
            });
        }
    }
    progress.all_through().await;
    started.elapsed()
}
