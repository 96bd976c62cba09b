//! Message Expiration on channels: expired messages are dead-lettered, never delivered; a
//! channel's time-to-live; the check made when a message would be delivered.

use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{
    Channel, DeadLetterChannel, Delivery, PointToPoint, PublishSubscribe, Receiver, TryRecvError,
};
use eip_core::message::{DeathReason, names, now_millis};

fn dlc() -> DeadLetterChannel {
    DeadLetterChannel::new("dead-letters", 100).unwrap()
}

/// A message that expired a millisecond ago.
fn stale() -> Message {
    Message::builder("stale")
        .expires_at(now_millis() - 1)
        .build()
}

/// The next dead letter: [`stale`], dead-lettered as expired.
fn stale_dead_letter(dead: &DeadLetterChannel) -> Delivery {
    let dl = dead.receiver().try_recv().unwrap();
    assert_eq!(dl.message().payload_str(), Some("stale"));
    assert_eq!(
        dl.message().death().unwrap().unwrap().reason,
        DeathReason::Expired
    );
    dl
}

#[tokio::test]
async fn expired_messages_are_never_delivered_but_dead_lettered() {
    let dead = dlc();
    let ch = PointToPoint::builder("quotes")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    ch.send(stale()).await.unwrap();
    ch.send(
        Message::builder("fresh")
            .time_to_live(Duration::from_secs(60))
            .build(),
    )
    .await
    .unwrap();
    let mut rx = ch.receiver();
    let d = rx.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some("fresh"));
    d.ack();
    let dl = stale_dead_letter(&dead);
    assert!(
        !dl.message().headers().contains(names::EXPIRES_AT),
        "a dead letter never expires again"
    );
}

#[tokio::test]
async fn a_channel_time_to_live_expires_messages_that_wait_longer() {
    let dead = dlc();
    let ch = PointToPoint::builder("ttl")
        .dead_letter_channel(dead.clone())
        .time_to_live(Duration::from_millis(30))
        .build()
        .unwrap();
    let sooner = now_millis() + 10;
    ch.send(Message::new("plain")).await.unwrap();
    ch.send(Message::builder("sooner").expires_at(sooner).build())
        .await
        .unwrap();
    ch.send(
        Message::builder("later")
            .time_to_live(Duration::from_secs(3600))
            .build(),
    )
    .await
    .unwrap();
    let mut rx = ch.receiver();
    let first = rx.try_recv().unwrap();
    let deadline = first.message().expires_at().unwrap().unwrap();
    assert!(
        deadline <= now_millis() + 30,
        "stamped with the channel's ttl"
    );
    first.nack();
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
    assert_eq!(
        dead.stats().depth,
        3,
        "all three expired, the hour shortened"
    );
    let mut dl = dead.receiver();
    let d = dl.try_recv().unwrap();
    assert_eq!(
        d.message().death().unwrap().unwrap().reason,
        DeathReason::Expired
    );
}

#[tokio::test]
async fn expiration_is_checked_when_the_message_would_be_delivered() {
    let dead = dlc();
    let ch = PointToPoint::builder("slow")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    ch.send(
        Message::builder("x")
            .time_to_live(Duration::from_millis(30))
            .build(),
    )
    .await
    .unwrap();
    assert_eq!(
        ch.stats().depth,
        1,
        "nothing scans the queue in the meantime"
    );
    tokio::time::sleep(Duration::from_millis(60)).await;
    let mut rx = ch.receiver();
    assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
    assert_eq!(dead.stats().depth, 1);
}

/// A receiver that prefetches takes the first of a batch straight from the store: an expired
/// one there is dead-lettered all the same, and those behind it follow in order. Both kinds of
/// channel: a subscription (prefetching by default) reads the channel's shared log.
#[tokio::test]
async fn an_expired_message_first_in_a_prefetched_batch_is_dead_lettered() {
    let dead = dlc();
    let queue = PointToPoint::builder("queue")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let mut receiver = queue.receiver().with_prefetch(8);
    expired_first_then_three(&queue.clone().into(), &mut receiver, &dead).await;

    let dead = dlc();
    let topic = PublishSubscribe::builder("topic")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let mut subscriber = topic.subscribe();
    assert!(subscriber.prefetch() > 1);
    expired_first_then_three(&topic.clone().into(), &mut subscriber, &dead).await;
}

async fn expired_first_then_three(
    channel: &Channel,
    receiver: &mut Receiver,
    dead: &DeadLetterChannel,
) {
    channel.send(stale()).await.unwrap();
    for payload in ["a", "b", "c"] {
        channel.send(Message::new(payload)).await.unwrap();
    }
    for expected in ["a", "b", "c"] {
        let d = receiver.recv().await.unwrap();
        assert_eq!(
            d.message().payload_str(),
            Some(expected),
            "{}",
            channel.name()
        );
        d.ack();
    }
    stale_dead_letter(dead);
    assert_eq!(receiver.try_recv().unwrap_err(), TryRecvError::Empty);
}
