//! Joins across processes on channels kept in JetStream: hop counts kept, each message stored
//! once per channel. `EIP_SKIP_BROKERS=1` skips them and says so.

#[path = "support/stores.rs"]
#[allow(dead_code)] // each test file uses some of them
mod stores;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use eip_adapters::store::JetStream;
use eip_core::channel::{Channel, PublishSubscribe, Subscriber, all_ready};
use eip_core::message::{Message, MessageId};

use stores::*;

/// A publish-subscribe channel `name` in the JetStream stream `stream`: one process's view.
fn in_stream(name: &str, stream: &str) -> PublishSubscribe {
    PublishSubscribe::builder(name)
        .store(Arc::new(
            JetStream::fan_out(NATS, stream).expect("a stream name"),
        ))
        .build()
        .expect("a channel kept in JetStream")
}

/// What `subscriber` receives within `quiet` of the last message (acking each), by id.
async fn observed(mut subscriber: Subscriber, quiet: Duration) -> HashMap<MessageId, usize> {
    let mut seen = HashMap::new();
    while let Ok(Some(delivery)) = tokio::time::timeout(quiet, subscriber.recv()).await {
        *seen.entry(delivery.message().id()).or_insert(0) += 1;
        delivery.ack();
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_across_processes_keep_hop_counts_and_store_once_per_channel() {
    use eip_core::join::Join;
    if !brokers("joins across processes").await {
        return;
    }
    let streams: Vec<String> = ["L1", "L2", "C1", "C2", "C3"]
        .iter()
        .map(|s| unique(s))
        .collect();
    let [l1, l2, c1, c2, c3] = [0, 1, 2, 3, 4].map(|i| streams[i].as_str());
    // Process a: channel0 in memory, joined into the loop and into the chain.
    let loop_entry = PublishSubscribe::new("loop0", 64).expect("a channel");
    let chain_entry = PublishSubscribe::new("chain0", 64).expect("a channel");
    let a_l1 = in_stream("loop1", l1);
    let a_c1 = in_stream("chain1", c1);
    Join::builder(loop_entry.clone(), a_l1.clone())
        .create()
        .expect("a join into the loop");
    Join::builder(chain_entry.clone(), a_c1.clone())
        .hops(1)
        .create()
        .expect("a join into the chain, hop count 1");
    // Process b: loop1 ⇄ loop2, and chain1 → chain2 → chain3.
    let (b_l1, b_l2) = (in_stream("loop1", l1), in_stream("loop2", l2));
    Join::builder(b_l1.clone(), b_l2.clone())
        .create()
        .expect("loop1 -> loop2");
    Join::builder(b_l2.clone(), b_l1.clone())
        .create()
        .expect("loop2 -> loop1");
    let (b_c1, b_c2, b_c3) = (
        in_stream("chain1", c1),
        in_stream("chain2", c2),
        in_stream("chain3", c3),
    );
    Join::builder(b_c1.clone(), b_c2.clone())
        .create()
        .expect("chain1 -> chain2");
    Join::builder(b_c2.clone(), b_c3.clone())
        .create()
        .expect("chain2 -> chain3");
    // A third process watches what each channel stores.
    let watched = [
        in_stream("loop1", l1),
        in_stream("loop2", l2),
        in_stream("chain1", c1),
        in_stream("chain2", c2),
        in_stream("chain3", c3),
    ];
    let watchers = watched.clone().map(|c| c.durable_subscribe("observer"));
    let watched = watched.map(Channel::from);
    all_ready(&watched, Duration::from_secs(10))
        .await
        .expect("every subscription is made");
    let mut sent = Vec::new();
    for i in 0..20 {
        let msg = Message::new(format!("event {i}"));
        sent.push(msg.id());
        loop_entry
            .publish(msg.clone())
            .await
            .expect("published into the loop");
        chain_entry
            .publish(msg)
            .await
            .expect("published into the chain");
    }
    let mut seen = Vec::new();
    for watcher in watchers {
        seen.push(observed(watcher, Duration::from_secs(3)).await);
    }
    let stored = |i: usize| sent.iter().filter(|id| seen[i].contains_key(id)).count();
    let twice = |i: usize| seen[i].values().filter(|n| **n > 1).count();
    println!(
        "joins across processes: 20 events; loop1 {} ({} twice), loop2 {} ({} twice); chain1 {}, chain2 {}, chain3 {}",
        stored(0),
        twice(0),
        stored(1),
        twice(1),
        stored(2),
        stored(3),
        stored(4)
    );
    assert_eq!(
        (stored(0), stored(1)),
        (20, 20),
        "the loop stores every event"
    );
    assert_eq!(
        (twice(0), twice(1)),
        (0, 0),
        "each once per channel, for all the loop"
    );
    assert_eq!(
        (stored(2), stored(3)),
        (20, 20),
        "hop count 1: one intermediate store, one more"
    );
    assert_eq!(stored(4), 0, "and no further");
    assert!(
        seen.iter().all(|s| s.len() <= 20),
        "no event that was not sent"
    );
    for stream in &streams {
        clean_up(&[], None, Some(stream)).await;
    }
}
