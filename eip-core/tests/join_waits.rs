//! A publish through joins when a store along the way has to wait: the walk stores at once
//! where there is room and carries on from the store that waits, losing and repeating nothing.

use std::time::Duration;

use eip_core::channel::{
    InvalidMessageChannel, JsonSchema, PointToPoint, PublishSubscribe, Subscriber,
};
use eip_core::join::Join;
use eip_core::{Message, Outcome};

/// What `subscriber` holds now, as payloads, acked.
fn drain(subscriber: &mut Subscriber) -> Vec<String> {
    std::iter::from_fn(|| subscriber.try_recv().ok())
        .map(|d| {
            let text = d.message().payload_str().unwrap_or_default().to_owned();
            d.ack();
            text
        })
        .collect()
}

/// A publish of `payload` to `channel` on a task of its own, to see whether it waits.
fn publish_on_a_task(
    channel: &PublishSubscribe,
    payload: &'static str,
) -> tokio::task::JoinHandle<Result<Outcome, eip_core::channel::SendError>> {
    let channel = channel.clone();
    tokio::spawn(async move { channel.publish(Message::new(payload)).await })
}

#[tokio::test]
async fn a_full_channel_in_a_chain_holds_the_publish_until_it_has_room() {
    let a = PublishSubscribe::new("a", 10).unwrap();
    let b = PublishSubscribe::new("b", 1).unwrap();
    let c = PublishSubscribe::new("c", 10).unwrap();
    let (mut at_a, mut at_b, mut at_c) = (a.subscribe(), b.subscribe(), c.subscribe());
    Join::builder(a.clone(), b.clone()).create().unwrap();
    Join::builder(b.clone(), c.clone()).create().unwrap();

    assert_eq!(
        a.publish(Message::new("one")).await.unwrap(),
        Outcome::Accepted
    );
    // `b` holds one message, its capacity: the second publish stores on `a`, then waits at `b`.
    let publish = publish_on_a_task(&a, "two");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!publish.is_finished(), "the publish waits for room on b");
    assert_eq!(drain(&mut at_a), ["one", "two"]);
    assert_eq!(
        drain(&mut at_c),
        ["one"],
        "nothing reached c past the full b"
    );

    assert_eq!(drain(&mut at_b), ["one"]);
    let outcome = tokio::time::timeout(Duration::from_secs(5), publish)
        .await
        .expect("the publish completes once b has room")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Outcome::Accepted);
    assert_eq!(drain(&mut at_b), ["two"]);
    assert_eq!(drain(&mut at_c), ["two"], "the walk carried on from b to c");
}

#[tokio::test]
async fn a_full_queue_behind_an_archival_join_holds_the_publish_until_it_has_room() {
    let a = PublishSubscribe::new("a", 10).unwrap();
    let audit = PointToPoint::new("audit", 1).unwrap();
    let b = PublishSubscribe::new("b", 10).unwrap();
    let mut at_b = b.subscribe();
    let mut receiver = audit.receiver();
    Join::builder(a.clone(), audit.clone())
        .archival(true)
        .create()
        .unwrap();
    Join::builder(a.clone(), b.clone()).create().unwrap();

    a.publish(Message::new("one")).await.unwrap();
    let publish = publish_on_a_task(&a, "two");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !publish.is_finished(),
        "the publish waits for room in the queue"
    );
    // The joins are followed in order: `b` comes after the queue, so it has only the first.
    assert_eq!(drain(&mut at_b), ["one"]);

    let first = receiver.recv().await.unwrap();
    assert_eq!(first.message().payload().as_ref(), b"one");
    first.ack();
    tokio::time::timeout(Duration::from_secs(5), publish)
        .await
        .expect("the publish completes once the queue has room")
        .unwrap()
        .unwrap();
    let second = receiver.recv().await.unwrap();
    assert_eq!(second.message().payload().as_ref(), b"two");
    second.ack();
    assert_eq!(drain(&mut at_b), ["two"]);
}

#[tokio::test]
async fn a_misfit_at_a_join_destination_goes_to_its_invalid_message_channel_and_stops_there() {
    let a = PublishSubscribe::new("a", 10).unwrap();
    let invalid = InvalidMessageChannel::new("invalid", 10).unwrap();
    let typed = PublishSubscribe::builder("typed")
        .capacity(10)
        .datatype(
            JsonSchema::new("object", &serde_json::json!({"type": "object"})).unwrap(),
            invalid.clone(),
        )
        .build()
        .unwrap();
    let after = PublishSubscribe::new("after", 10).unwrap();
    let (mut at_typed, mut at_after) = (typed.subscribe(), after.subscribe());
    let mut misfits = invalid.receiver();
    Join::builder(a.clone(), typed.clone()).create().unwrap();
    Join::builder(typed.clone(), after.clone())
        .create()
        .unwrap();

    // The publish itself is accepted: `a` stored it; the join's destination diverted it.
    assert_eq!(
        a.publish(Message::new("not json")).await.unwrap(),
        Outcome::Accepted
    );
    let misfit = tokio::time::timeout(Duration::from_secs(5), misfits.recv())
        .await
        .expect("diverted")
        .unwrap();
    assert_eq!(misfit.message().payload().as_ref(), b"not json");
    misfit.ack();
    assert!(drain(&mut at_typed).is_empty());
    assert!(
        drain(&mut at_after).is_empty(),
        "a misfit crosses no further"
    );

    a.publish(Message::new(r#"{"ok": true}"#)).await.unwrap();
    assert_eq!(drain(&mut at_typed), [r#"{"ok": true}"#]);
    assert_eq!(drain(&mut at_after), [r#"{"ok": true}"#]);
}
