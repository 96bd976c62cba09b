//! Each broker really restarted in the middle of a stream, once per test: messages go out
//! through the outbound bridge and come back in through the inbound bridge while the broker
//! process is stopped and started again with its `.ci/run` command (see `support/broker.rs`).
//!
//! Every test runs the same way: messages flow at about 500 a second; once 300 came back, the
//! inbound bridge's connection (through a proxy the test controls) is stalled, a burst of 500
//! is sent, and once half of it is confirmed the broker is stopped: it goes down holding a
//! backlog it confirmed, with more in flight in both bridges. The stall is lifted, the broker
//! started again while messages keep coming (they wait in the outbox, retried), and 500 more
//! follow once it accepts connections. Then the test waits until every message was confirmed
//! and came back, counts what was lost and what came twice, and prints one line:
//! `restart rabbitmq: 1 restart, 4855 sent, 4855 confirmed, 0 lost, 37 duplicates (down in …
//! with 1110 confirmed, 300 arrived; …)`.
//!
//! What the broker keeps across a restart decides what "nothing lost" can mean:
//! - RabbitMQ: a durable exchange and queue, messages published persistent; a publisher
//!   confirm means on disk. Nothing confirmed may be lost.
//! - NATS: a JetStream stream on file storage (checked) with a durable consumer. Nothing may be
//!   lost.
//! - Mosquitto (`persistence true`, stopped with SIGTERM so it writes its file): the inbound
//!   bridge's QoS 1 session, with what is queued for it, survives. Nothing may be lost.
//! - Redis is configured here to keep nothing on disk (`--save "" --appendonly no`): a restart
//!   loses the stream and its consumer group, and with them every entry confirmed before the
//!   restart that the inbound bridge had not read yet. That count is reported apart, as lost by
//!   the server's configuration; the test asserts that nothing confirmed after the restart is
//!   lost, so both bridges reconnected, the group was made again and the flow resumed.
//!
//! The broker is started again by a guard whatever the outcome (a failed assertion, a panic,
//! the test's time limit), and a lock file keeps two test processes from restarting the same
//! broker at once. A broker that is down when a test starts fails it, naming the broker;
//! `EIP_SKIP_BROKERS=1` skips them and says so. The four tests use four different brokers and
//! may run in parallel.

#[path = "support/broker.rs"]
mod broker;
// The proxy's `cut` is not used here.
#[allow(dead_code)]
#[path = "support/proxy.rs"]
mod proxy;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use broker::{Broker, MOSQUITTO, NATS, RABBITMQ, REDIS, Restart};
use eip_adapters::amqp::{
    AmqpOutbound, AmqpOutboundConfig, AmqpSource, AmqpSourceConfig, ExchangeDeclaration,
    QueueBinding, RoutingKey,
};
use eip_adapters::bridge::{Backoff, BridgeError, InboundBridge};
use eip_adapters::mqtt::{
    MqttBroker, MqttOutbound, MqttOutboundConfig, MqttSource, MqttSourceConfig,
};
use eip_adapters::nats::{
    JetStreamOutbound, JetStreamOutboundConfig, JetStreamSource, JetStreamSourceConfig,
    StreamDeclaration, SubjectTemplate,
};
use eip_adapters::redis::{
    RedisStreamOutbound, RedisStreamOutboundConfig, RedisStreamSource, RedisStreamSourceConfig,
    StreamKey,
};
use eip_core::channel::{PointToPoint, RedeliveryPolicy};
use eip_core::endpoint::Consumer;
use eip_core::message::{Message, MessageId};

/// The most a test may take, restart included.
const LIMIT: Duration = Duration::from_secs(90);

/// Quick reconnections, so the flow resumes soon after the broker is back.
fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(1))
}

/// A tag unique to this test run, fit for any broker's names.
fn tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{name}_{}_{nanos}", std::process::id())
}

/// Runs `test` within [`LIMIT`]; a test past it fails (and its guard starts its broker again).
async fn bounded(label: &str, test: impl Future<Output = ()>) {
    if tokio::time::timeout(LIMIT, test).await.is_err() {
        panic!("{label}: not done within {LIMIT:?}");
    }
}

/// Takes `broker` for this test (blocking while another process restarts it).
fn take(broker: &Broker) -> Restart {
    tokio::task::block_in_place(|| broker.take())
}

/// The channel an outbound bridge's consumer reads: room for every message, and retries enough
/// to outlast a broker's restart.
fn patient_outbox() -> PointToPoint {
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
struct Confirms {
    restarted: Arc<AtomicBool>,
    before: Arc<Mutex<HashSet<MessageId>>>,
}

impl Confirms {
    fn wrap<S>(&self, inner: S) -> Marked<S> {
        Marked {
            inner,
            confirms: self.clone(),
        }
    }

    fn restarted(&self) {
        self.restarted.store(true, Ordering::SeqCst);
    }

    fn before(&self) -> HashSet<MessageId> {
        self.before.lock().expect("not poisoned").clone()
    }
}

/// An outbound bridge recording its confirms in [`Confirms`].
#[derive(Clone)]
struct Marked<S> {
    inner: S,
    confirms: Confirms,
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
struct Arrivals(Arc<Mutex<HashMap<MessageId, usize>>>);

impl Arrivals {
    /// Counts (and acks) what arrives on `inbox` until the task is aborted.
    fn count(&self, inbox: &PointToPoint) -> tokio::task::JoinHandle<()> {
        let mut receiver = inbox.receiver();
        let arrivals = self.clone();
        tokio::spawn(async move {
            while let Some(delivery) = receiver.recv().await {
                *arrivals.lock().entry(delivery.message().id()).or_default() += 1;
                delivery.ack();
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<MessageId, usize>> {
        self.0.lock().expect("not poisoned")
    }

    fn distinct(&self) -> usize {
        self.lock().len()
    }
}

/// How a run through a restart went.
struct Run {
    sent: Vec<MessageId>,
    confirmed: u64,
    /// Confirmed by the broker process that was stopped (or just before the new one was seen).
    before: HashSet<MessageId>,
    arrived: HashMap<MessageId, usize>,
    restarts: usize,
    /// Confirmed and arrived once the broker was down.
    at_down: (u64, usize),
    /// Connections the inbound bridge made (or tried) through its proxy.
    inbound_connections: u64,
    stopped_in: Duration,
    started_in: Duration,
    took: Duration,
}

impl Run {
    fn lost(&self) -> Vec<MessageId> {
        self.sent
            .iter()
            .filter(|id| !self.arrived.contains_key(id))
            .copied()
            .collect()
    }

    fn duplicates(&self) -> usize {
        self.arrived.values().map(|n| n - 1).sum()
    }

    /// The restart's timings and the test's, for the printed line.
    fn timings(&self) -> String {
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
    fn check(&self, name: &str) {
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
fn produce(
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
async fn through_a_restart(
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
struct Flow {
    /// How many messages are sent at once just before the broker is stopped.
    burst: usize,
    /// How many are sent once it is back.
    after: usize,
    /// Whether the broker keeps what it confirmed across a restart.
    keeps_confirmed: bool,
    /// How long to keep counting after the last message came, for duplicates.
    late: Duration,
}

/// The flow of a broker that keeps what it confirmed.
const FLOW: Flow = Flow {
    burst: 500,
    after: 500,
    keeps_confirmed: true,
    late: Duration::from_secs(1),
};

// ---------------------------------------------------------------------------------------------
// RabbitMQ

/// Deletes the queue and exchange the test made.
async fn amqp_clean_up(url: &str, queue: &str, exchange: &str) {
    use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
    use lapin::{Connection, ConnectionProperties};
    if let Ok(connection) = Connection::connect(url, ConnectionProperties::default()).await
        && let Ok(channel) = connection.create_channel().await
    {
        let _ = channel
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await;
        let _ = channel
            .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
            .await;
        let _ = connection.close(200, "done".into()).await;
    }
}

/// RabbitMQ stopped (`rabbitmqctl stop`) and started again mid-stream: the durable queue keeps
/// the persistent messages it confirmed, and what the inbound bridge held unacknowledged comes
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_restarted_mid_stream_loses_no_confirmed_message() {
    if !RABBITMQ.check("restart rabbitmq") {
        return;
    }
    bounded("restart rabbitmq", async {
        let mut restart = take(&RABBITMQ);
        let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
        let (exchange, queue) = (tag("eip-restart-x"), tag("eip-restart-q"));
        let mut config = AmqpOutboundConfig::new(url, &exchange);
        config.declare = Some(ExchangeDeclaration {
            kind: "topic".into(),
            durable: true,
        });
        config.routing_key = RoutingKey::Fixed("restart.orders".into());
        config.confirm_timeout = Duration::from_secs(2);
        let outbound = AmqpOutbound::new(config);
        outbound
            .connect()
            .await
            .expect("the durable exchange is declared");
        // A durable queue (the source declares it so), bound to the durable exchange.
        let proxy = proxy::Proxy::start(RABBITMQ.address()).await;
        let via = format!("amqp://guest:guest@{}/%2f", proxy.address());
        let mut source = AmqpSourceConfig::new(via, &queue);
        source.bindings = vec![QueueBinding {
            exchange: exchange.clone(),
            key: "restart.#".into(),
        }];
        let inbox = PointToPoint::new("inbox", 10_000).expect("the inbox builds");
        let bridge = InboundBridge::new(AmqpSource::new(source), inbox.clone(), 32)
            .backoff(quick())
            .spawn();
        tokio::time::sleep(Duration::from_millis(500)).await; // the binding is in place
        let confirms = Confirms::default();
        let outbox = patient_outbox();
        let consumer = Consumer::new(outbox.receiver(), confirms.wrap(outbound))
            .concurrency(16)
            .permanent_errors(BridgeError::is_permanent)
            .spawn();
        let run = through_a_restart(&mut restart, &outbox, &inbox, &confirms, FLOW, &proxy).await;
        consumer.shutdown().await;
        bridge.shutdown().await.expect("the bridge stops");
        amqp_clean_up(url, &queue, &exchange).await;
        run.check("rabbitmq");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// NATS JetStream

/// NATS stopped (SIGTERM) and started again mid-stream: the stream on file storage and its
/// durable consumer survive; what was delivered and not acknowledged comes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_restarted_mid_stream_loses_no_confirmed_message() {
    if !NATS.check("restart nats") {
        return;
    }
    bounded("restart nats", async {
        let mut restart = take(&NATS);
        let url = "nats://127.0.0.1:4222";
        let name = tag("RESTART");
        let (stream, prefix) = (format!("EIP_TEST_{name}"), format!("eiptest.{name}"));
        let declaration = StreamDeclaration::new(&stream, [format!("{prefix}.>")]);

        let subject = SubjectTemplate::parse(&format!("{prefix}.orders")).expect("a subject");
        let mut config = JetStreamOutboundConfig::new(url, subject);
        config.stream = Some(declaration.clone());
        config.publish_timeout = Duration::from_secs(2);
        config.backoff = quick();
        let outbound = JetStreamOutbound::new(config).expect("a valid config");
        outbound.connect().await.expect("the stream is declared");

        let proxy = proxy::Proxy::start(NATS.address()).await;
        let via = format!("nats://{}", proxy.address());
        let mut config = JetStreamSourceConfig::new(via, declaration, "eip-restart");
        config.ack_wait = Duration::from_secs(5);
        config.request_timeout = Duration::from_secs(2);
        config.heartbeat = Duration::from_secs(1);
        let inbox = PointToPoint::new("inbox", 10_000).expect("the inbox builds");
        let bridge = InboundBridge::new(
            JetStreamSource::new(config).expect("a valid config"),
            inbox.clone(),
            32,
        )
        .backoff(quick())
        .spawn();

        let client = async_nats::connect(url)
            .await
            .expect("NATS at 127.0.0.1:4222");
        let js = async_nats::jetstream::new(client);
        let mut declared = js.get_stream(&stream).await.expect("the stream exists");
        let storage = declared.info().await.expect("its info").config.storage;
        assert_eq!(
            storage,
            async_nats::jetstream::stream::StorageType::File,
            "the stream is on disk"
        );

        let confirms = Confirms::default();
        let outbox = patient_outbox();
        let consumer = Consumer::new(outbox.receiver(), confirms.wrap(outbound))
            .concurrency(16)
            .permanent_errors(BridgeError::is_permanent)
            .spawn();
        let run = through_a_restart(&mut restart, &outbox, &inbox, &confirms, FLOW, &proxy).await;
        consumer.shutdown().await;
        bridge.shutdown().await.expect("the bridge stops");
        if let Ok(client) = async_nats::connect(url).await {
            let _ = async_nats::jetstream::new(client)
                .delete_stream(&stream)
                .await;
        }
        run.check("nats");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// MQTT

/// Mosquitto stopped (SIGTERM: it writes its persistence file) and started again mid-stream:
/// the inbound bridge's QoS 1 session survives, with the messages queued for it. Mosquitto
/// queues at most 1 000 messages for one client (`max_queued_messages`) and drops the rest
/// although it acknowledged them: the flow here stays well under that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_restarted_mid_stream_loses_no_confirmed_message() {
    if !MOSQUITTO.check("restart mosquitto") {
        return;
    }
    bounded("restart mosquitto", async {
        let mut restart = take(&MOSQUITTO);
        let topic = format!("eip-restart/{}", tag("orders"));

        let proxy = proxy::Proxy::start(MOSQUITTO.address()).await;
        let via = MqttBroker::new("127.0.0.1", proxy.address().port());
        let config = MqttSourceConfig::new(via, tag("eip-restart-in"), &topic)
            .session_expiry(Duration::from_secs(300));
        let inbox = PointToPoint::new("inbox", 10_000).expect("the inbox builds");
        let bridge = InboundBridge::new(MqttSource::new(config), inbox.clone(), 32)
            .backoff(quick())
            .spawn();

        let config = MqttOutboundConfig::new(
            MqttBroker::new("127.0.0.1", MOSQUITTO.port),
            tag("eip-restart-out"),
            topic.parse().expect("a topic"),
        )
        .in_flight(32)
        .ack_timeout(Duration::from_secs(2))
        .backoff(quick());
        let outbound = MqttOutbound::connect(config)
            .await
            .expect("the MQTT broker at 127.0.0.1:1883 takes the outbound");
        tokio::time::sleep(Duration::from_millis(500)).await; // subscribed
        let confirms = Confirms::default();
        let outbox = patient_outbox();
        let consumer = Consumer::new(outbox.receiver(), confirms.wrap(outbound))
            .concurrency(16)
            .permanent_errors(BridgeError::is_permanent)
            .spawn();
        // What is queued for the inbound bridge while it is away stays within Mosquitto's
        // limit.
        let flow = Flow {
            burst: 300,
            after: 300,
            ..FLOW
        };
        let run = through_a_restart(&mut restart, &outbox, &inbox, &confirms, flow, &proxy).await;
        consumer.shutdown().await;
        bridge.shutdown().await.expect("the bridge stops");
        run.check("mosquitto");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Redis Streams

/// Redis stopped (`SHUTDOWN NOSAVE`) and started again mid-stream. Redis here keeps nothing on
/// disk (`--save "" --appendonly no` in `.ci/run`): the restart loses the stream, its group and
/// whatever entries were confirmed and not yet read. Those are counted apart, as lost by the
/// server's configuration; nothing confirmed by the new server process may be lost, so both
/// bridges must reconnect, the source make its group again, and the flow resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_stream_loses_nothing_confirmed_after_it() {
    if !REDIS.check("restart redis") {
        return;
    }
    bounded("restart redis", async {
        let mut restart = take(&REDIS);
        let url = "redis://127.0.0.1:6379";
        let stream = format!("eiptest:{}", tag("restart"));

        let mut config =
            RedisStreamOutboundConfig::new(url, StreamKey::parse(&stream).expect("a key"));
        config.connect_timeout = Duration::from_secs(1);
        config.response_timeout = Duration::from_secs(1);
        config.backoff = quick();
        let outbound = RedisStreamOutbound::new(config).expect("a valid config");
        outbound.connect().await.expect("Redis at 127.0.0.1:6379");

        let proxy = proxy::Proxy::start(REDIS.address()).await;
        let via = format!("redis://{}", proxy.address());
        let mut config = RedisStreamSourceConfig::new(via, &stream, "eip-restart", "bridge-1");
        config.block = Duration::from_millis(200);
        config.connect_timeout = Duration::from_secs(1);
        config.response_timeout = Duration::from_secs(1);
        let inbox = PointToPoint::new("inbox", 10_000).expect("the inbox builds");
        let bridge = InboundBridge::new(
            RedisStreamSource::new(config).expect("a valid config"),
            inbox.clone(),
            32,
        )
        .backoff(quick())
        .spawn();

        let confirms = Confirms::default();
        let outbox = patient_outbox();
        let consumer = Consumer::new(outbox.receiver(), confirms.wrap(outbound))
            .concurrency(16)
            .permanent_errors(BridgeError::is_permanent)
            .spawn();
        let flow = Flow {
            keeps_confirmed: false,
            late: Duration::from_millis(500),
            ..FLOW
        };
        let run = through_a_restart(&mut restart, &outbox, &inbox, &confirms, flow, &proxy).await;
        consumer.shutdown().await;
        bridge.shutdown().await.expect("the bridge stops");
        if let Ok(client) = redis::Client::open(url)
            && let Ok(mut connection) = client.get_multiplexed_async_connection().await
        {
            let _ = redis::cmd("DEL")
                .arg(&stream)
                .query_async::<i64>(&mut connection)
                .await;
        }

        let lost = run.lost();
        let (lost_with_server, lost_after): (Vec<MessageId>, Vec<MessageId>) =
            lost.into_iter().partition(|id| run.before.contains(id));
        let after = run.sent.len() - run.before.len();
        println!(
            "restart redis: {} restart, {} sent, {} confirmed, {} lost of {after} confirmed after the restart, {} duplicates; {} of {} confirmed before it lost by the server's configuration (--save \"\" --appendonly no keeps nothing) ({})",
            run.restarts,
            run.sent.len(),
            run.confirmed,
            lost_after.len(),
            run.duplicates(),
            lost_with_server.len(),
            run.before.len(),
            run.timings()
        );
        assert_eq!(run.restarts, 1, "redis: the server was restarted once");
        assert_eq!(
            run.confirmed,
            run.sent.len() as u64,
            "redis: every message confirmed"
        );
        assert!(
            after >= FLOW.after,
            "redis: at least the messages sent after the restart were confirmed by the new server"
        );
        assert!(
            lost_after.is_empty(),
            "redis: {} messages confirmed after the restart lost",
            lost_after.len()
        );
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// The guard

/// A test that fails while its broker is down leaves it running: the guard starts it again
/// while the test unwinds. (Redis, the quickest to restart; the panic below is expected.)
#[test]
fn a_broker_left_down_by_a_failing_test_is_started_again() {
    if !REDIS.check("restart guard") {
        return;
    }
    let failed = std::panic::catch_unwind(|| {
        let mut restart = REDIS.take();
        restart.stop();
        panic!("an expected failure while Redis is down");
    });
    assert!(failed.is_err());
    assert!(REDIS.is_up(), "the guard started Redis again");
    println!("restart guard: Redis started again after a test failed while it was down");
}
