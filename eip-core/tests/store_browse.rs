//! Browsing stores through their channels: pages in delivery order, the total, a selector
//! counting only what it selects, messages in flight left out, and nothing taken, on memory
//! and durable channels, a publish-subscribe channel's subscriptions, and a durable queue
//! after a restart (its unread records read from disk, marked redelivered as a take would).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{PointToPoint, PublishSubscribe, Selector};
use eip_core::store::durable::{Durable, StoreConfig};

struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "eip-browse-{name}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        DataDir(dir)
    }

    fn open(&self) -> Arc<Durable> {
        Arc::new(Durable::open(&self.0, StoreConfig::default()).expect("store opens"))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn payloads(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.payload_str().map(str::to_owned))
        .collect()
}

fn even() -> Selector {
    Selector::new("even", |m: &Message| {
        m.payload_str()
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 0)
    })
}

/// Pages through `channel` holding 0..600 (more than a durable queue keeps in memory), takes
/// the first two (in flight: no longer shown) and checks every message browsed is still
/// delivered, in order.
async fn pages_in_order_and_takes_nothing(channel: &PointToPoint) {
    for n in 0..600 {
        channel
            .send(Message::new(n.to_string()))
            .await
            .expect("sent");
    }
    let page = channel.browse(None, 0, 3).expect("browsable");
    assert_eq!(
        (page.total, payloads(&page.messages)),
        (600, vec!["0".into(), "1".into(), "2".into()])
    );
    let far = channel.browse(None, 590, 20).expect("browsable");
    assert_eq!(far.total, 600);
    assert_eq!(
        payloads(&far.messages).first().map(String::as_str),
        Some("590")
    );
    assert_eq!(far.messages.len(), 10);
    let selected = channel.browse(Some(&even()), 2, 2).expect("browsable");
    assert_eq!(
        (selected.total, payloads(&selected.messages)),
        (300, vec!["4".into(), "6".into()])
    );

    let mut receiver = channel.receiver();
    let first = receiver.recv().await.expect("the first");
    let second = receiver.recv().await.expect("the second");
    let page = channel.browse(None, 0, 1).expect("browsable");
    assert_eq!(page.total, 598, "in flight is not waiting");
    assert_eq!(payloads(&page.messages), ["2"]);
    // Given back to the head, it waits (and shows) first again.
    second.nack();
    first.ack();
    let page = channel.browse(None, 0, 1).expect("browsable");
    assert_eq!(
        (page.total, payloads(&page.messages)),
        (599, vec!["1".into()])
    );

    let mut got = Vec::new();
    for _ in 0..599 {
        let delivery = tokio::time::timeout(Duration::from_secs(5), receiver.recv())
            .await
            .expect("a message within 5 s")
            .expect("open");
        got.push(
            delivery
                .message()
                .payload_str()
                .unwrap_or_default()
                .to_owned(),
        );
        delivery.ack();
    }
    let expected: Vec<String> = (1..600).map(|n| n.to_string()).collect();
    assert_eq!(got, expected, "browsing took nothing and kept the order");
    assert_eq!(channel.browse(None, 0, 10).expect("browsable").total, 0);
}

#[tokio::test]
async fn a_memory_channel_pages_in_order_and_takes_nothing() {
    let channel = PointToPoint::new("orders", 1000).expect("a channel");
    pages_in_order_and_takes_nothing(&channel).await;
}

#[tokio::test]
async fn a_durable_channel_pages_in_order_and_takes_nothing() {
    let dir = DataDir::new("p2p");
    let store = dir.open();
    let channel = PointToPoint::builder("orders")
        .capacity(1000)
        .store(store.clone())
        .build()
        .expect("a channel");
    pages_in_order_and_takes_nothing(&channel).await;
}

#[tokio::test]
async fn a_durable_queue_is_browsed_from_disk_after_a_restart() {
    let dir = DataDir::new("restart");
    let ids = {
        let store = dir.open();
        let channel = PointToPoint::builder("orders")
            .store(store.clone())
            .build()
            .expect("a channel");
        let mut ids = Vec::new();
        for n in 0..3 {
            let msg = Message::new(n.to_string());
            ids.push(msg.id());
            channel.send(msg).await.expect("on disk");
        }
        ids
    };
    let store = dir.open();
    let channel = PointToPoint::builder("orders")
        .store(store.clone())
        .build()
        .expect("a channel");
    let page = channel.browse(None, 1, 5).expect("browsable");
    assert_eq!(page.total, 3);
    assert_eq!(
        page.messages.iter().map(Message::id).collect::<Vec<_>>(),
        ids[1..]
    );
    assert!(
        page.messages
            .iter()
            .all(|m| m.redelivery_count().ok() == Some(1)),
        "shown as a take delivers them: redelivered"
    );
    let delivery = channel.receiver().recv().await.expect("the first");
    assert_eq!(delivery.message().id(), ids[0]);
    delivery.ack();
    assert_eq!(channel.browse(None, 0, 5).expect("browsable").total, 2);
}

#[tokio::test]
async fn each_subscription_shows_what_its_subscriber_has_not_taken() {
    let dir = DataDir::new("topic");
    let store = dir.open();
    let memory = PublishSubscribe::new("prices", 100).expect("a channel");
    let durable = PublishSubscribe::builder("quotes")
        .store(store.clone())
        .build()
        .expect("a channel");
    for channel in [&memory, &durable] {
        let mut fast = match channel.is_durable() {
            true => channel.durable_subscribe("fast"),
            false => channel.subscribe(),
        };
        let _slow = channel.subscribe();
        for n in 0..4 {
            channel
                .publish(Message::new(n.to_string()))
                .await
                .expect("published");
        }
        let taken = fast.recv().await.expect("one");
        taken.ack();
        let pages = channel.browse(None, 1, 10);
        assert_eq!(pages.len(), 2);
        let fast_page = pages[0].page.as_ref().expect("browsable");
        let slow_page = pages[1].page.as_ref().expect("browsable");
        // The fast subscriber took one (and may hold a few prefetched: in flight, not shown).
        assert!(fast_page.total <= 3, "{}", fast_page.total);
        assert_eq!(slow_page.total, 4);
        assert_eq!(payloads(&slow_page.messages), ["1", "2", "3"]);
        let name = channel.is_durable().then(|| "fast".to_owned());
        assert_eq!(pages[0].name, name);
        assert_eq!(pages[1].name, None);
        assert_eq!(
            channel.browse(None, 0, 10)[1]
                .page
                .as_ref()
                .map(|p| p.total)
                .ok(),
            Some(4),
            "a second look sees the same"
        );
    }
}
