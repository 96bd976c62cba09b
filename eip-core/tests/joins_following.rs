//! Joins followed from the channel's log: the joins a publish follows are read with its append
//! (one lock), whichever way the publish stores: at once, after waiting for room, or through
//! the general path a wildcard subscription on the source puts it on. The loop memory is
//! consulted with the append too: a duplicate is refused at once, room or not.

use std::time::Duration;

use eip_core::channel::{Outcome, PublishSubscribe, Subscriber};
use eip_core::join::Join;
use eip_core::{Message, MessageBus};

/// The messages `subscriber` has waiting, acked.
fn take(subscriber: &mut Subscriber) -> Vec<bytes::Bytes> {
    std::iter::from_fn(|| subscriber.try_recv().ok())
        .map(|d| {
            let payload = d.message().payload().clone();
            d.ack();
            payload
        })
        .collect()
}

/// A channel of capacity 1 with a subscriber, joined on to one with a subscriber: the source,
/// its subscriber and the far one's.
fn full_source_joined_on() -> (PublishSubscribe, Subscriber, Subscriber) {
    let source = PublishSubscribe::new("full", 1).unwrap();
    let slow = source.subscribe();
    let far = PublishSubscribe::new("far", 10).unwrap();
    let far_subscriber = far.subscribe();
    Join::builder(source.clone(), far.clone()).create().unwrap();
    (source, slow, far_subscriber)
}

#[tokio::test]
async fn a_publish_that_waits_for_room_follows_the_joins_once_stored() {
    let (source, mut slow, mut far_subscriber) = full_source_joined_on();
    source.publish(Message::new("1")).await.unwrap();
    let waiting = tokio::spawn({
        let source = source.clone();
        async move { source.publish(Message::new("2")).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "the subscription is full");
    assert_eq!(
        take(&mut far_subscriber),
        ["1"],
        "only the first crossed so far"
    );
    slow.recv().await.unwrap().ack();
    waiting.await.unwrap().unwrap();
    assert_eq!(
        take(&mut far_subscriber),
        ["2"],
        "the second crossed once it was stored"
    );
}

#[tokio::test]
async fn joins_are_followed_with_and_without_a_wildcard_subscription_on_the_source() {
    let bus = MessageBus::new();
    bus.create_publish_subscribe("orders.eu").unwrap();
    bus.create_publish_subscribe("audit").unwrap();
    let mut audit = bus.publish_subscribe("audit").unwrap().subscribe();
    bus.join("orders.eu", "audit").unwrap().create().unwrap();
    bus.send("orders.eu", Message::new("before")).await.unwrap();
    // A wildcard subscription on the source makes a publish push to a queue of its own too.
    let mut all = bus.subscribe("orders.*").unwrap();
    bus.send("orders.eu", Message::new("with")).await.unwrap();
    assert_eq!(all.try_recv().unwrap().message().payload(), "with");
    drop(all);
    bus.send("orders.eu", Message::new("after")).await.unwrap();
    assert_eq!(take(&mut audit), ["before", "with", "after"]);
}

#[tokio::test]
async fn a_duplicate_is_refused_at_once_when_the_channel_is_full_and_stored_after_none() {
    let (source, mut slow, mut far_subscriber) = full_source_joined_on();
    let msg = Message::new("1");
    assert_eq!(
        source.publish(msg.clone()).await.unwrap(),
        Outcome::Accepted
    );
    // Full now: a new id waits, the same id is refused without waiting
    let again = tokio::time::timeout(Duration::from_secs(5), source.publish(msg.clone())).await;
    assert_eq!(again.expect("refused at once").unwrap(), Outcome::Duplicate);
    assert_eq!(source.stats().duplicates, 1);
    // With room again, still a duplicate; a new id is stored and crosses
    slow.recv().await.unwrap().ack();
    assert_eq!(source.publish(msg).await.unwrap(), Outcome::Duplicate);
    assert_eq!(
        source.publish(Message::new("2")).await.unwrap(),
        Outcome::Accepted
    );
    assert_eq!(source.stats().duplicates, 2);
    assert_eq!(take(&mut far_subscriber), ["1", "2"]);
    assert_eq!(take(&mut slow), ["2"]);
}
