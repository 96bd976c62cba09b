//! Behaviour of point-to-point channels: competing consumers, wake-ups, capacity, redelivery,
//! dead letters, selective consumers, purging, deletion. Publish-subscribe, datatype and
//! expiration have files of their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::channel::{
    ChannelPurger, DeadLetterChannel, PointToPoint, PublishSubscribe, Selector, TryRecvError,
    TrySendError,
};
use eip_core::message::DeathReason;
use eip_core::{Message, Outcome};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

fn dlc() -> DeadLetterChannel {
    DeadLetterChannel::new("dead-letters", 100).unwrap()
}

#[tokio::test]
async fn competing_consumers_receive_each_message_once() {
    let ch = PointToPoint::new("work", 1000).unwrap();
    let taken = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let mut rx = ch.receiver();
        let taken = taken.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while taken.load(Ordering::SeqCst) < 500 {
                // Short waits, so a consumer notices when the others took the last message.
                let Ok(Some(d)) = timeout(Duration::from_millis(20), rx.recv()).await else {
                    continue;
                };
                got.push(d.message().payload_str().unwrap().to_owned());
                d.ack();
                taken.fetch_add(1, Ordering::SeqCst);
            }
            got
        }));
    }
    for i in 0..500 {
        ch.send(Message::new(format!("m{i}"))).await.unwrap();
    }
    let mut all = Vec::new();
    for t in tasks {
        let got = timeout(Duration::from_secs(30), t).await;
        all.extend(got.expect("the consumers take all 500 messages").unwrap());
    }
    all.sort();
    let mut expected: Vec<String> = (0..500).map(|i| format!("m{i}")).collect();
    expected.sort();
    assert_eq!(all, expected, "every message exactly once");
    assert_eq!(ch.stats().acked, 500);
}

/// A burst of sends wakes one parked receiver; the one woken passes the wake-up on, so a
/// second parked receiver takes the second message while the first still holds its delivery.
/// One thread: nobody runs between the two sends.
#[tokio::test]
async fn a_burst_reaches_every_parked_competing_consumer() {
    let ch = PointToPoint::new("burst", 10).unwrap();
    let (got, mut gotten) = tokio::sync::mpsc::channel(2);
    let (release, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let mut rx = ch.receiver();
        let got = got.clone();
        let mut released = release.subscribe();
        tasks.push(tokio::spawn(async move {
            let delivery = rx.recv().await.expect("open");
            got.send(()).await.expect("test alive");
            // Held, unacked, until both have one.
            let _ = released.recv().await;
            delivery.ack();
        }));
    }
    // Both parked before the burst.
    tokio::time::sleep(Duration::from_millis(100)).await;
    ch.send(Message::new("a")).await.unwrap();
    ch.send(Message::new("b")).await.unwrap();
    for n in 0..2 {
        timeout(WAIT, gotten.recv())
            .await
            .unwrap_or_else(|_| panic!("receiver {n} of 2 never got its message"));
    }
    release.send(()).unwrap();
    for t in tasks {
        timeout(WAIT, t).await.unwrap().unwrap();
    }
    assert_eq!(ch.stats().acked, 2);
}

/// Settles free room one at a time; every sender waiting on a full channel gets through, each
/// woken in turn, and none is left waiting beside free room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn senders_waiting_on_a_full_channel_all_get_through_as_room_frees() {
    let ch = PointToPoint::new("full", 2).unwrap();
    ch.send(Message::new("0")).await.unwrap();
    ch.send(Message::new("1")).await.unwrap();
    let senders: Vec<_> = (0..4)
        .map(|i| {
            let ch = ch.clone();
            tokio::spawn(async move { ch.send(Message::new(format!("w{i}"))).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut rx = ch.receiver();
    for _ in 0..6 {
        let d = timeout(WAIT, rx.recv())
            .await
            .expect("a message")
            .expect("open");
        d.ack();
    }
    for s in senders {
        assert_eq!(
            timeout(WAIT, s).await.unwrap().unwrap().unwrap(),
            Outcome::Accepted
        );
    }
    assert_eq!(ch.stats().acked, 6);
}

#[tokio::test]
async fn a_receive_takes_nothing_until_it_is_awaited() {
    let ch = PointToPoint::new("lazy", 10).unwrap();
    ch.send(Message::new("first")).await.unwrap();
    let mut early = ch.receiver();
    let mut other = ch.receiver();
    // Made and dropped without being polled: the message stays in the channel.
    drop(early.recv());
    assert_eq!(ch.stats().delivered, 0);
    let delivery = other.try_recv().expect("still waiting in the channel");
    assert_eq!(delivery.message().payload().as_ref(), b"first");
    delivery.ack();
    // Polled while the channel is empty, it waits; the next message reaches it.
    let waiting = tokio::spawn(async move { early.recv().await.map(|d| d.message().clone()) });
    tokio::task::yield_now().await;
    ch.send(Message::new("second")).await.unwrap();
    let got = timeout(WAIT, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(got.payload().as_ref(), b"second");
}

#[tokio::test]
async fn point_to_point_is_fifo_per_producer() {
    let ch = PointToPoint::new("fifo", 100).unwrap();
    let mut rx = ch.receiver();
    for i in 0..50 {
        ch.send(Message::new(i.to_string())).await.unwrap();
    }
    for i in 0..50 {
        let d = rx.recv().await.unwrap();
        assert_eq!(d.message().payload_str(), Some(i.to_string().as_str()));
        d.ack();
    }
}

#[tokio::test]
async fn a_full_channel_makes_senders_wait_and_try_send_fail() {
    let ch = PointToPoint::new("small", 2).unwrap();
    ch.send(Message::new("a")).await.unwrap();
    ch.send(Message::new("b")).await.unwrap();
    match ch.try_send(Message::new("c")) {
        Err(TrySendError::Full {
            channel,
            capacity,
            message,
        }) => {
            assert_eq!(channel, "small");
            assert_eq!(capacity, 2);
            assert_eq!(message.payload_str(), Some("c"), "the message comes back");
        }
        other => panic!("expected Full, got {other:?}"),
    }
    let blocked = tokio::spawn({
        let ch = ch.clone();
        async move { ch.send(Message::new("c")).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !blocked.is_finished(),
        "send waits while the channel is full"
    );
    let mut rx = ch.receiver();
    let d = rx.recv().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !blocked.is_finished(),
        "an unsettled delivery still counts against capacity"
    );
    d.ack();
    timeout(WAIT, blocked).await.unwrap().unwrap().unwrap();
    assert_eq!(ch.stats().depth, 2);
}

#[tokio::test]
async fn nack_and_dropped_deliveries_requeue_at_the_head_with_a_redelivery_count() {
    let ch = PointToPoint::new("retry", 10).unwrap();
    let mut rx = ch.receiver();
    ch.send(Message::new("first")).await.unwrap();
    ch.send(Message::new("second")).await.unwrap();
    let d = rx.recv().await.unwrap();
    assert_eq!(d.message().redelivery_count().unwrap(), 0);
    d.nack();
    let d = rx.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some("first"));
    assert_eq!(d.message().redelivery_count().unwrap(), 1);
    drop(d);
    let d = rx.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some("first"));
    assert_eq!(d.message().redelivery_count().unwrap(), 2);
    d.ack();
    let stats = ch.stats();
    assert_eq!(stats.requeued, 2);
    assert_eq!(stats.depth, 1);
}

#[tokio::test]
async fn rejected_messages_go_to_the_dead_letter_channel_with_a_death_record() {
    let dead = dlc();
    let ch = PointToPoint::builder("orders")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    ch.send(Message::new("bad order")).await.unwrap();
    let d = ch.receiver().recv().await.unwrap();
    let id = d.message().id();
    d.reject("customer unknown").await;
    let dl = dead.receiver().try_recv().unwrap();
    assert_eq!(
        dl.message().id(),
        id,
        "the same message, not a copy with a new id"
    );
    let death = dl.message().death().unwrap().unwrap();
    assert_eq!(death.channel, "orders");
    assert_eq!(death.reason, DeathReason::Rejected);
    assert_eq!(death.count, 1);
    assert_eq!(death.error.as_deref(), Some("customer unknown"));
    assert!(!death.host.is_empty());
    assert!(death.first_time <= death.last_time);
    assert_eq!(ch.stats().in_flight, 0);
}

#[tokio::test]
async fn selective_consumers_take_only_what_they_select_and_leave_the_rest() {
    let ch = PointToPoint::new("mixed", 10).unwrap();
    let mut orders = ch.selective_receiver(Selector::header_equals("type", "order"));
    let mut invoices = ch.selective_receiver(Selector::header_equals("type", "invoice"));
    for (i, t) in ["invoice", "order", "other", "order"]
        .into_iter()
        .enumerate()
    {
        ch.send(Message::builder(i.to_string()).header("type", t).build())
            .await
            .unwrap();
    }
    let a = orders.recv().await.unwrap();
    assert_eq!(a.message().payload_str(), Some("1"));
    a.ack();
    let b = orders.recv().await.unwrap();
    assert_eq!(b.message().payload_str(), Some("3"));
    b.ack();
    assert_eq!(orders.try_recv().unwrap_err(), TryRecvError::Empty);
    let c = invoices.recv().await.unwrap();
    assert_eq!(c.message().payload_str(), Some("0"));
    c.ack();
    assert_eq!(
        ch.stats().depth,
        1,
        "the unselected message waits on the channel"
    );
    let rest = ch.receiver().try_recv().unwrap();
    assert_eq!(rest.message().payload_str(), Some("2"));
}

#[tokio::test]
async fn a_waiting_selective_consumer_is_woken_by_a_matching_message() {
    let ch = PointToPoint::new("wake", 10).unwrap();
    let mut blue = ch.selective_receiver(Selector::header_equals("color", "blue"));
    let mut red = ch.selective_receiver(Selector::header_equals("color", "red"));
    let blue_task = tokio::spawn(async move { blue.recv().await.map(|d| d.message().id()) });
    let red_task = tokio::spawn(async move { red.recv().await.map(|d| d.message().id()) });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let red_msg = Message::builder("r").header("color", "red").build();
    let blue_msg = Message::builder("b").header("color", "blue").build();
    let (r, b) = (red_msg.id(), blue_msg.id());
    ch.send(red_msg).await.unwrap();
    ch.send(blue_msg).await.unwrap();
    assert_eq!(timeout(WAIT, red_task).await.unwrap().unwrap(), Some(r));
    assert_eq!(timeout(WAIT, blue_task).await.unwrap().unwrap(), Some(b));
}

#[tokio::test]
async fn purger_removes_all_or_what_a_selector_accepts() {
    let ch = PointToPoint::new("purge", 10).unwrap();
    for i in 0..6 {
        let kind = if i % 2 == 0 { "test" } else { "real" };
        ch.send(Message::builder("x").header("kind", kind).build())
            .await
            .unwrap();
    }
    let in_flight = ch.receiver().recv().await.unwrap();
    assert_eq!(
        ch.purge_matching(&Selector::header_equals("kind", "test")),
        2
    );
    assert_eq!(ch.stats().depth, 3);
    assert_eq!(ch.purge(), 3);
    assert_eq!(ch.stats().depth, 0);
    assert_eq!(
        ch.stats().in_flight,
        1,
        "a purge leaves deliveries in flight alone"
    );
    in_flight.ack();
}

#[tokio::test]
async fn a_deleted_channel_dead_letters_what_it_held_and_refuses_sends() {
    let dead = dlc();
    let ch = PointToPoint::builder("temp")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    ch.send(Message::new("a")).await.unwrap();
    ch.send(Message::new("b")).await.unwrap();
    let held = ch.receiver().recv().await.unwrap();
    assert_eq!(ch.delete().await, 1);
    assert!(ch.send(Message::new("c")).await.is_err());
    held.nack();
    let mut dl = dead.receiver();
    for _ in 0..2 {
        let d = dl.try_recv().unwrap();
        assert_eq!(
            d.message().death().unwrap().unwrap().reason,
            DeathReason::ChannelDeleted
        );
        d.ack();
    }
    assert_eq!(ch.receiver().recv().await.map(|d| d.message().id()), None);
}

#[tokio::test]
async fn without_a_dead_letter_channel_losses_are_counted() {
    let ch = PointToPoint::new("bare", 10).unwrap();
    ch.send(Message::new("x")).await.unwrap();
    ch.receiver().recv().await.unwrap().reject("no").await;
    assert_eq!(ch.stats().discarded, 1);
}

#[test]
fn bad_channel_configurations_are_refused() {
    assert!(PointToPoint::new("zero", 0).is_err());
    assert!(PointToPoint::new("bad name", 1).is_err());
    assert!(PublishSubscribe::new("a..b", 1).is_err());
}

#[tokio::test]
async fn a_dropped_receiver_returns_its_prefetched_messages_in_order_uncounted() {
    let ch = PointToPoint::new("prefetch", 10).unwrap();
    for i in 0..5 {
        ch.send(Message::new(i.to_string())).await.unwrap();
    }
    let mut greedy = ch.receiver().with_prefetch(4);
    let first = greedy.recv().await.unwrap();
    assert_eq!(first.message().payload_str(), Some("0"));
    assert_eq!(
        ch.stats().in_flight,
        4,
        "prefetched messages count as in flight"
    );
    let mut other = ch.receiver();
    let d = other.recv().await.unwrap();
    assert_eq!(
        d.message().payload_str(),
        Some("4"),
        "the other consumer gets what is left"
    );
    d.ack();
    drop(greedy);
    first.ack();
    let rest: Vec<(String, u32)> = std::iter::from_fn(|| other.try_recv().ok())
        .map(|d| {
            let r = (
                d.message().payload_str().unwrap().to_owned(),
                d.message().redelivery_count().unwrap(),
            );
            d.ack();
            r
        })
        .collect();
    assert_eq!(rest, [("1".into(), 0), ("2".into(), 0), ("3".into(), 0)]);
}

#[tokio::test]
async fn messages_prefetched_by_a_subscriber_are_dead_lettered_when_its_subscription_ends() {
    let dead = dlc();
    let ch = PublishSubscribe::builder("news")
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    let mut sub = ch.durable_subscribe("archive");
    for i in 0..3 {
        ch.publish(Message::new(i.to_string())).await.unwrap();
    }
    let first = sub.recv().await.unwrap(); // takes all three into its prefetch buffer
    assert_eq!(
        ch.unsubscribe("archive").await,
        Some(0),
        "nothing was left waiting"
    );
    assert_eq!(
        sub.try_recv().unwrap_err(),
        TryRecvError::Closed,
        "nothing more is handed out"
    );
    first.ack();
    let mut dl = dead.receiver();
    for expected in ["1", "2"] {
        let d = dl.try_recv().unwrap();
        assert_eq!(d.message().payload_str(), Some(expected));
        assert_eq!(
            d.message().death().unwrap().unwrap().reason,
            DeathReason::ChannelDeleted
        );
        d.ack();
    }
}

#[tokio::test]
async fn parked_competing_consumers_each_wake_for_a_message() {
    // Two consumers park; two messages arrive back to back. Each consumer must get one without
    // a third message arriving, even though a wake-up is sent once per batch.
    // On one thread both sends complete before either consumer runs.
    for _ in 0..5 {
        let ch = PointToPoint::new("work", 10).unwrap();
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let mut rx = ch.receiver();
            tasks.push(tokio::spawn(async move {
                // Returns the delivery unsettled (no second recv, no requeue): the other message
                // needs the other consumer.
                rx.recv().await
            }));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        ch.send(Message::new("a")).await.unwrap();
        ch.send(Message::new("b")).await.unwrap();
        for t in tasks {
            let got = timeout(WAIT, t)
                .await
                .expect("a parked consumer was never woken");
            assert!(got.unwrap().is_some());
        }
    }
}

/// A publish that can not complete within a short while (the channel is full for it).
async fn publish_waits(ch: &PublishSubscribe, payload: &'static str) -> bool {
    timeout(Duration::from_millis(50), ch.publish(Message::new(payload)))
        .await
        .is_err()
}

#[tokio::test]
async fn what_a_subscriber_has_not_received_yet_counts_against_its_capacity() {
    let ch = PublishSubscribe::new("ticks", 2).unwrap();
    let mut reader = ch.subscribe();
    let idle = ch.subscribe();
    for i in 1..=2 {
        ch.publish(Message::new(i.to_string())).await.unwrap();
    }
    for _ in 0..2 {
        reader.recv().await.unwrap().ack();
    }
    assert_eq!(ch.stats().depth, 2, "the idle subscriber holds both");
    assert!(
        publish_waits(&ch, "3").await,
        "the idle subscriber is full although it took nothing"
    );
    drop(idle);
    ch.publish(Message::new("4")).await.unwrap();
    let d = reader.recv().await.unwrap();
    assert_eq!(
        d.message().payload_str(),
        Some("4"),
        "the cancelled publish stored nothing"
    );
    d.ack();
    assert_eq!(reader.try_recv().unwrap_err(), TryRecvError::Empty);
}

#[tokio::test]
async fn purging_a_publish_subscribe_channel_takes_what_subscribers_have_not_received() {
    let ch = PublishSubscribe::new("ticks", 3).unwrap();
    let mut a = ch.subscribe();
    let mut b = ch.subscribe();
    for i in 1..=3 {
        let msg = Message::builder(i.to_string())
            .header("n", i64::from(i))
            .build();
        ch.publish(msg).await.unwrap();
    }
    let first = a.recv().await.unwrap(); // `a` prefetches all three
    let odd = Selector::header_equals("n", 1i64).or(Selector::header_equals("n", 3i64));
    assert_eq!(ch.purge_matching(&odd), 2, "only `b`'s two waiting ones");
    assert_eq!(ChannelPurger::purge(&ch), 1, "`b`'s last one");
    assert_eq!(ch.stats().depth, 0);
    first.ack();
    for _ in 0..2 {
        a.recv().await.unwrap().ack();
    }
    assert_eq!(b.try_recv().unwrap_err(), TryRecvError::Empty);
    // The purged ones left room: `b` can take a full capacity again.
    for i in 4..=6 {
        timeout(WAIT, ch.publish(Message::new(i.to_string())))
            .await
            .unwrap()
            .unwrap();
    }
    let d = b.recv().await.unwrap();
    assert_eq!(d.message().payload_str(), Some("4"));
    d.ack();
}

#[tokio::test]
async fn ending_a_subscription_dead_letters_what_it_had_not_received() {
    let dead = dlc();
    let ch = PublishSubscribe::builder("news")
        .capacity(10)
        .dead_letter_channel(dead.clone())
        .build()
        .unwrap();
    drop(ch.durable_subscribe("archive"));
    let mut live = ch.subscribe();
    for i in 0..3 {
        ch.publish(Message::new(i.to_string())).await.unwrap();
    }
    assert_eq!(ch.stats().depth, 6);
    assert_eq!(ch.unsubscribe("archive").await, Some(3));
    assert_eq!(ch.delete().await, 3, "`live` had received none");
    assert_eq!(dead.stats().depth, 6);
    assert!(live.recv().await.is_none());
    assert!(ch.publish(Message::new("late")).await.is_err());
    assert!(
        ch.subscribe().recv().await.is_none(),
        "a subscription to a deleted channel ends at once"
    );
}
