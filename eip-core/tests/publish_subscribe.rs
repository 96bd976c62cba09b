//! Behaviour of publish-subscribe channels: every subscriber gets each message once, one shared
//! payload, backpressure or drop-oldest for slow subscribers, durable subscribers.

use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{DeadLetterChannel, Overflow, PublishSubscribe, TryRecvError};
use eip_core::message::DeathReason;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

fn dlc() -> DeadLetterChannel {
    DeadLetterChannel::new("dead-letters", 100).unwrap()
}

#[tokio::test]
async fn every_subscriber_gets_each_message_published_after_it_subscribed_once() {
    let ch = PublishSubscribe::new("prices", 100).unwrap();
    ch.publish(Message::new("before anyone")).await.unwrap();
    let mut a = ch.subscribe();
    let mut b = ch.subscribe();
    ch.publish(Message::new("one")).await.unwrap();
    let mut late = ch.subscribe();
    ch.publish(Message::new("two")).await.unwrap();
    for sub in [&mut a, &mut b] {
        for expected in ["one", "two"] {
            let d = sub.recv().await.unwrap();
            assert_eq!(d.message().payload_str(), Some(expected));
            d.ack();
        }
        assert_eq!(sub.try_recv().unwrap_err(), TryRecvError::Empty);
    }
    let d = late.recv().await.unwrap();
    assert_eq!(
        d.message().payload_str(),
        Some("two"),
        "a late subscriber misses earlier messages"
    );
    d.ack();
    assert_eq!(late.try_recv().unwrap_err(), TryRecvError::Empty);
}

#[tokio::test]
async fn fan_out_shares_one_payload_among_subscribers() {
    let ch = PublishSubscribe::new("big", 10).unwrap();
    let mut subs: Vec<_> = (0..5).map(|_| ch.subscribe()).collect();
    let msg = Message::new(vec![0u8; 4096]);
    let ptr = msg.payload().as_ptr();
    ch.publish(msg).await.unwrap();
    for s in &mut subs {
        let d = s.recv().await.unwrap();
        assert_eq!(
            d.message().payload().as_ptr(),
            ptr,
            "no subscriber got a copy of the bytes"
        );
        d.ack();
    }
}

#[tokio::test]
async fn a_slow_subscriber_backpressures_the_publisher_by_default() {
    let ch = PublishSubscribe::new("ticks", 2).unwrap();
    let mut slow = ch.subscribe();
    ch.publish(Message::new("1")).await.unwrap();
    ch.publish(Message::new("2")).await.unwrap();
    let blocked = tokio::spawn({
        let ch = ch.clone();
        async move { ch.publish(Message::new("3")).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!blocked.is_finished());
    slow.recv().await.unwrap().ack();
    timeout(WAIT, blocked).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn drop_oldest_dead_letters_what_a_slow_subscriber_missed() {
    let dead = dlc();
    let ch = PublishSubscribe::builder("ticks")
        .capacity(2)
        .overflow(Overflow::DropOldest)
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let mut slow = ch.subscribe();
    for i in 1..=5 {
        ch.publish(Message::new(i.to_string())).await.unwrap();
    }
    let got: Vec<String> = [slow.recv().await.unwrap(), slow.recv().await.unwrap()]
        .into_iter()
        .map(|d| {
            let s = d.message().payload_str().unwrap().to_owned();
            d.ack();
            s
        })
        .collect();
    assert_eq!(got, ["4", "5"], "the newest messages are kept");
    let mut dl = dead.receiver();
    for expected in ["1", "2", "3"] {
        let d = dl.try_recv().unwrap();
        assert_eq!(d.message().payload_str(), Some(expected));
        assert_eq!(
            d.message().death().unwrap().unwrap().reason,
            DeathReason::DroppedSlowSubscriber
        );
        d.ack();
    }
}

#[tokio::test]
async fn a_durable_subscriber_keeps_its_messages_while_detached() {
    let ch = PublishSubscribe::new("news", 10).unwrap();
    let sub = ch.durable_subscribe("archive");
    assert!(sub.is_durable());
    drop(sub);
    ch.publish(Message::new("while away")).await.unwrap();
    let transient = ch.subscribe();
    drop(transient);
    assert_eq!(
        ch.subscriber_count(),
        1,
        "a dropped non-durable subscription ends"
    );
    let mut back = ch.durable_subscribe("archive");
    let d = back.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some("while away"));
    d.ack();
    assert_eq!(ch.durable_subscriptions(), ["archive"]);
    assert_eq!(ch.unsubscribe("archive").await, Some(0));
    assert_eq!(ch.subscriber_count(), 0);
    assert_eq!(ch.unsubscribe("archive").await, None);
}

#[tokio::test]
async fn a_durable_subscription_is_bounded_while_detached() {
    let ch = PublishSubscribe::new("news", 2).unwrap();
    drop(ch.durable_subscribe("archive"));
    ch.publish(Message::new("1")).await.unwrap();
    ch.publish(Message::new("2")).await.unwrap();
    let third = timeout(Duration::from_millis(50), ch.publish(Message::new("3"))).await;
    assert!(
        third.is_err(),
        "the publisher waits once the detached subscription is full"
    );
}
