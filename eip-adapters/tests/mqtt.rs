//! The MQTT bridge against the Mosquitto on 127.0.0.1:1883, both ways, at QoS 1: round trips,
//! backpressure, a persistent session, a poison message, and connections cut or stalled
//! mid-stream. Mosquitto down fails each test naming it; `EIP_SKIP_BROKERS=1` skips them and says
//! so.
#![cfg(feature = "mqtt")]

#[path = "support/proxy.rs"]
mod proxy;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use eip_adapters::bridge::{BridgeError, InboundBridge, Source};
use eip_adapters::mqtt::{
    MqttBroker, MqttOutbound, MqttOutboundConfig, MqttSource, MqttSourceConfig, TopicTemplate,
};
use eip_core::channel::{PointToPoint, RedeliveryPolicy};
use eip_core::endpoint::Consumer;
use eip_core::message::{DeathReason, Message, MessageId};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::{AsyncClient, Event, Incoming, MqttOptions};

const BROKER: &str = "127.0.0.1:1883";

/// The broker, or a failed test naming where it should be.
/// Mosquitto on 127.0.0.1:1883, or `None` (said on stdout) when `EIP_SKIP_BROKERS=1`. A
/// broker that does not answer fails the test, naming it.
async fn broker() -> Option<MqttBroker> {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("skipped, EIP_SKIP_BROKERS=1");
        return None;
    }
    let up = tokio::time::timeout(
        Duration::from_secs(2),
        tokio::net::TcpStream::connect(BROKER),
    )
    .await;
    match up {
        Ok(Ok(_)) => Some(MqttBroker::new("127.0.0.1", 1883)),
        Ok(Err(e)) => panic!("the MQTT broker (Mosquitto) at {BROKER} is down: {e}"),
        Err(_) => panic!("the MQTT broker (Mosquitto) at {BROKER} does not answer"),
    }
}

fn through(proxy: &proxy::Proxy) -> MqttBroker {
    MqttBroker::new("127.0.0.1", proxy.address().port())
}

/// A name no other test (or run) uses.
fn unique(name: &str) -> String {
    format!("eip-{name}-{}", MessageId::new())
}

/// A subscription whose session exists before anything is published: connected once, so the
/// broker keeps what arrives for the bridge that resumes it.
async fn subscribed(broker: MqttBroker, client_id: &str, filter: &str) -> MqttSource {
    let config =
        MqttSourceConfig::new(broker, client_id, filter).session_expiry(Duration::from_secs(30));
    let mut source = MqttSource::new(config);
    source
        .connect(8)
        .await
        .unwrap_or_else(|e| panic!("subscribing through the broker at {BROKER}: {e}"));
    source
}

async fn outbound(broker: MqttBroker, topic: &str, in_flight: usize) -> MqttOutbound {
    let config = MqttOutboundConfig::new(broker, unique("out"), topic.parse().unwrap())
        .in_flight(in_flight)
        .ack_timeout(Duration::from_secs(3));
    MqttOutbound::connect(config)
        .await
        .unwrap_or_else(|e| panic!("connecting to the broker at {BROKER}: {e}"))
}

fn message(i: usize) -> Message {
    Message::builder(format!("reading {i}"))
        .subject(format!("room{}.temp", i % 3))
        .correlation_id(format!("c-{i}"))
        .content_type("text/plain")
        .priority((i % 10) as u8)
        .header("seq", i as i64)
        .header("ratio", 0.5)
        .header("urgent", i.is_multiple_of(2))
        .header("raw", bytes::Bytes::from(vec![i as u8, 0xff]))
        .build()
}

/// Takes messages from `channel` until every id of `want` came (and acks each), within
/// `within`; gives how many times each id came.
async fn drain_until(
    channel: &PointToPoint,
    want: &HashSet<MessageId>,
    within: Duration,
) -> HashMap<MessageId, (usize, Message)> {
    let mut receiver = channel.receiver();
    let mut got: HashMap<MessageId, (usize, Message)> = HashMap::new();
    let deadline = tokio::time::Instant::now() + within;
    while !want.iter().all(|id| got.contains_key(id)) {
        let delivery = tokio::time::timeout_at(deadline, receiver.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {} messages arrived within {within:?}",
                    want.iter().filter(|id| got.contains_key(id)).count(),
                    want.len()
                )
            })
            .expect("channel open");
        let msg = delivery.message().clone();
        delivery.ack();
        got.entry(msg.id()).or_insert((0, msg)).0 += 1;
    }
    got
}

fn duplicates(got: &HashMap<MessageId, (usize, Message)>) -> usize {
    got.values().map(|(n, _)| n - 1).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_crosses_mqtt_at_qos1_with_its_id_and_typed_headers() {
    let Some(broker) = broker().await else {
        return;
    };
    let base = unique("rt");
    let source = subscribed(broker.clone(), &unique("in"), &format!("{base}/#")).await;
    let inbox = PointToPoint::new("from-mqtt", 1000).unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 32).spawn();

    let outbox = PointToPoint::new("to-mqtt", 1000).unwrap();
    let out = outbound(broker, &format!("{base}/{{subject}}"), 32).await;
    let consumer = Consumer::new(outbox.receiver(), out)
        .concurrency(32)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();

    let sent: Vec<Message> = (0..300).map(message).collect();
    for msg in &sent {
        outbox.send(msg.clone()).await.unwrap();
    }
    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    let got = drain_until(&inbox, &want, Duration::from_secs(10)).await;
    for msg in &sent {
        let (_, back) = &got[&msg.id()];
        assert_eq!(back.payload(), msg.payload());
        let mut want: Vec<_> = msg.headers().iter().collect();
        let mut have: Vec<_> = back.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        have.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(have, want, "the headers of {}", msg.id());
    }
    println!(
        "round trip: {} sent, {} arrived, {} duplicates",
        sent.len(),
        got.len(),
        duplicates(&got)
    );
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_stops_the_bridge_and_every_message_arrives_once_drained() {
    let Some(broker) = broker().await else {
        return;
    };
    let topic = unique("bp");
    let source = subscribed(broker.clone(), &unique("in"), &topic).await;
    let inbox = PointToPoint::new("small", 5).unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 4).spawn();

    let out = outbound(broker, &topic, 16).await;
    let sent: Vec<Message> = (0..60).map(message).collect();
    futures::future::try_join_all(sent.iter().map(|m| out.publish(m)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stats = inbox.stats();
    assert_eq!(stats.depth, 5, "the channel is full");
    assert_eq!(stats.accepted, 5, "the bridge stopped at a full channel");

    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    let got = drain_until(&inbox, &want, Duration::from_secs(10)).await;
    assert_eq!(got.len(), sent.len());
    println!(
        "backpressure: {} sent, {} arrived, {} duplicates",
        sent.len(),
        got.len(),
        duplicates(&got)
    );
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_stopped_bridge_did_not_ack_comes_to_the_next_one_with_its_client_id() {
    let Some(broker) = broker().await else {
        return;
    };
    let topic = unique("session");
    let client_id = unique("in");
    let source = subscribed(broker.clone(), &client_id, &topic).await;
    let first = PointToPoint::new("first", 3).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut bridge = tokio::spawn(
        InboundBridge::new(source, first.clone(), 5).run_until(async {
            let _ = stopped.await;
        }),
    );

    let out = outbound(broker.clone(), &topic, 16).await;
    let sent: Vec<Message> = (0..20).map(message).collect();
    for m in &sent {
        out.publish(m).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(first.stats().accepted, 3);
    // Stopped while more is in hand than the channel takes: those are never acknowledged.
    // A bridge that does not stop in time is stopped the hard way, as a crash would.
    let _ = stop.send(());
    if tokio::time::timeout(Duration::from_secs(3), &mut bridge)
        .await
        .is_err()
    {
        bridge.abort();
    }
    let mut taken = HashSet::new();
    let mut receiver = first.receiver();
    while let Ok(delivery) = receiver.try_recv() {
        taken.insert(delivery.message().id());
        delivery.ack();
    }
    assert_eq!(taken.len(), 3);

    let config =
        MqttSourceConfig::new(broker, &client_id, &topic).session_expiry(Duration::from_secs(10));
    let second = PointToPoint::new("second", 100).unwrap();
    let bridge = InboundBridge::new(MqttSource::new(config), second.clone(), 5).spawn();
    let want: HashSet<_> = sent
        .iter()
        .map(Message::id)
        .filter(|id| !taken.contains(id))
        .collect();
    let got = drain_until(&second, &want, Duration::from_secs(10)).await;
    println!(
        "persistent session: {} taken by the first bridge, {} by the second, {} duplicates",
        taken.len(),
        got.len(),
        duplicates(&got)
    );
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_and_does_not_block_what_follows() {
    let Some(broker) = broker().await else {
        return;
    };
    let topic = unique("poison");
    let source = subscribed(broker.clone(), &unique("in"), &topic).await;
    let dead = PointToPoint::new("dead", 10).unwrap();
    let inbox = PointToPoint::builder("readings")
        .capacity(10)
        .dead_letter_channel(dead.clone().into())
        .build()
        .unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 4).spawn();

    // A producer that is not eip, with an `eip-types` its value does not fit.
    let mut options = MqttOptions::new(unique("raw"), "127.0.0.1", 1883);
    options.set_keep_alive(Duration::from_secs(5));
    let (client, mut eventloop) = AsyncClient::new(options, 10);
    let properties = PublishProperties {
        user_properties: vec![("eip-types".into(), "n=i".into()), ("n".into(), "x".into())],
        ..PublishProperties::default()
    };
    client
        .publish_with_properties(&topic, QoS::AtLeastOnce, false, "poison", properties)
        .await
        .unwrap();
    let mut acked = 0;
    while acked < 1 {
        match eventloop.poll().await {
            Ok(Event::Incoming(Incoming::PubAck(_))) => acked += 1,
            Ok(_) => {}
            Err(e) => panic!("publishing to the broker at {BROKER}: {e}"),
        }
    }
    let good = message(1);
    outbound(broker, &topic, 4)
        .await
        .publish(&good)
        .await
        .unwrap();

    let got = drain_until(&inbox, &HashSet::from([good.id()]), Duration::from_secs(5)).await;
    assert_eq!(got.len(), 1);
    let mut dead_letters = dead.receiver();
    let buried = tokio::time::timeout(Duration::from_secs(5), dead_letters.recv())
        .await
        .expect("a dead letter within 5 s")
        .expect("open");
    assert_eq!(buried.message().payload().as_ref(), b"poison");
    let death = buried.message().death().unwrap().expect("a death record");
    assert_eq!(death.reason, DeathReason::Invalid);
    assert!(death.error.unwrap_or_default().contains("`n`"));
    bridge.shutdown().await.unwrap();
}

/// Publishes `sent` through `out`, each retried until confirmed (as a consumer would).
async fn publish_all(out: MqttOutbound, sent: Vec<Message>) -> usize {
    let mut retries = 0;
    for m in &sent {
        while out.publish(m).await.is_err() {
            retries += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    retries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_bridge_cut_off_mid_stream_reconnects_and_loses_nothing() {
    let Some(broker) = broker().await else {
        return;
    };
    let upstream: SocketAddr = BROKER.parse().unwrap();
    let proxy = proxy::Proxy::start(upstream).await;
    let topic = unique("cut-in");
    let client_id = unique("in");
    let source = subscribed(through(&proxy), &client_id, &topic).await;
    let inbox = PointToPoint::new("cut-in", 1000).unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 16).spawn();

    let sent: Vec<Message> = (0..400).map(message).collect();
    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    let out = outbound(broker, &topic, 32).await;
    let publisher = tokio::spawn(publish_all(out, sent));
    let cutter = async {
        while inbox.stats().accepted < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        proxy.cut();
    };
    let (got, ()) = tokio::join!(drain_until(&inbox, &want, Duration::from_secs(15)), cutter);
    let retries = publisher.await.unwrap();
    // When the messages come fast, the cut may land after the last of them: the bridge then
    // reconnects after the drain is over. Give it the time to (bounded).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while proxy.accepted() < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lost = want.iter().filter(|id| !got.contains_key(id)).count();
    println!(
        "inbound cut: {} sent ({retries} publishes retried), {} arrived, lost {lost}, {} duplicates, {} connections",
        want.len(),
        got.len(),
        duplicates(&got),
        proxy.accepted()
    );
    assert_eq!(lost, 0);
    assert!(proxy.accepted() >= 3, "the bridge reconnected");
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_bridge_cut_off_mid_stream_reconnects_and_every_confirmed_message_arrives() {
    let Some(broker) = broker().await else {
        return;
    };
    let upstream: SocketAddr = BROKER.parse().unwrap();
    let proxy = proxy::Proxy::start(upstream).await;
    let topic = unique("cut-out");
    let source = subscribed(broker, &unique("in"), &topic).await;
    let inbox = PointToPoint::new("cut-out-in", 1000).unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 32).spawn();

    let dead = PointToPoint::new("cut-out-dead", 1000).unwrap();
    let outbox = PointToPoint::builder("cut-out")
        .capacity(1000)
        .redelivery(RedeliveryPolicy::fixed(100, Duration::from_millis(50)))
        .dead_letter_channel(dead.clone().into())
        .build()
        .unwrap();
    let out = outbound(through(&proxy), &topic, 32).await;
    let consumer = Consumer::new(outbox.receiver(), out)
        .concurrency(32)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();

    let sent: Vec<Message> = (0..400).map(message).collect();
    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    for m in &sent {
        outbox.send(m.clone()).await.unwrap();
    }
    while inbox.stats().accepted < 100 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    proxy.cut();
    // Every message confirmed (acked by the consumer after its PUBACK) or dead-lettered.
    let settled = async {
        while outbox.stats().acked + outbox.stats().dead_lettered < want.len() as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(15), settled)
        .await
        .expect("every message confirmed within 15 s");
    let got = drain_until(&inbox, &want, Duration::from_secs(10)).await;
    consumer.shutdown().await;
    let stats = outbox.stats();
    let lost = want.iter().filter(|id| !got.contains_key(id)).count();
    println!(
        "outbound cut: {} sent, {} confirmed, {} arrived, lost {lost}, {} duplicates, {} redeliveries, {} dead-lettered, {} connections",
        want.len(),
        stats.acked,
        got.len(),
        duplicates(&got),
        stats.requeued,
        stats.dead_lettered,
        proxy.accepted()
    );
    assert_eq!(lost, 0);
    assert_eq!(stats.dead_lettered, 0);
    assert!(proxy.accepted() >= 2, "the outbound reconnected");
    bridge.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_message_without_the_subject_its_topic_needs_is_refused_permanently() {
    let Some(broker) = broker().await else {
        return;
    };
    let out = outbound(broker, &format!("{}/{{subject}}", unique("nosub")), 4).await;
    let error = out.publish(&Message::new("x")).await.unwrap_err();
    assert!(error.is_permanent(), "{error}");
    let template: TopicTemplate = "a/{subject}".parse().unwrap();
    let wild = Message::builder("x").subject("a.#").build();
    assert!(template.topic_for(&wild).is_err());
}

#[tokio::test]
async fn a_broker_that_can_not_be_reached_is_named_in_the_error() {
    // A port nobody listens on: bound, then let go.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let down = MqttBroker::new("127.0.0.1", port);
    let config = MqttOutboundConfig::new(down.clone(), unique("out"), "t".parse().unwrap());
    let error = MqttOutbound::connect(config).await.unwrap_err();
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
    let mut source = MqttSource::new(MqttSourceConfig::new(down, unique("in"), "t"));
    let error = source.connect(4).await.unwrap_err();
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_bridge_stalled_mid_stream_reconnects_and_every_confirmed_message_arrives() {
    let Some(broker) = broker().await else {
        return;
    };
    let upstream: SocketAddr = BROKER.parse().unwrap();
    let proxy = proxy::Proxy::start(upstream).await;
    let topic = unique("stall-out");
    let source = subscribed(broker, &unique("in"), &topic).await;
    let inbox = PointToPoint::new("stall-out-in", 1000).unwrap();
    let bridge = InboundBridge::new(source, inbox.clone(), 32).spawn();

    let outbox = PointToPoint::builder("stall-out")
        .capacity(1000)
        .redelivery(RedeliveryPolicy::fixed(200, Duration::from_millis(50)))
        .build()
        .unwrap();
    // A PUBACK a second late means a stalled connection: it is made again.
    let config = MqttOutboundConfig::new(through(&proxy), unique("out"), topic.parse().unwrap())
        .in_flight(16)
        .ack_timeout(Duration::from_secs(1));
    let out = MqttOutbound::connect(config).await.unwrap();
    let consumer = Consumer::new(outbox.receiver(), out)
        .concurrency(16)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();

    let sent: Vec<Message> = (0..200).map(message).collect();
    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    // A quarter through, then the stall, then the rest: the stall is mid-stream however fast
    // the first part went through (sending all at once let a quick consumer finish first).
    let (first, rest) = sent.split_at(50);
    for m in first {
        outbox.send(m.clone()).await.unwrap();
    }
    let through = async {
        while inbox.stats().accepted < 50 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(15), through)
        .await
        .expect("the first 50 arrive before the stall");
    proxy.stall(true);
    for m in rest {
        outbox.send(m.clone()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.stall(false);
    let settled = async {
        while outbox.stats().acked < want.len() as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(15), settled)
        .await
        .expect("every message confirmed within 15 s of the stall");
    let got = drain_until(&inbox, &want, Duration::from_secs(10)).await;
    consumer.shutdown().await;
    let lost = want.iter().filter(|id| !got.contains_key(id)).count();
    println!(
        "outbound stall: {} sent, {} confirmed, {} arrived, lost {lost}, {} duplicates, {} redeliveries, {} connections",
        want.len(),
        outbox.stats().acked,
        got.len(),
        duplicates(&got),
        outbox.stats().requeued,
        proxy.accepted()
    );
    assert_eq!(lost, 0);
    assert!(
        proxy.accepted() >= 2,
        "the outbound made its connection again"
    );
    bridge.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_bridge_stalled_mid_stream_reconnects_and_loses_nothing() {
    let Some(broker) = broker().await else {
        return;
    };
    let upstream: SocketAddr = BROKER.parse().unwrap();
    let proxy = proxy::Proxy::start(upstream).await;
    let topic = unique("stall-in");
    let source = subscribed(through(&proxy), &unique("in"), &topic).await;
    let inbox = PointToPoint::new("stall-in", 1000).unwrap();
    let quick =
        eip_adapters::bridge::Backoff::new(Duration::from_millis(50), Duration::from_millis(500));
    let bridge = InboundBridge::new(source, inbox.clone(), 16)
        .backoff(quick)
        .spawn();

    let sent: Vec<Message> = (0..400).map(message).collect();
    let want: HashSet<_> = sent.iter().map(Message::id).collect();
    let out = outbound(broker, &topic, 32).await;
    let publisher = tokio::spawn(publish_all(out, sent));
    // Bytes stop both ways, the connection stays open: only the keep-alive (a PINGRESP that
    // does not come within 5 s) tells the bridge, within 10 s; the stall outlasts that, and
    // the broker keeps what is published meanwhile in the bridge's session.
    let stall = Duration::from_secs(12);
    let staller = async {
        while inbox.stats().accepted < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        proxy.stall(true);
        tokio::time::sleep(stall).await;
        proxy.stall(false);
    };
    let (got, ()) = tokio::join!(drain_until(&inbox, &want, Duration::from_secs(30)), staller);
    let retries = publisher.await.unwrap();
    let lost = want.iter().filter(|id| !got.contains_key(id)).count();
    println!(
        "inbound stall: {} sent ({retries} publishes retried), {:?} stalled, {} arrived, lost {lost}, {} duplicates, {} connections",
        want.len(),
        stall,
        got.len(),
        duplicates(&got),
        proxy.accepted()
    );
    assert_eq!(lost, 0);
    assert!(
        proxy.accepted() >= 3,
        "the bridge gave the stalled connection up and made another"
    );
    bridge.shutdown().await.unwrap();
}
