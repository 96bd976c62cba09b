//! Joins followed from the channel's log: the joins a publish follows are read with its append
//! (one lock), whichever way the publish stores: at once, after waiting for room, or through
//! the general path a wildcard subscription on the source puts it on.

use eip_core::channel::{PublishSubscribe, Subscriber};
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

#[tokio::test]
async fn a_publish_that_waits_for_room_follows_the_joins_once_stored() {
    let source = PublishSubscribe::new("full", 1).unwrap();
    let mut slow = source.subscribe();
    let far = PublishSubscribe::new("far", 10).unwrap();
    let mut far_subscriber = far.subscribe();
    Join::builder(source.clone(), far.clone()).create().unwrap();
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
