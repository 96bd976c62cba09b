//! Stopping a consumer is bounded whatever it is waiting for: a delivery waiting out its
//! redelivery backoff is given back at once, unacknowledged; a call still in progress when the
//! time to finish it is up is abandoned, its delivery given back too. On a durable channel what
//! was given back is still there after the store is reopened, delivered again, marked
//! redelivered.
//!
//! These tests run on the real clock: a paused test clock would skip an hour's backoff by
//! itself and hide the very wait they are about.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::PointToPoint;
use eip_core::endpoint::{Consumer, RedeliveryPolicy, Stopped};
use eip_core::store::durable::{Durable, StoreConfig};
use tower::service_fn;

/// Far longer than any test may take: a shutdown that waits for it fails the test.
const HOUR: Duration = Duration::from_secs(3600);
/// The generous bound a shutdown that must happen is given.
const BOUND: Duration = Duration::from_secs(5);

/// A service failing every call, counting them.
fn always_failing(
    calls: &Arc<AtomicUsize>,
) -> impl tower::Service<
    Message,
    Response = (),
    Error = String,
    Future = std::future::Ready<Result<(), String>>,
> + Send
+ 'static {
    let calls = calls.clone();
    service_fn(move |_msg: Message| {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err::<(), _>("the ledger is down".to_owned()))
    })
}

/// Waits (bounded) until `calls` reaches `n`.
async fn called(calls: &AtomicUsize, n: usize) {
    tokio::time::timeout(BOUND, async {
        while calls.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the service was called in time");
}

#[tokio::test]
async fn a_consumer_in_redelivery_backoff_stops_at_once_giving_the_message_back() {
    let invoices = PointToPoint::builder("invoices")
        .redelivery(RedeliveryPolicy::fixed(5, HOUR))
        .build()
        .expect("channel builds");
    let calls = Arc::new(AtomicUsize::new(0));
    let consumer = Consumer::new(invoices.receiver(), always_failing(&calls)).spawn();
    let sent = Message::new("invoice 17");
    invoices.send(sent.clone()).await.expect("sent");
    called(&calls, 1).await;

    let stopped = tokio::time::timeout(BOUND, consumer.shutdown())
        .await
        .expect("shutdown does not wait out an hour's backoff");
    assert_eq!(
        stopped,
        Stopped {
            given_back: 1,
            abandoned: 0
        }
    );
    let stats = invoices.stats();
    assert_eq!((stats.depth, stats.in_flight, stats.acked), (1, 0, 0));
    let again = invoices
        .receiver()
        .try_recv()
        .expect("the message is back at the head");
    assert_eq!(again.message().id(), sent.id());
    assert_eq!(again.message().redelivery_count().expect("a count"), 1);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "not tried again on the way out"
    );
}

#[tokio::test]
async fn a_call_still_in_progress_when_the_time_is_up_is_abandoned_and_its_message_given_back() {
    let lookups = PointToPoint::new("lookups", 10).expect("channel builds");
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    // A call that never answers (a server that accepted the connection and went silent).
    let hangs = service_fn(move |_msg: Message| {
        counter.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<(), String>>()
    });
    let consumer = Consumer::new(lookups.receiver(), hangs).spawn();
    let sent = Message::new("lookup 1");
    lookups.send(sent.clone()).await.expect("sent");
    called(&started, 1).await;

    let stopped = tokio::time::timeout(BOUND, consumer.shutdown_within(Duration::from_millis(100)))
        .await
        .expect("shutdown is bounded by its limit");
    assert_eq!(
        stopped,
        Stopped {
            given_back: 0,
            abandoned: 1
        }
    );
    let again = lookups.receiver().try_recv().expect("the message is back");
    assert_eq!(again.message().id(), sent.id());
    assert_eq!(again.message().redelivery_count().expect("a count"), 1);
}

#[tokio::test]
async fn a_call_that_finishes_within_the_limit_is_settled_not_abandoned() {
    let jobs = PointToPoint::new("jobs", 10).expect("channel builds");
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    let slow = service_fn(move |_msg: Message| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<(), String>(())
        }
    });
    let consumer = Consumer::new(jobs.receiver(), slow).spawn();
    jobs.send(Message::new("job")).await.expect("sent");
    called(&started, 1).await;

    let stopped = tokio::time::timeout(BOUND, consumer.shutdown_within(BOUND))
        .await
        .expect("shutdown ends");
    assert_eq!(stopped, Stopped::default());
    let stats = jobs.stats();
    assert_eq!((stats.acked, stats.depth, stats.in_flight), (1, 0, 0));
}

#[tokio::test]
async fn a_call_failing_while_the_consumer_stops_is_given_back_without_its_backoff() {
    let jobs = PointToPoint::builder("jobs")
        .redelivery(RedeliveryPolicy::fixed(5, HOUR))
        .build()
        .expect("channel builds");
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    // Fails, but only after the consumer was told to stop.
    let fails_late = service_fn(move |_msg: Message| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err::<(), _>("failed".to_owned())
        }
    });
    let consumer = Consumer::new(jobs.receiver(), fails_late).spawn();
    jobs.send(Message::new("job")).await.expect("sent");
    called(&started, 1).await;

    let stopped = tokio::time::timeout(BOUND, consumer.shutdown_within(BOUND))
        .await
        .expect("shutdown does not start an hour's backoff");
    assert_eq!(stopped.given_back, 1);
    assert_eq!(jobs.stats().depth, 1);
}

/// A data directory of its own, removed at the end.
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> Self {
        DataDir(std::env::temp_dir().join(format!(
            "eip-consumer-shutdown-{name}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        )))
    }

    fn channel(&self) -> (Arc<Durable>, PointToPoint) {
        let store =
            Arc::new(Durable::open(&self.0, StoreConfig::default()).expect("the store opens"));
        let channel = PointToPoint::builder("payments")
            .capacity(100)
            .redelivery(RedeliveryPolicy::fixed(5, HOUR))
            .store(store.clone())
            .build()
            .expect("channel builds");
        (store, channel)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_message_in_backoff_on_a_durable_channel_is_delivered_again_after_reopening() {
    let dir = DataDir::new("backoff");
    let sent = Message::new("payment 9");
    {
        let (store, payments) = dir.channel();
        let calls = Arc::new(AtomicUsize::new(0));
        let consumer = Consumer::new(payments.receiver(), always_failing(&calls)).spawn();
        payments.send(sent.clone()).await.expect("sent");
        called(&calls, 1).await;
        let stopped = tokio::time::timeout(BOUND, consumer.shutdown_within(Duration::ZERO))
            .await
            .expect("shutdown does not wait out the backoff");
        assert_eq!(stopped.given_back, 1);
        assert_eq!(payments.stats().acked, 0);
        store.flush().await.expect("the store writes what it holds");
    }
    let (_store, payments) = dir.channel();
    assert_eq!(payments.stats().depth, 1);
    let mut receiver = payments.receiver();
    let again = tokio::time::timeout(BOUND, receiver.recv())
        .await
        .expect("delivered again")
        .expect("the channel is open");
    assert_eq!(again.message().id(), sent.id());
    assert_eq!(again.message().payload(), sent.payload());
    assert!(
        again.message().redelivery_count().expect("a count") >= 1,
        "marked redelivered"
    );
    again.ack();
}
