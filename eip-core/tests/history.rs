//! Message History through channels and joins: every channel that records history and stores
//! the message adds itself, in the order the message went; one that does not record adds
//! nothing; a copy refused as a duplicate records nothing.

use eip_core::channel::{PointToPoint, PublishSubscribe};
use eip_core::join::Join;
use eip_core::message::{HistoryKind, Message};

fn channels_of(msg: &Message) -> Vec<String> {
    let history = msg.history().unwrap();
    assert!(history.iter().all(|e| e.kind == HistoryKind::Channel));
    history.into_iter().map(|e| e.name).collect()
}

#[tokio::test]
async fn a_message_records_the_channels_it_was_stored_on_in_order() {
    let orders = PublishSubscribe::builder("orders")
        .history(true)
        .build()
        .unwrap();
    let eu = PublishSubscribe::builder("orders.eu")
        .history(true)
        .build()
        .unwrap();
    let quiet = PublishSubscribe::builder("orders.eu.quiet")
        .build()
        .unwrap();
    let nl = PointToPoint::builder("orders.nl")
        .history(true)
        .build()
        .unwrap();
    Join::builder(orders.clone(), eu.clone()).create().unwrap();
    Join::builder(eu.clone(), quiet.clone()).create().unwrap();
    Join::builder(quiet.clone(), nl.clone()).create().unwrap();
    let mut at_orders = orders.subscribe();

    orders
        .publish(Message::new(r#"{"to": "nl"}"#))
        .await
        .unwrap();

    let delivery = nl.receiver().recv().await.unwrap();
    assert_eq!(
        channels_of(delivery.message()),
        ["orders", "orders.eu", "orders.nl"],
        "orders.eu.quiet does not record history"
    );
    delivery.ack();
    let first = at_orders.recv().await.unwrap();
    assert_eq!(
        channels_of(first.message()),
        ["orders"],
        "each copy goes on on its own"
    );
    first.ack();
}

#[tokio::test]
async fn a_copy_refused_as_a_loop_records_nothing_and_times_rise() {
    let a = PublishSubscribe::builder("a")
        .history(true)
        .build()
        .unwrap();
    let b = PublishSubscribe::builder("b")
        .history(true)
        .build()
        .unwrap();
    Join::builder(a.clone(), b.clone()).create().unwrap();
    Join::builder(b.clone(), a.clone()).create().unwrap();
    let mut at_b = b.subscribe();
    let mut at_a = a.subscribe();

    a.publish(Message::new("x")).await.unwrap();

    let copy = at_b.recv().await.unwrap();
    let history = copy.message().history().unwrap();
    assert_eq!(channels_of(copy.message()), ["a", "b"]);
    assert!(history[0].at <= history[1].at);
    copy.ack();
    let original = at_a.recv().await.unwrap();
    assert_eq!(channels_of(original.message()), ["a"]);
    original.ack();
    assert!(
        at_a.try_recv().is_err(),
        "loop detection kept a from storing it twice"
    );
}

#[tokio::test]
async fn a_channel_without_history_leaves_the_header_alone() {
    let plain = PointToPoint::builder("plain").build().unwrap();
    plain.send(Message::new("x")).await.unwrap();
    let delivery = plain.receiver().recv().await.unwrap();
    assert!(delivery.message().history().unwrap().is_empty());
    assert!(delivery.message().headers().is_empty());
    delivery.ack();
}
