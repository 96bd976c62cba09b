//! Channels kept in RabbitMQ and JetStream while a proxy the test controls cuts and stalls their
//! connections: nothing confirmed is lost. `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/proxy.rs"]
#[allow(dead_code)]
mod proxy;
#[path = "support/stores.rs"]
#[allow(dead_code)] // each test file uses some of them
mod stores;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use eip_adapters::store::{JetStream, RabbitMq};
use eip_core::channel::PointToPoint;
use eip_core::message::{Message, MessageId};
use eip_core::store::Backend;

use stores::*;

/// A sending process and a receiving one, each reaching the broker through a proxy the test
/// controls, while the proxies cut every connection of one side, then of the other, every 250
/// messages (and the receiving side stalls once): sends retry until confirmed, the receiving store reads again after each cut, and
/// nothing confirmed is lost (what a cut caught unacknowledged comes again: duplicates).
async fn cut_mid_stream(
    backend: impl Fn(&str) -> Arc<dyn Backend>,
    scheme: &str,
    port: u16,
    label: &str,
) {
    let upstream: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let (proxy_out, proxy_in) = (
        proxy::Proxy::start(upstream).await,
        proxy::Proxy::start(upstream).await,
    );
    let via = |proxy: &proxy::Proxy| backend(&format!("{scheme}{}", proxy.address()));
    let a = PointToPoint::builder("jobs")
        .store(via(&proxy_out))
        .build()
        .expect("the sending process's channel");
    let b = PointToPoint::builder("jobs")
        .capacity(64)
        .store(via(&proxy_in))
        .build()
        .expect("the receiving process's channel");
    const MESSAGES: usize = 2_000;
    let receiving = tokio::spawn(async move {
        let mut receiver = b.receiver();
        let mut got: HashMap<MessageId, usize> = HashMap::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let distinct = got.len();
            let wait = if distinct >= MESSAGES {
                Duration::from_secs(2)
            } else {
                Duration::from_secs(60)
            };
            match tokio::time::timeout_at(
                deadline.min(tokio::time::Instant::now() + wait),
                receiver.recv(),
            )
            .await
            {
                Ok(Some(delivery)) => {
                    *got.entry(delivery.message().id()).or_insert(0) += 1;
                    delivery.ack();
                }
                _ => break,
            }
        }
        got
    });
    let mut sent = Vec::with_capacity(MESSAGES);
    let mut cuts = 0;
    for i in 0..MESSAGES {
        if i > 0 && i % 250 == 0 {
            if (i / 250) % 2 == 0 {
                proxy_out.cut()
            } else {
                proxy_in.cut()
            }
            cuts += 1;
        }
        if i == MESSAGES / 2 + 100 {
            // The receiving side stalls a moment: bytes stop, connections stay open.
            proxy_in.stall(true);
            tokio::time::sleep(Duration::from_millis(1500)).await;
            proxy_in.stall(false);
        }
        let msg = Message::new(format!("job {i}"));
        sent.push(msg.id());
        a.send(msg)
            .await
            .expect("a send confirmed despite the cuts");
    }
    let got = receiving.await.expect("the receiving task");
    let lost = sent.iter().filter(|id| !got.contains_key(id)).count();
    let duplicates: usize = got.values().map(|n| n - 1).sum();
    println!(
        "{label}: {cuts} cuts, 1 stall, {MESSAGES} sent and confirmed, {} received, {lost} lost, {duplicates} duplicates, {} + {} connections made",
        got.len(),
        proxy_out.accepted(),
        proxy_in.accepted()
    );
    assert_eq!(lost, 0, "{label}: nothing confirmed is lost");
    assert!(
        proxy_out.accepted() >= 2 && proxy_in.accepted() >= 2,
        "{label}: both sides connected again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_channel_survives_cut_connections() {
    if !brokers("rabbitmq cuts").await {
        return;
    }
    let queue = unique("cuts");
    cut_mid_stream(
        |address| Arc::new(RabbitMq::queue(format!("{address}/%2f"), &queue)),
        "amqp://guest:guest@",
        5672,
        "rabbitmq channel, cut connections",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_channel_survives_cut_connections() {
    if !brokers("jetstream cuts").await {
        return;
    }
    let stream = unique("CUTS");
    cut_mid_stream(
        |address| {
            Arc::new(
                JetStream::queue(address, &stream)
                    .expect("a stream name")
                    .ack_wait(Duration::from_secs(5)),
            )
        },
        "nats://",
        4222,
        "jetstream channel, cut connections",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}
