//! A run of messages through a broker restart, the machinery every test of `restart.rs`
//! shares: the outbox and its confirmations, arrivals counted by id, the producer, and the
//! run itself (stall, burst, stop, start, more, count).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use eip_adapters::bridge::Backoff;
use eip_core::channel::{PointToPoint, RedeliveryPolicy};
use eip_core::message::{Message, MessageId};

use super::broker::{Broker, Restart};
use super::proxy;

/// The most a test may take, restart included.
pub(crate) const LIMIT: Duration = Duration::from_secs(90);

/// Quick reconnections, so the flow resumes soon after the broker is back.
pub(crate) fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(1))
}

/// A tag unique to this test run, fit for any broker's names.
pub(crate) fn tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{name}_{}_{nanos}", std::process::id())
}

/// Runs `test` within [`LIMIT`]; a test past it fails (and its guard starts its broker again).
pub(crate) async fn bounded(label: &str, test: impl Future<Output = ()>) {
    if tokio::time::timeout(LIMIT, test).await.is_err() {
        panic!("{label}: not done within {LIMIT:?}");
    }
}

/// Takes `broker` for this test (blocking while another process restarts it).
pub(crate) fn take(broker: &Broker) -> Restart {
    tokio::task::block_in_place(|| broker.take())
}

/// The channel an outbound bridge's consumer reads: room for every message, and retries enough
/// to outlast a broker's restart.
pub(crate) fn patient_outbox() -> PointToPoint {
    PointToPoint::builder("outbox")
        .capacity(10_000)
        .redelivery(RedeliveryPolicy {
            max_attempts: 10_000,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(500),
            ..RedeliveryPolicy::default()
        })
        .build()
        .expect("the outbox builds")
}

/// Which messages the broker confirmed before it was back from its restart: an outbound
/// bridge wrapped by [`Confirms::wrap`] records the id of each successful call made before
/// [`restarted`](Confirms::restarted). A call made after went to the new broker process.
#[derive(Clone, Default)]
pub(crate) struct Confirms {
    pub(crate) restarted: Arc<AtomicBool>,
    pub(crate) before: Arc<Mutex<HashSet<MessageId>>>,
}

impl Confirms {
    pub(crate) fn wrap<S>(&self, inner: S) -> Marked<S> {
        Marked {
            inner,
            confirms: self.clone(),
        }
    }

    pub(crate) fn restarted(&self) {
        self.restarted.store(true, Ordering::SeqCst);
    }

    pub(crate) fn before(&self) -> HashSet<MessageId> {
        self.before.lock().expect("not poisoned").clone()
    }
}

/// An outbound bridge recording its confirms in [`Confirms`].
#[derive(Clone)]
pub(crate) struct Marked<S> {
    pub(crate) inner: S,
    pub(crate) confirms: Confirms,
}

impl<S> tower::Service<Message> for Marked<S>
where
    S: tower::Service<Message>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let id = msg.id();
        let before = !self.confirms.restarted.load(Ordering::SeqCst);
        let confirms = self.confirms.clone();
        let call = self.inner.call(msg);
        Box::pin(async move {
            let result = call.await;
            if result.is_ok() && before {
                confirms.before.lock().expect("not poisoned").insert(id);
            }
            result
        })
    }
}

/// What came out of the inbound bridge: how many times each id.
#[derive(Clone, Default)]
pub(crate) struct Arrivals(Arc<Mutex<HashMap<MessageId, usize>>>);

impl Arrivals {
    /// Counts (and acks) what arrives on `inbox` until the task is aborted.
    pub(crate) fn count(&self, inbox: &PointToPoint) -> tokio::task::JoinHandle<()> {
        let mut receiver = inbox.receiver();
        let arrivals = self.clone();
        tokio::spawn(async move {
            while let Some(delivery) = receiver.recv().await {
                *arrivals.lock().entry(delivery.message().id()).or_default() += 1;
                delivery.ack();
            }
        })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<MessageId, usize>> {
        self.0.lock().expect("not poisoned")
    }

    pub(crate) fn distinct(&self) -> usize {
        self.lock().len()
    }
}

/// How a run through a restart went.
pub(crate) struct Run {
    pub(crate) sent: Vec<MessageId>,
    pub(crate) confirmed: u64,
    /// Confirmed by the broker process that was stopped (or just before the new one was seen).
    pub(crate) before: HashSet<MessageId>,
    pub(crate) arrived: HashMap<MessageId, usize>,
    pub(crate) restarts: usize,
    /// Confirmed and arrived once the broker was down.
    pub(crate) at_down: (u64, usize),
    /// Connections the inbound bridge made (or tried) through its proxy.
    pub(crate) inbound_connections: u64,
    pub(crate) stopped_in: Duration,
    pub(crate) started_in: Duration,
    pub(crate) took: Duration,
}

impl Run {
    pub(crate) fn lost(&self) -> Vec<MessageId> {
        self.sent
            .iter()
            .filter(|id| !self.arrived.contains_key(id))
            .copied()
            .collect()
    }

    pub(crate) fn duplicates(&self) -> usize {
        self.arrived.values().map(|n| n - 1).sum()
    }

    /// The restart's timings and the test's, for the printed line.
    pub(crate) fn timings(&self) -> String {
        format!(
            "down in {:.1} s with {} confirmed, {} arrived; up again in {:.1} s; {} inbound connections; {:.1} s in all",
            self.stopped_in.as_secs_f64(),
            self.at_down.0,
            self.at_down.1,
            self.started_in.as_secs_f64(),
            self.inbound_connections,
            self.took.as_secs_f64()
        )
    }

    /// Prints the line of a broker that keeps what it confirmed, and fails on any loss.
    pub(crate) fn check(&self, name: &str) {
        let lost = self.lost();
        println!(
            "restart {name}: {} restart, {} sent, {} confirmed, {} lost, {} duplicates ({})",
            self.restarts,
            self.sent.len(),
            self.confirmed,
            lost.len(),
            self.duplicates(),
            self.timings()
        );
        assert_eq!(self.restarts, 1, "{name}: the broker was restarted once");
        assert_eq!(
            self.confirmed,
            self.sent.len() as u64,
            "{name}: every message confirmed"
        );
        assert!(lost.is_empty(), "{name}: {} messages lost", lost.len());
    }
}

/// Sends messages to `outbox`, about 500 a second, until `last` says how many in all.
pub(crate) fn produce(
    outbox: PointToPoint,
    sent: Arc<Mutex<Vec<MessageId>>>,
    mut last: tokio::sync::watch::Receiver<Option<usize>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for i in 0.. {
            if last.borrow_and_update().is_some_and(|last| i >= last) {
                return;
            }
            let msg = Message::new(format!("{i}").into_bytes());
            sent.lock().expect("not poisoned").push(msg.id());
            outbox.send(msg).await.expect("the outbox takes it");
            if i % 5 == 4 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    })
}

/// Sends messages through `outbox` (read by an outbound bridge wrapped by `confirms`), about
/// 500 a second, and counts what comes to `inbox` (fed by the inbound bridge). Once 300 came
/// back, `flow.burst` more are sent at once and the broker of `restart` is stopped, then
/// started again while messages keep coming; `flow.after` more are sent once it accepts
/// connections. Then waits at most 30 s for every message to be confirmed and to arrive (but
/// not for those confirmed before the restart by a broker that does not keep them), and
/// `flow.late` for duplicates still on their way.
///
/// The inbound bridge reaches the broker through `inbound`, which is stalled from the burst
/// until the broker is down: the broker then holds what it confirmed meanwhile when it stops,
/// and the restart shows whether it kept it.
pub(crate) async fn through_a_restart(
    restart: &mut Restart,
    outbox: &PointToPoint,
    inbox: &PointToPoint,
    confirms: &Confirms,
    flow: Flow,
    inbound: &proxy::Proxy,
) -> Run {
    let began = Instant::now();
    let arrivals = Arrivals::default();
    let counting = arrivals.count(inbox);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let (last, told) = tokio::sync::watch::channel(None);
    let producing = produce(outbox.clone(), sent.clone(), told);
    let flowing = tokio::time::Instant::now() + Duration::from_secs(10);
    while arrivals.distinct() < 300 {
        assert!(
            tokio::time::Instant::now() < flowing,
            "{} of 300 messages came back within 10 s, before any restart",
            arrivals.distinct()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The inbound bridge held, a burst on top: the broker stops with a backlog of what it
    // confirmed, and more on its way in both bridges.
    inbound.stall(true);
    let held = outbox.stats().acked;
    for i in 0..flow.burst {
        let msg = Message::new(format!("burst {i}").into_bytes());
        sent.lock().expect("not poisoned").push(msg.id());
        outbox.send(msg).await.expect("the outbox takes it");
    }
    let backlog = tokio::time::Instant::now() + Duration::from_secs(10);
    while outbox.stats().acked < held + flow.burst as u64 / 2
        && tokio::time::Instant::now() < backlog
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stopped_in = tokio::task::block_in_place(|| restart.stop());
    let at_down = (outbox.stats().acked, arrivals.distinct());
    inbound.stall(false);
    let started_in = tokio::task::block_in_place(|| restart.start());
    confirms.restarted();
    let _ = last.send(Some(sent.lock().expect("not poisoned").len() + flow.after));
    producing.await.expect("the producer ends");
    let sent = sent.lock().expect("not poisoned").clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        let before = confirms.before();
        let expected = |id: &&MessageId| flow.keeps_confirmed || !before.contains(id);
        let arrived = {
            let arrived = arrivals.lock();
            sent.iter()
                .filter(expected)
                .all(|id| arrived.contains_key(id))
        };
        if arrived && outbox.stats().acked >= sent.len() as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(flow.late).await;
    counting.abort();
    let arrived = arrivals.lock().clone();
    Run {
        sent,
        confirmed: outbox.stats().acked,
        before: confirms.before(),
        arrived,
        restarts: restart.restarts(),
        at_down,
        inbound_connections: inbound.accepted(),
        stopped_in,
        started_in,
        took: began.elapsed(),
    }
}

/// The shape of a run through a restart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    /// How many messages are sent at once just before the broker is stopped.
    pub(crate) burst: usize,
    /// How many are sent once it is back.
    pub(crate) after: usize,
    /// Whether the broker keeps what it confirmed across a restart.
    pub(crate) keeps_confirmed: bool,
    /// How long to keep counting after the last message came, for duplicates.
    pub(crate) late: Duration,
}

/// The flow of a broker that keeps what it confirmed.
pub(crate) const FLOW: Flow = Flow {
    burst: 500,
    after: 500,
    keeps_confirmed: true,
    late: Duration::from_secs(1),
};
