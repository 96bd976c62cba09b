//! A channel's own rules on channels kept in RabbitMQ and JetStream: datatype, expiration,
//! redelivery and rejection keep their meaning. `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/stores.rs"]
#[allow(dead_code)] // each test file uses some of them
mod stores;

use std::sync::Arc;
use std::time::Duration;

use eip_adapters::store::{JetStream, RabbitMq};
use eip_core::channel::{PointToPoint, Receiver};
use eip_core::message::Message;
use eip_core::store::Backend;

use stores::*;

/// A channel's own rules hold on a channel kept in a broker: a message that does not fit its
/// datatype goes to the invalid message channel and never to the broker, and one that expires
/// while queued is dead-lettered (reason `expired`) when it comes out, not dropped by the
/// broker.
async fn rules_hold(backend: Arc<dyn Backend>, label: &str) {
    use eip_core::channel::{DeadLetterChannel, InvalidMessageChannel, JsonSchema};
    use eip_core::message::DeathReason;
    let dead = PointToPoint::new("dead", 16).expect("a dead letter channel");
    let invalid = PointToPoint::new("invalid", 16).expect("an invalid message channel");
    let schema = serde_json::json!({"type": "object", "required": ["n"]});
    let channel = PointToPoint::builder("jobs")
        .store(backend)
        .time_to_live(Duration::from_millis(500))
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .datatype(
            JsonSchema::new("job", &schema).expect("a schema"),
            InvalidMessageChannel::from(invalid.clone()),
        )
        .build()
        .expect("a channel kept in a broker");
    let outcome = channel
        .send(Message::new("{\"m\": 1}"))
        .await
        .expect("a send");
    assert!(
        matches!(outcome, eip_core::channel::Outcome::Invalid { .. }),
        "{label}: {outcome:?}"
    );
    let mut expiring = Vec::new();
    for n in 0..3 {
        let msg = Message::new(format!("{{\"n\": {n}}}"));
        expiring.push(msg.id());
        channel.send(msg).await.expect("a send confirmed");
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let fresh = Message::builder("{\"n\": 9}")
        .time_to_live(Duration::from_secs(600))
        .build();
    let fresh_id = fresh.id();
    channel.send(fresh).await.expect("a send confirmed");
    let delivery = tokio::time::timeout(Duration::from_secs(10), channel.receiver().recv())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(
        delivery.message().id(),
        fresh_id,
        "{label}: only the fresh one is delivered"
    );
    delivery.ack();
    let mut died = Vec::new();
    let mut dead_receiver = dead.receiver();
    for _ in 0..3 {
        let delivery = tokio::time::timeout(Duration::from_secs(5), dead_receiver.recv())
            .await
            .expect("a dead letter within 5 s")
            .expect("a dead letter");
        let death = delivery
            .message()
            .death()
            .ok()
            .flatten()
            .expect("a death record");
        assert_eq!(death.reason, DeathReason::Expired, "{label}");
        assert_eq!(death.channel, "jobs");
        died.push(delivery.message().id());
        delivery.ack();
    }
    died.sort();
    expiring.sort();
    assert_eq!(
        died, expiring,
        "{label}: each expired message dead-lettered"
    );
    assert_eq!(invalid.stats().accepted, 1, "{label}: the invalid one");
    println!("{label}: 1 invalid diverted, 3 expired dead-lettered, 1 delivered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_channel_rules_hold() {
    if !brokers("rabbitmq rules").await {
        return;
    }
    let queue = unique("rules");
    rules_hold(
        Arc::new(RabbitMq::queue(RABBITMQ, &queue)),
        "rabbitmq rules",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_channel_rules_hold() {
    if !brokers("jetstream rules").await {
        return;
    }
    let stream = unique("RULES");
    rules_hold(
        Arc::new(JetStream::queue(NATS, &stream).expect("a stream name")),
        "jetstream rules",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}

/// The next delivery on `receiver`, within 10 s.
async fn next(receiver: &mut Receiver) -> eip_core::channel::Delivery {
    tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery")
}

/// A nack on a channel kept in a broker redelivers in the process with the count raised; a
/// rejected message goes to the dead letter channel and is acknowledged to the broker (a
/// process that comes later does not get it again).
async fn redelivered_then_rejected(backend: impl Fn() -> Arc<dyn Backend>, label: &str) {
    use eip_core::channel::DeadLetterChannel;
    use eip_core::message::DeathReason;
    let dead = PointToPoint::new("dead", 16).expect("a dead letter channel");
    let a = PointToPoint::builder("jobs")
        .store(backend())
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .build()
        .expect("process a's channel");
    let msg = Message::new("job");
    let id = msg.id();
    a.send(msg).await.expect("a send confirmed");
    let mut receiver = a.receiver();
    let first = next(&mut receiver).await;
    assert_eq!(first.message().redelivery_count().ok(), Some(0), "{label}");
    first.nack();
    let again = next(&mut receiver).await;
    assert_eq!(again.message().id(), id);
    assert_eq!(
        again.message().redelivery_count().ok(),
        Some(1),
        "{label}: counted"
    );
    again.reject("not today").await;
    let dead_letter = tokio::time::timeout(Duration::from_secs(5), dead.receiver().recv())
        .await
        .expect("a dead letter within 5 s")
        .expect("a dead letter");
    let death = dead_letter
        .message()
        .death()
        .ok()
        .flatten()
        .expect("a death record");
    assert_eq!(
        (death.reason, death.error.as_deref()),
        (DeathReason::Rejected, Some("not today"))
    );
    dead_letter.ack();
    // Give the acknowledgement a moment, then let process a go: its connection closes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(receiver);
    drop(a);
    let b = PointToPoint::builder("jobs")
        .store(backend())
        .build()
        .expect("process b's channel");
    let later = tokio::time::timeout(Duration::from_secs(3), b.receiver().recv()).await;
    assert!(
        later.is_err(),
        "{label}: the rejected message was acknowledged to the broker"
    );
    println!(
        "{label}: nacked once, redelivered with count 1, rejected to the dead letters, acknowledged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_redelivery_and_rejection_keep_their_meaning() {
    if !brokers("rabbitmq redelivery").await {
        return;
    }
    let queue = unique("redelivery");
    redelivered_then_rejected(
        || Arc::new(RabbitMq::queue(RABBITMQ, &queue)),
        "rabbitmq redelivery",
    )
    .await;
    clean_up(&[queue], None, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_redelivery_and_rejection_keep_their_meaning() {
    if !brokers("jetstream redelivery").await {
        return;
    }
    let stream = unique("REDELIVERY");
    redelivered_then_rejected(
        || {
            Arc::new(
                JetStream::queue(NATS, &stream)
                    .expect("a stream name")
                    .ack_wait(Duration::from_secs(2)),
            )
        },
        "jetstream redelivery",
    )
    .await;
    clean_up(&[], None, Some(&stream)).await;
}
