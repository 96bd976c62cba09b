//! A store that implements only what a store is (the required methods of `MessageStore`)
//! keeps a channel with every guarantee: the rest (a waiting push, release, giving back a
//! prefetch, parking, ready) comes from the trait's defaults and the channel's side.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::{Channel, DeadLetterChannel, PointToPoint, Selector, all_ready};
use eip_core::message::DeathReason;
use eip_core::store::memory::Queue;
use eip_core::store::{
    Backend, BackendError, MessageStore, Overflow, Push, Select, StoreStats, Take, Waiting,
};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// Only the required methods, each handed to a memory queue: no parking, so receivers wait
/// through `take`; pushes wait through the default `push`.
struct Minimal(Queue);

impl MessageStore for Minimal {
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn try_push(&self, msg: Message) -> Push {
        self.0.try_push(msg)
    }
    fn force_push(&self, msg: Message) -> Result<(), Message> {
        self.0.force_push(msg)
    }
    fn accepts_now(&self) -> bool {
        self.0.accepts_now()
    }
    fn writable(&self) -> Waiting<'_, ()> {
        self.0.writable()
    }
    fn try_take(
        &self,
        select: Option<&dyn Select>,
        max: usize,
        into: &mut VecDeque<Message>,
    ) -> Take {
        self.0.try_take(select, max, into)
    }
    fn take<'a>(
        &'a self,
        select: Option<&'a dyn Select>,
        max: usize,
        into: &'a mut VecDeque<Message>,
    ) -> Waiting<'a, bool> {
        self.0.take(select, max, into)
    }
    fn settle(&self, msg: &Message) {
        self.0.settle(msg)
    }
    fn requeue(&self, msg: Message) -> Result<(), Message> {
        self.0.requeue(msg)
    }
    fn purge(&self, select: Option<&dyn Select>) -> usize {
        self.0.purge(select)
    }
    fn close(&self) -> Vec<Message> {
        self.0.close()
    }
    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
    fn stats(&self) -> StoreStats {
        self.0.stats()
    }
}

#[derive(Debug)]
struct MinimalBackend;

impl Backend for MinimalBackend {
    fn is_durable(&self) -> bool {
        false
    }
    fn open(
        &self,
        _name: &str,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        Ok(Arc::new(Minimal(Queue::new(capacity, overflow))))
    }
    fn names(&self, _prefix: &str) -> Vec<String> {
        Vec::new()
    }
    fn remove(&self, _name: &str) -> Waiting<'_, Result<(), BackendError>> {
        Box::pin(std::future::ready(Ok(())))
    }
    fn location(&self) -> String {
        "minimal".to_owned()
    }
}

fn channel(name: &str, capacity: usize) -> (PointToPoint, PointToPoint) {
    let dead = PointToPoint::new(&format!("{name}.dead"), 16).expect("a dead letter channel");
    let channel = PointToPoint::builder(name)
        .capacity(capacity)
        .store(Arc::new(MinimalBackend))
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .build()
        .expect("a channel on the minimal store");
    (channel, dead)
}

#[tokio::test]
async fn a_send_to_a_full_minimal_store_waits_for_an_ack() {
    let (ch, _dead) = channel("full", 1);
    ch.send(Message::new("one")).await.expect("room for one");
    let ch2 = ch.clone();
    let second = tokio::spawn(async move { ch2.send(Message::new("two")).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!second.is_finished(), "the second send waits for room");
    let mut receiver = ch.receiver();
    let first = timeout(WAIT, receiver.recv()).await.expect("in time");
    first.expect("the first message").ack();
    timeout(WAIT, second)
        .await
        .expect("the second send completes once the first is acked")
        .expect("the task")
        .expect("stored");
    let next = timeout(WAIT, receiver.recv()).await.expect("in time");
    assert_eq!(
        next.expect("the second").message().payload_str(),
        Some("two")
    );
}

#[tokio::test]
async fn a_minimal_store_gives_back_a_dropped_prefetch_in_order() {
    let (ch, _dead) = channel("prefetch", 8);
    for i in 0..4 {
        ch.send(Message::new(format!("{i}"))).await.expect("stored");
    }
    let mut greedy = ch.receiver().with_prefetch(4);
    let first = timeout(WAIT, greedy.recv()).await.expect("in time");
    first.expect("one").ack();
    drop(greedy);
    let mut next = ch.receiver();
    let mut got = Vec::new();
    for _ in 0..3 {
        let delivery = timeout(WAIT, next.recv()).await.expect("in time");
        let delivery = delivery.expect("given back");
        got.push(delivery.message().payload_str().map(str::to_owned));
        delivery.ack();
    }
    let got: Vec<_> = got.into_iter().flatten().collect();
    assert_eq!(
        got,
        ["1", "2", "3"],
        "given back to the head in their order"
    );
}

#[tokio::test]
async fn a_minimal_store_redelivers_a_nack_and_dead_letters_a_reject() {
    let (ch, dead) = channel("settle", 8);
    ch.send(Message::new("again")).await.expect("stored");
    let mut receiver = ch.receiver();
    let first = timeout(WAIT, receiver.recv()).await.expect("in time");
    first.expect("a delivery").nack();
    let again = timeout(WAIT, receiver.recv()).await.expect("in time");
    let again = again.expect("redelivered");
    assert_eq!(again.message().redelivery_count().ok(), Some(1));
    again.reject("not wanted").await;
    let buried = timeout(WAIT, dead.receiver().recv())
        .await
        .expect("in time");
    let buried = buried.expect("dead-lettered");
    let death = buried
        .message()
        .death()
        .ok()
        .flatten()
        .expect("a death record");
    assert_eq!(death.reason, DeathReason::Rejected);
    assert_eq!(ch.stats().in_flight, 0, "the reject released it");
}

#[tokio::test]
async fn a_waiting_selective_receiver_on_a_minimal_store_gets_its_message() {
    let (ch, _dead) = channel("selective", 8);
    let mut blue = ch.selective_receiver(Selector::header_equals("color", "blue"));
    let mut red = ch.selective_receiver(Selector::header_equals("color", "red"));
    let blue = tokio::spawn(async move { blue.recv().await.map(|d| d.message().id()) });
    let red = tokio::spawn(async move { red.recv().await.map(|d| d.message().id()) });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let msg = Message::builder("b").header("color", "blue").build();
    let id = msg.id();
    ch.send(msg).await.expect("stored");
    let got = timeout(WAIT, blue).await.expect("woken in time");
    assert_eq!(got.expect("the task"), Some(id));
    red.abort();
}

#[tokio::test]
async fn a_minimal_store_is_ready_at_once() {
    let (ch, _dead) = channel("ready", 8);
    let flow = [Channel::from(ch)];
    assert_eq!(all_ready(&flow, Duration::from_millis(1)).await, Ok(()));
}
