//! A durable channel whose store is damaged delivers every intact message and sets the damaged
//! ones aside in the store's quarantine, with their bytes: it never stalls on them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::store::durable::{Durable, StoreConfig};

const MESSAGES: usize = 300;

/// A data directory of its own, removed at the end.
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> Self {
        DataDir(std::env::temp_dir().join(format!(
            "eip-durable-damage-{name}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        )))
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

fn orders(store: &Arc<Durable>) -> PointToPoint {
    PointToPoint::builder("orders")
        .capacity(10_000)
        .store(store.clone())
        .build()
        .expect("channel builds")
}

fn payload(i: usize) -> String {
    format!("order {i:04} {}", "x".repeat(100))
}

/// Sends `MESSAGES` messages to a durable channel in `dir`, then closes everything.
async fn fill(dir: &DataDir) {
    let store = dir.open();
    let channel = orders(&store);
    for i in 0..MESSAGES {
        channel.send(Message::new(payload(i))).await.expect("sent");
    }
}

/// Receives (and acks) until nothing comes for a second; the payloads in order.
async fn drain(channel: &PointToPoint) -> Vec<String> {
    let mut receiver = channel.receiver();
    let mut got = Vec::new();
    while let Ok(Some(delivery)) =
        tokio::time::timeout(Duration::from_secs(1), receiver.recv()).await
    {
        got.push(delivery.message().payload_str().unwrap_or("").to_string());
        delivery.ack();
    }
    got
}

#[tokio::test]
async fn a_damaged_message_is_set_aside_and_every_other_one_delivered() {
    let dir = DataDir::new("flipped");
    fill(&dir).await;
    let file = dir.0.join("store.redb");
    let mut bytes = std::fs::read(&file).unwrap();
    let marker = payload(100);
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .expect("message 100 is in the file");
    bytes[at + 20] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();

    let store = dir.open();
    let channel = orders(&store);
    let got = drain(&channel).await;
    let expected: Vec<String> = (0..MESSAGES).filter(|&i| i != 100).map(payload).collect();
    assert_eq!(got.len(), MESSAGES - 1, "every intact message is delivered");
    assert_eq!(got, expected, "in order");
    store.flush().await.unwrap();
    let quarantined = store.store().quarantined().unwrap();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(
        (quarantined[0].queue.as_str(), quarantined[0].seq),
        ("orders", 100)
    );
}

#[tokio::test]
async fn a_record_that_is_not_a_message_is_set_aside_with_its_bytes() {
    let dir = DataDir::new("garbage");
    fill(&dir).await;
    {
        // A record the store keeps intact but that does not decode as a message
        let store = dir.open();
        let log = store.store().queue("orders").unwrap();
        log.append(Bytes::from_static(b"\xffnot a message"))
            .unwrap()
            .await
            .unwrap();
    }
    let store = dir.open();
    let channel = orders(&store);
    let got = drain(&channel).await;
    assert_eq!(got, (0..MESSAGES).map(payload).collect::<Vec<_>>());
    store.flush().await.unwrap();
    let quarantined = store.store().quarantined().unwrap();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(quarantined[0].seq, MESSAGES as u64);
    assert_eq!(
        quarantined[0].bytes,
        Bytes::from_static(b"\xffnot a message")
    );
    assert!(
        quarantined[0].reason.contains("not a message"),
        "{}",
        quarantined[0].reason
    );
    assert_eq!(channel.stats().depth, 0, "nothing left behind");
}
