//! Stopping the Aggregator: each `OnStop` choice for the groups still open, and that the
//! aggregator goes on working after a stop.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use eip_core::Message;
use eip_steps::aggregate::{
    Aggregator, AggregatorBuilder, ConfigProblem, INCOMPLETE, IncompleteGroup, OnStop, Stopped,
};
use tower::{Service, ServiceExt};

/// Records what it is sent.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Message>>>);

impl Collect {
    fn payloads(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .iter()
            .map(|m| m.payload_str().unwrap_or("").to_owned())
            .collect()
    }
}

impl Service<Message> for Collect {
    type Response = ();
    type Error = Infallible;
    type Future = Ready<Result<(), Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, msg: Message) -> Self::Future {
        self.0.lock().unwrap().push(msg);
        std::future::ready(Ok(()))
    }
}

fn msg(group: &str, payload: &str) -> Message {
    Message::builder(payload.to_owned())
        .correlation_id(group)
        .build()
}

/// An aggregator of groups of 3 built by `builder`, sent `1` and `2` in group `a` and `10` in
/// group `b`: two groups open.
async fn two_open_groups(builder: AggregatorBuilder) -> (Aggregator<Collect>, Collect) {
    let out = Collect::default();
    let config = builder.complete_at_size(3).build().unwrap();
    let mut agg = Aggregator::new(out.clone(), config);
    for (group, payload) in [("a", "1"), ("b", "10"), ("a", "2")] {
        agg.ready()
            .await
            .unwrap()
            .call(msg(group, payload))
            .await
            .unwrap();
    }
    assert_eq!(agg.open_groups(), 2);
    (agg, out)
}

#[tokio::test]
async fn by_default_a_stop_releases_every_open_group_oldest_first() {
    let (agg, out) = two_open_groups(Aggregator::builder()).await;
    let stopped = agg.stop().await;
    assert_eq!(
        stopped,
        Stopped {
            action: OnStop::Release,
            groups: 2,
            messages: 3
        }
    );
    assert!(stopped.acted());
    assert_eq!(stopped.to_string(), "2 open groups released (3 messages)");
    assert_eq!(out.payloads(), ["[1,2]", "[10]"]);
    assert_eq!(agg.open_groups(), 0);
    let stats = agg.stats();
    assert_eq!((stats.stopped, stats.released_incomplete), (2, 2));
    assert_eq!(stats.timed_out, 0);
}

#[tokio::test]
async fn a_stop_can_send_the_open_groups_to_the_dead_letters_as_incomplete() {
    let dead: Arc<Mutex<Vec<IncompleteGroup>>> = Arc::default();
    let sink = dead.clone();
    let builder = Aggregator::builder()
        .on_stop(OnStop::DeadLetter)
        .dead_letter_callback(move |g| sink.lock().unwrap().push(g));
    let (agg, out) = two_open_groups(builder).await;
    assert_eq!(agg.stop().await.groups, 2);
    assert!(out.payloads().is_empty());
    let dead = dead.lock().unwrap();
    let keys: Vec<&str> = dead.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["a", "b"]);
    assert!(dead.iter().all(|g| g.reason == INCOMPLETE));
    assert_eq!(dead[0].detail, "given up (stop) with 2 messages");
    assert_eq!(agg.stats().dead_lettered, 3);
}

#[tokio::test]
async fn a_stop_can_drop_the_open_groups_and_counts_what_it_dropped() {
    let (agg, out) = two_open_groups(Aggregator::builder().on_stop(OnStop::Drop)).await;
    let stopped = agg.stop().await;
    assert!(stopped.acted());
    assert!(out.payloads().is_empty());
    assert_eq!(agg.open_groups(), 0);
    assert_eq!((agg.stats().stopped, agg.stats().dropped), (2, 3));
}

#[tokio::test]
async fn a_stop_that_keeps_the_groups_leaves_them_open() {
    let (agg, out) = two_open_groups(Aggregator::builder().on_stop(OnStop::Keep)).await;
    let stopped = agg.stop().await;
    assert!(!stopped.acted(), "nothing handed on");
    assert_eq!(stopped.to_string(), "2 open groups kept");
    assert!(out.payloads().is_empty());
    assert_eq!(agg.open_groups(), 2);
}

#[tokio::test]
async fn after_a_stop_a_new_message_opens_a_group_that_the_next_stop_releases() {
    let (mut agg, out) = two_open_groups(Aggregator::builder()).await;
    agg.stop().await;
    assert_eq!(out.payloads().len(), 2);
    agg.ready()
        .await
        .unwrap()
        .call(msg("a", "3"))
        .await
        .unwrap();
    assert_eq!(agg.open_groups(), 1, "a new group, not the one released");
    assert_eq!(agg.stop().await.groups, 1);
    assert_eq!(out.payloads(), ["[3]"]);
    assert!(!agg.stop().await.acted(), "nothing open any more");
    assert_eq!(
        Stopped {
            action: OnStop::Release,
            groups: 1,
            messages: 1
        }
        .to_string(),
        "1 open group released (1 message)"
    );
}

#[test]
fn dead_letters_at_stop_need_a_dead_letter_destination() {
    let err = Aggregator::builder()
        .complete_at_size(2)
        .on_stop(OnStop::DeadLetter)
        .build()
        .unwrap_err();
    assert_eq!(err.0, [ConfigProblem::NoDeadLetters]);
}
