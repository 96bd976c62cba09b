//! Durable channels: what survives a restart, and what the store's limits do.
//!
//! A "restart" here drops every channel and the store, then opens the same data directory
//! again, as a new process would (the crash test in `eip-dsl/tests` kills real processes).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{
    DeadLetterChannel, Overflow, PointToPoint, PublishSubscribe, Selector, SendError,
};
use eip_core::message::DeathReason;
use eip_core::store::durable::{Durable, StoreConfig};

/// A data directory of its own, removed at the end.
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "eip-durable-{name}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        DataDir(dir)
    }

    fn open(&self) -> Arc<Durable> {
        Arc::new(Durable::open(&self.0, StoreConfig::default()).expect("store opens"))
    }

    fn open_with(&self, config: StoreConfig) -> Arc<Durable> {
        Arc::new(Durable::open(&self.0, config).expect("store opens"))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn orders(store: &Arc<Durable>) -> PointToPoint {
    PointToPoint::builder("orders")
        .capacity(10_000)
        .store(store.clone())
        .build()
        .expect("channel builds")
}

async fn receive_all(channel: &PointToPoint, n: usize) -> Vec<Message> {
    let mut receiver = channel.receiver();
    let mut got = Vec::new();
    for _ in 0..n {
        let delivery = tokio::time::timeout(Duration::from_secs(5), receiver.recv())
            .await
            .expect("a message within 5 s")
            .expect("channel open");
        got.push(delivery.message().clone());
        delivery.ack();
    }
    got
}

#[tokio::test]
async fn unacknowledged_messages_are_delivered_again_after_a_restart_marked_redelivered() {
    let dir = DataDir::new("restart");
    let sent: Vec<Message> = (0..20)
        .map(|i| Message::new(format!("order {i}")))
        .collect();
    {
        let store = dir.open();
        let channel = orders(&store);
        for msg in &sent {
            channel.send(msg.clone()).await.expect("sent");
        }
        // Five taken and acked, one taken and not settled when the channel goes.
        let acked = receive_all(&channel, 5).await;
        assert_eq!(
            acked.iter().map(Message::id).collect::<Vec<_>>(),
            ids(&sent[..5])
        );
        let mut receiver = channel.receiver();
        let in_flight = receiver.recv().await.expect("a sixth");
        assert_eq!(in_flight.message().id(), sent[5].id());
        store.flush().await.expect("acks written");
    }
    let store = dir.open();
    let channel = orders(&store);
    assert_eq!(channel.stats().depth, 15);
    let again = receive_all(&channel, 15).await;
    assert_eq!(
        ids(&again),
        ids(&sent[5..]),
        "in order, none lost, none twice"
    );
    for msg in &again {
        assert_eq!(
            msg.redelivery_count().expect("count"),
            1,
            "marked redelivered"
        );
        assert_eq!(
            msg.payload(),
            sent.iter()
                .find(|m| m.id() == msg.id())
                .map(|m| m.payload())
                .expect("sent")
        );
    }
}

fn prices(store: &Arc<Durable>) -> PublishSubscribe {
    PublishSubscribe::builder("prices")
        .store(store.clone())
        .build()
        .expect("channel builds")
}

fn ids(messages: &[Message]) -> Vec<eip_core::MessageId> {
    messages.iter().map(Message::id).collect()
}

#[tokio::test]
async fn acknowledged_messages_do_not_come_back() {
    let dir = DataDir::new("acked");
    {
        let store = dir.open();
        let channel = orders(&store);
        for i in 0..10 {
            channel
                .send(Message::new(format!("{i}")))
                .await
                .expect("sent");
        }
        receive_all(&channel, 10).await;
    }
    // Dropping the store writes the acks it still held.
    let store = dir.open();
    let channel = orders(&store);
    assert_eq!(channel.stats().depth, 0);
    assert!(channel.receiver().try_recv().is_err());
}

#[tokio::test]
async fn a_nacked_message_is_delivered_again_at_once() {
    let dir = DataDir::new("nack");
    let store = dir.open();
    let channel = orders(&store);
    channel.send(Message::new("a")).await.expect("sent");
    channel.send(Message::new("b")).await.expect("sent");
    let mut receiver = channel.receiver();
    let first = receiver.recv().await.expect("a");
    let id = first.message().id();
    first.nack();
    let again = receiver.recv().await.expect("a again");
    assert_eq!(again.message().id(), id);
    assert_eq!(again.message().redelivery_count().expect("count"), 1);
    again.ack();
    assert_eq!(channel.stats().depth, 1);
}

#[tokio::test]
async fn a_durable_subscription_keeps_its_place_across_a_restart() {
    let dir = DataDir::new("subscription");
    {
        let store = dir.open();
        let channel = prices(&store);
        let mut audit = channel.durable_subscribe("audit");
        for i in 0..3 {
            channel
                .publish(Message::new(format!("tick {i}")))
                .await
                .expect("published");
        }
        let first = audit.recv().await.expect("tick 0");
        assert_eq!(first.message().payload_str(), Some("tick 0"));
        first.ack();
        // Away: published while no consumer is attached, and across the restart.
        drop(audit);
        channel
            .publish(Message::new("tick 3"))
            .await
            .expect("published");
    }
    let store = dir.open();
    let channel = prices(&store);
    assert_eq!(channel.durable_subscriptions(), ["audit"]);
    channel
        .publish(Message::new("tick 4"))
        .await
        .expect("published");
    let mut audit = channel.durable_subscribe("audit");
    let mut got = Vec::new();
    for _ in 0..4 {
        let d = audit.recv().await.expect("a tick");
        got.push(d.message().payload_str().unwrap_or_default().to_owned());
        d.ack();
    }
    assert_eq!(got, ["tick 1", "tick 2", "tick 3", "tick 4"]);
}

#[tokio::test]
async fn an_unsubscribed_durable_subscription_is_gone_after_a_restart() {
    let dir = DataDir::new("unsubscribe");
    {
        let store = dir.open();
        let channel = prices(&store);
        drop(channel.durable_subscribe("audit"));
        channel.publish(Message::new("x")).await.expect("published");
        assert_eq!(channel.unsubscribe("audit").await, Some(1));
    }
    let store = dir.open();
    assert!(prices(&store).durable_subscriptions().is_empty());
}

#[tokio::test]
async fn expiration_holds_across_a_restart() {
    let dir = DataDir::new("expiry");
    {
        let store = dir.open();
        let channel = PointToPoint::builder("orders")
            .time_to_live(Duration::from_millis(50))
            .store(store.clone())
            .build()
            .expect("builds");
        channel
            .send(Message::new("stale soon"))
            .await
            .expect("sent");
    }
    tokio::time::sleep(Duration::from_millis(80)).await;
    let store = dir.open();
    let dead = PointToPoint::builder("dead")
        .store(store.clone())
        .build()
        .expect("builds");
    let channel = PointToPoint::builder("orders")
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .store(store.clone())
        .build()
        .expect("builds");
    let mut receiver = channel.receiver();
    assert!(
        tokio::time::timeout(Duration::from_millis(100), receiver.recv())
            .await
            .is_err(),
        "an expired message is not delivered"
    );
    let dead_letter = dead.receiver().recv().await.expect("dead-lettered");
    let death = dead_letter
        .message()
        .death()
        .expect("record")
        .expect("present");
    assert_eq!(death.reason, DeathReason::Expired);
}

#[tokio::test]
async fn a_full_store_makes_sends_wait_then_fail_naming_the_directory_and_limit() {
    let dir = DataDir::new("full");
    // Long enough that the waiting send below outlasts a loaded machine's scheduling.
    let store = dir.open_with(StoreConfig {
        max_bytes: Some(4096),
        full_timeout: Duration::from_secs(2),
        ..StoreConfig::default()
    });
    let channel = orders(&store);
    let payload = vec![b'x'; 1000];
    let mut accepted = 0;
    let error = loop {
        match channel.send(Message::new(payload.clone())).await {
            Ok(_) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 10, "the limit was never reached");
    };
    assert!(accepted >= 3, "{accepted} accepted");
    let text = error.to_string();
    assert!(matches!(error, SendError::Store { .. }), "{text}");
    assert!(
        text.contains("4096") && text.contains(&dir.0.display().to_string()),
        "{text}"
    );
    // Waiting, then room: an ack frees it and the waiting send goes through.
    let waiting = tokio::spawn({
        let channel = channel.clone();
        let payload = payload.clone();
        async move { channel.send(Message::new(payload)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    receive_all(&channel, 1).await;
    // The ack is written lazily: now, so the room is free at once.
    store.flush().await.expect("flushed");
    waiting
        .await
        .expect("joined")
        .expect("sent once room was freed");
    assert_eq!(
        channel.stats().depth,
        accepted,
        "nothing accepted was dropped"
    );
}

#[tokio::test]
async fn a_send_waits_while_the_channel_holds_its_capacity() {
    let dir = DataDir::new("capacity");
    let store = dir.open();
    let channel = PointToPoint::builder("orders")
        .capacity(2)
        .store(store.clone())
        .build()
        .expect("builds");
    channel.send(Message::new("1")).await.expect("sent");
    channel.send(Message::new("2")).await.expect("sent");
    let third =
        tokio::time::timeout(Duration::from_millis(100), channel.send(Message::new("3"))).await;
    assert!(third.is_err(), "the third send waits");
    receive_all(&channel, 1).await;
    tokio::time::timeout(Duration::from_secs(5), channel.send(Message::new("3")))
        .await
        .expect("room after an ack")
        .expect("sent");
}

/// A send given up once its message went to the store (its future dropped while the commit was
/// on its way) still reaches a consumer already waiting: nobody hands that message over, so the
/// store itself wakes the channel's readers once the record is committed.
#[tokio::test]
async fn a_waiting_consumer_receives_a_message_whose_send_was_given_up() {
    let dir = DataDir::new("given-up");
    let store = dir.open();
    let channel = orders(&store);
    let mut receiver = channel.receiver();
    let consumer = tokio::spawn(async move {
        let delivery = receiver.recv().await.expect("channel open");
        let id = delivery.message().id();
        delivery.ack();
        id
    });
    // The consumer parks on the empty channel first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!consumer.is_finished());
    let msg = Message::new("given up");
    let id = msg.id();
    let mut send = Box::pin(channel.send(msg));
    // Polled once: the record goes to the committer; then the send is dropped unanswered.
    let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(send.as_mut().poll(cx))).await;
    assert!(
        polled.is_pending(),
        "the send waits for its commit: {polled:?}"
    );
    drop(send);
    let received = tokio::time::timeout(Duration::from_secs(5), consumer)
        .await
        .expect("the waiting consumer is woken within 5 s")
        .expect("the consumer ends");
    assert_eq!(received, id);
}

#[tokio::test]
async fn a_second_opening_of_one_directory_is_refused_as_in_use() {
    let dir = DataDir::new("in-use");
    let _first = dir.open();
    let second = Durable::open(&dir.0, StoreConfig::default()).expect_err("in use");
    assert!(second.to_string().contains("in use"), "{second}");
}

#[tokio::test]
async fn many_senders_share_commits() {
    let dir = DataDir::new("group");
    let store = dir.open();
    let channel = orders(&store);
    let before = store.store().stats().commits;
    let sends = (0..200).map(|i| {
        let channel = channel.clone();
        tokio::spawn(async move { channel.send(Message::new(format!("{i}"))).await })
    });
    for send in futures::future::join_all(sends).await {
        send.expect("joined").expect("sent");
    }
    let commits = store.store().stats().commits - before;
    assert!(commits < 100, "200 concurrent sends took {commits} commits");
    assert_eq!(channel.stats().depth, 200);
}

#[tokio::test]
async fn purging_a_durable_channel_removes_waiting_messages_for_good() {
    let dir = DataDir::new("purge");
    {
        let store = dir.open();
        let channel = orders(&store);
        for i in 0..600 {
            channel
                .send(Message::new(format!("{i}")))
                .await
                .expect("sent");
        }
        use eip_core::channel::ChannelPurger;
        assert_eq!(channel.purge(), 600);
        assert_eq!(channel.stats().depth, 0);
    }
    let store = dir.open();
    assert_eq!(orders(&store).stats().depth, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_senders_fill_a_durable_channel_to_exactly_its_capacity() {
    // Each completed send is counted in the store's length and as a write under way for a
    // moment; a sender looking then must still be woken when the count drops.
    const CAPACITY: usize = 3_000;
    const SENDERS: usize = 128;
    for attempt in 0..3 {
        let dir = DataDir::new("fill");
        let store = dir.open();
        let channel = PointToPoint::builder("full")
            .capacity(CAPACITY)
            .store(store.clone())
            .build()
            .expect("builds");
        let senders = (0..SENDERS).map(|s| {
            let channel = channel.clone();
            tokio::spawn(async move {
                for _ in (s..CAPACITY).step_by(SENDERS) {
                    channel
                        .send(Message::new(vec![b'x'; 64]))
                        .await
                        .expect("sent");
                }
            })
        });
        let all = futures::future::join_all(senders);
        let done = tokio::time::timeout(Duration::from_secs(30), all).await;
        assert!(
            done.is_ok(),
            "attempt {attempt}: {} of {CAPACITY} stored, the other sends never completed",
            channel.stats().depth
        );
        assert_eq!(channel.stats().depth, CAPACITY);
        let got = receive_all(&channel, CAPACITY).await;
        let distinct: std::collections::HashSet<_> = got.iter().map(Message::id).collect();
        assert_eq!(distinct.len(), CAPACITY, "each message delivered once");
    }
}

#[tokio::test]
async fn a_selective_consumer_takes_only_what_it_selects_from_a_durable_channel() {
    let dir = DataDir::new("selective");
    let store = dir.open();
    let channel = orders(&store);
    for i in 0..600 {
        let region = if i % 100 == 99 { "eu" } else { "us" };
        let msg = Message::builder(format!("{i}"))
            .header("region", region)
            .build();
        channel.send(msg).await.expect("sent");
    }
    // The European orders sit far behind the first window of the queue.
    let mut eu = channel.selective_receiver(Selector::header_equals("region", "eu"));
    let mut got = Vec::new();
    for _ in 0..6 {
        let d = tokio::time::timeout(Duration::from_secs(5), eu.recv())
            .await
            .expect("an eu order")
            .expect("open");
        got.push(d.message().payload_str().unwrap_or_default().to_owned());
        d.ack();
    }
    assert_eq!(got, ["99", "199", "299", "399", "499", "599"]);
    assert_eq!(channel.stats().depth, 594, "the others still wait");
    let first = channel.receiver().recv().await.expect("a us order");
    assert_eq!(first.message().payload_str(), Some("0"), "in their order");
}

#[tokio::test]
async fn a_full_durable_subscription_under_drop_oldest_dead_letters_the_oldest() {
    let dir = DataDir::new("drop-oldest");
    let messages = |n: usize| (0..n).map(|i| Message::new(format!("tick {i}")));
    {
        let store = dir.open();
        let dead = PointToPoint::builder("dead")
            .store(store.clone())
            .build()
            .expect("builds");
        let ticks = PublishSubscribe::builder("ticks")
            .capacity(2)
            .overflow(Overflow::DropOldest)
            .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
            .store(store.clone())
            .build()
            .expect("builds");
        drop(ticks.durable_subscribe("chart"));
        for msg in messages(3) {
            ticks.publish(msg).await.expect("published without waiting");
        }
        let dropped = dead.receiver().recv().await.expect("the oldest");
        assert_eq!(dropped.message().payload_str(), Some("tick 0"));
        let death = dropped.message().death().expect("record").expect("present");
        assert_eq!(death.reason, DeathReason::DroppedSlowSubscriber);
        dropped.ack();
    }
    let store = dir.open();
    let ticks = PublishSubscribe::builder("ticks")
        .capacity(2)
        .overflow(Overflow::DropOldest)
        .store(store.clone())
        .build()
        .expect("builds");
    let mut chart = ticks.durable_subscribe("chart");
    for expected in ["tick 1", "tick 2"] {
        let d = chart.recv().await.expect("kept across the restart");
        assert_eq!(d.message().payload_str(), Some(expected));
        d.ack();
    }
}

#[tokio::test]
async fn an_ack_written_in_a_batch_of_the_caller_commits_with_the_batch() {
    let dir = DataDir::new("batch-ack");
    {
        let store = dir.open();
        let channel = orders(&store);
        let table = store.store().table("seen").expect("a key table");
        for i in 0..3 {
            channel
                .send(Message::new(format!("{i}")))
                .await
                .expect("sent");
        }
        let mut receiver = channel.receiver();
        for i in 0..3 {
            let delivery = receiver.recv().await.expect("a message");
            let id = delivery.message().id();
            if i < 2 {
                let ack = channel
                    .durable_ack(id)
                    .expect("taken from a durable channel");
                let batch = store
                    .store()
                    .batch()
                    .put(&table, format!("k{i}"), "v", None);
                ack.into_batch(batch).commit().await.expect("committed");
            }
            // Settled as usual; for the first two the ack is already written.
            delivery.ack();
            assert!(
                channel.durable_ack(id).is_none(),
                "settled: no longer in flight"
            );
        }
        store.flush().await.expect("flushed");
        assert_eq!(channel.stats().depth, 0, "{:?}", channel.stats());
        assert_eq!(channel.stats().in_flight, 0);
    }
    let store = dir.open();
    let channel = orders(&store);
    assert_eq!(channel.stats().depth, 0, "nothing comes back");
    let table = store.store().table("seen").expect("the key table");
    assert_eq!(table.entries().expect("readable").len(), 2);
}

#[test]
fn a_memory_channel_has_no_durable_ack() {
    let channel = PointToPoint::new("orders", 4).expect("a channel");
    let msg = Message::new("x");
    assert!(channel.durable_ack(msg.id()).is_none());
}
