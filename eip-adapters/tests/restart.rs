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
#[path = "support/restart_run.rs"]
mod restart_run;

use std::time::Duration;

use broker::{MOSQUITTO, NATS, RABBITMQ, REDIS};
use eip_adapters::amqp::{
    AmqpOutbound, AmqpOutboundConfig, AmqpSource, AmqpSourceConfig, ExchangeDeclaration,
    QueueBinding, RoutingKey,
};
use eip_adapters::bridge::{BridgeError, InboundBridge};
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
use eip_core::channel::PointToPoint;
use eip_core::endpoint::Consumer;
use eip_core::message::MessageId;
use restart_run::{
    Confirms, FLOW, Flow, bounded, patient_outbox, quick, tag, take, through_a_restart,
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
