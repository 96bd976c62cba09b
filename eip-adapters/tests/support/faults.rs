//! What the bridges' broker tests share: taking messages off a channel, and the fault run that
//! pushes messages through a bridge out and a bridge in while a proxy on each side cuts and
//! stalls their connections.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::{PointToPoint, RedeliveryPolicy};
use eip_core::message::{Message, MessageId};

use crate::proxy::Proxy;

/// Takes `n` messages from `channel` within `limit`, acking each; fails when fewer came.
pub async fn take(channel: &PointToPoint, n: usize, limit: Duration) -> Vec<Message> {
    let mut receiver = channel.receiver();
    let mut got = Vec::with_capacity(n);
    let deadline = tokio::time::Instant::now() + limit;
    while got.len() < n {
        match tokio::time::timeout_at(deadline, receiver.recv()).await {
            Ok(Some(delivery)) => {
                got.push(delivery.message().clone());
                delivery.ack();
            }
            Ok(None) => break,
            Err(_) => panic!("{} of {n} messages within {limit:?}", got.len()),
        }
    }
    got
}

/// The channel an outbound bridge's consumer reads in a fault run: room for every message,
/// and retries enough to outlast every cut and stall.
pub fn patient_outbox() -> PointToPoint {
    PointToPoint::builder("outbox")
        .capacity(10_000)
        .redelivery(RedeliveryPolicy {
            max_attempts: 1_000,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            ..RedeliveryPolicy::default()
        })
        .build()
        .expect("the outbox builds")
}

/// Sends `messages` to `outbox` (an outbound bridge's consumer reads it, through `proxies.0`)
/// and counts what arrives on `inbox` (fed by an inbound bridge through `proxies.1`), while
/// one side's connections, then the other's, are cut every 400 messages and both stall for
/// 1.5 s halfway. After the last expected message it keeps counting for `late` (duplicates
/// still on their way). Prints the counts under `label`; fails if a message was lost or a
/// side never reconnected.
pub async fn cut_and_stall(
    label: &str,
    outbox: &PointToPoint,
    inbox: &PointToPoint,
    proxies: Arc<(Proxy, Proxy)>,
    messages: usize,
    late: Duration,
) {
    let mut ids = HashSet::new();
    let mut received: HashMap<MessageId, usize> = HashMap::new();
    let mut receiver = inbox.receiver();
    let mut cuts = 0;
    let (proxy_out, proxy_in) = (&proxies.0, &proxies.1);
    for i in 0..messages {
        if i == messages / 2 {
            // Both sides stall for a second and a half: confirms and answers stop coming,
            // each side gives its connection up and makes another once bytes flow again.
            proxy_out.stall(true);
            proxy_in.stall(true);
            let proxies = proxies.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                proxies.0.stall(false);
                proxies.1.stall(false);
            });
        }
        let msg = Message::new(format!("{i}").into_bytes());
        ids.insert(msg.id());
        outbox.send(msg).await.expect("the outbox takes it");
        if i % 400 == 200 {
            if cuts % 2 == 0 {
                proxy_out.cut();
            } else {
                proxy_in.cut();
            }
            cuts += 1;
        }
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while let Ok(Some(delivery)) =
            tokio::time::timeout(Duration::from_millis(0), receiver.recv()).await
        {
            *received.entry(delivery.message().id()).or_default() += 1;
            delivery.ack();
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while received.len() < messages {
        match tokio::time::timeout_at(deadline, receiver.recv()).await {
            Ok(Some(delivery)) => {
                *received.entry(delivery.message().id()).or_default() += 1;
                delivery.ack();
            }
            _ => break,
        }
    }
    while let Ok(Some(delivery)) = tokio::time::timeout(late, receiver.recv()).await {
        *received.entry(delivery.message().id()).or_default() += 1;
        delivery.ack();
    }
    let lost = ids.iter().filter(|id| !received.contains_key(id)).count();
    let duplicates: usize = received.values().map(|n| n - 1).sum();
    println!(
        "{label} cut and stalled connections: {cuts} cuts, 1 stall, {messages} sent, {} received, {lost} lost, {duplicates} duplicates, {} + {} connections made",
        received.len(),
        proxy_out.accepted(),
        proxy_in.accepted()
    );
    assert_eq!(lost, 0, "{label}: messages lost");
    assert!(
        proxy_out.accepted() >= 2 && proxy_in.accepted() >= 2,
        "{label}: both sides reconnected"
    );
}
