//! The NATS JetStream bridge against the real server on 127.0.0.1:4222 (`NATS_URL` to change
//! it): both ways with every header, backpressure, redelivery of what was not acked, poison
//! messages dead-lettered (and a window of one that keeps pulling past them), a missing stream
//! named, and connections cut mid-stream through a proxy the test controls. A server that is
//! down fails each test naming it; `EIP_SKIP_BROKERS=1` skips them and says so. Each test makes its own stream and deletes it at the end.

#[path = "support/faults.rs"]
mod faults;
#[path = "support/proxy.rs"]
mod proxy;

use faults::{cut_and_stall, patient_outbox, take};

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use eip_adapters::bridge::{Backoff, BridgeError, InboundBridge};
use eip_adapters::nats::{
    JetStreamOutbound, JetStreamOutboundConfig, JetStreamSource, JetStreamSourceConfig,
    StreamDeclaration, SubjectTemplate,
};
use eip_core::MessageId;
use eip_core::channel::{DeadLetterChannel, PointToPoint};
use eip_core::endpoint::Consumer;
use eip_core::message::{HeaderValue, Message};

fn url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// The server's URL, or `None` (said on stdout) when `EIP_SKIP_BROKERS=1`. A server that does
/// not answer fails the test, naming where it was looked for.
async fn server(test: &str) -> Option<String> {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return None;
    }
    let url = url();
    match tokio::time::timeout(Duration::from_secs(5), async_nats::connect(&url)).await {
        Ok(Ok(client)) => {
            let _ = client.drain().await;
            Some(url)
        }
        Ok(Err(e)) => panic!("NATS with JetStream at 127.0.0.1:4222 ({url}) is needed: {e}"),
        Err(_) => panic!("NATS with JetStream at 127.0.0.1:4222 ({url}) does not answer"),
    }
}

/// A stream name and a subject prefix unique to this test run.
fn unique(name: &str) -> (String, String) {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tag = format!("{name}_{}_{n}_{nanos}", std::process::id());
    (format!("EIP_TEST_{tag}"), format!("eiptest.{tag}"))
}

async fn delete_stream(url: &str, stream: &str) {
    if let Ok(client) = async_nats::connect(url).await {
        let js = async_nats::jetstream::new(client);
        let _ = js.delete_stream(stream).await;
    }
}

fn declaration(stream: &str, prefix: &str) -> StreamDeclaration {
    StreamDeclaration::new(stream, [format!("{prefix}.>")])
}

fn outbound(url: &str, stream: &str, prefix: &str, subject: &str) -> JetStreamOutboundConfig {
    let mut config =
        JetStreamOutboundConfig::new(url, SubjectTemplate::parse(subject).expect("a template"));
    config.stream = Some(declaration(stream, prefix));
    config
}

fn source(url: &str, stream: &str, prefix: &str) -> JetStreamSourceConfig {
    JetStreamSourceConfig::new(url, declaration(stream, prefix), "eip-test")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_both_ways_with_their_ids_and_typed_headers() {
    let Some(url) = server("round trip").await else {
        return;
    };
    let (stream, prefix) = unique("roundtrip");
    let outbound = JetStreamOutbound::new(outbound(&url, &stream, &prefix, "{subject}")).unwrap();
    outbound.connect().await.expect("the stream is declared");
    let inbox = PointToPoint::new("inbox", 1000).unwrap();
    let bridge = JetStreamSource::new(source(&url, &stream, &prefix))
        .unwrap()
        .bridge(inbox.clone(), 64)
        .spawn();
    let outbox = PointToPoint::new("outbox", 1000).unwrap();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(32)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();
    let mut sent = HashMap::new();
    for i in 0..300i64 {
        let msg = Message::builder(format!("{{\"n\":{i}}}").into_bytes())
            .subject(format!("{prefix}.orders.{i}"))
            .correlation_id(format!("c-{i}"))
            .return_address("replies")
            .content_type("application/json")
            .time_to_live(Duration::from_secs(600))
            .hop_budget(4)
            .header("n", i)
            .header("urgent", i % 2 == 0)
            .build();
        sent.insert(msg.id(), msg.clone());
        outbox.send(msg).await.unwrap();
    }
    let got = take(&inbox, 300, Duration::from_secs(15)).await;
    for msg in &got {
        let original = sent.get(&msg.id()).expect("an id that was sent");
        let mut want: Vec<(&str, &HeaderValue)> = original.headers().iter().collect();
        let mut have: Vec<(&str, &HeaderValue)> = msg.headers().iter().collect();
        want.sort_by(|a, b| a.0.cmp(b.0));
        have.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(have, want);
        assert_eq!(msg.payload(), original.payload());
    }
    let ids: HashSet<_> = got.iter().map(Message::id).collect();
    assert_eq!(ids.len(), 300, "each once");
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
    delete_stream(&url, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_stops_the_bridge_and_nothing_is_lost() {
    let Some(url) = server("backpressure").await else {
        return;
    };
    let (stream, prefix) = unique("backpressure");
    let outbound =
        JetStreamOutbound::new(outbound(&url, &stream, &prefix, &format!("{prefix}.x"))).unwrap();
    for i in 0..100u8 {
        outbound.publish(&Message::new(vec![i])).await.unwrap();
    }
    let inbox = PointToPoint::new("inbox", 5).unwrap();
    let bridge = JetStreamSource::new(source(&url, &stream, &prefix))
        .unwrap()
        .bridge(inbox.clone(), 8)
        .spawn();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        inbox.stats().depth,
        5,
        "the channel holds its capacity, the stream the rest"
    );
    let got = take(&inbox, 100, Duration::from_secs(15)).await;
    let mut bytes: Vec<u8> = got.iter().map(|m| m.payload()[0]).collect();
    bytes.sort_unstable();
    assert_eq!(bytes, (0..100).collect::<Vec<u8>>(), "each once, none lost");
    bridge.shutdown().await.unwrap();
    delete_stream(&url, &stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_was_not_acked_when_a_bridge_stopped_comes_again_with_its_id() {
    let Some(url) = server("redelivery").await else {
        return;
    };
    let (stream, prefix) = unique("redelivery");
    let outbound =
        JetStreamOutbound::new(outbound(&url, &stream, &prefix, &format!("{prefix}.x"))).unwrap();
    let mut ids = HashSet::new();
    for i in 0..10u8 {
        let msg = Message::new(vec![i]);
        ids.insert(msg.id());
        outbound.publish(&msg).await.unwrap();
    }
    let mut config = source(&url, &stream, &prefix);
    config.ack_wait = Duration::from_secs(1);
    // A full channel: the bridge takes 4 deliveries, hands 2 over, and is stopped.
    let full = PointToPoint::new("full", 2).unwrap();
    let first = JetStreamSource::new(config.clone())
        .unwrap()
        .bridge(full.clone(), 4)
        .spawn();
    tokio::time::sleep(Duration::from_millis(400)).await;
    first.shutdown().await.unwrap();
    let kept = take(&full, 2, Duration::from_secs(5)).await;
    // A second bridge on the same durable consumer gets the other eight: those the first
    // held come again once their ack wait is over, with their eip id and marked redelivered.
    let inbox = PointToPoint::new("inbox", 100).unwrap();
    let second = JetStreamSource::new(config)
        .unwrap()
        .bridge(inbox.clone(), 4)
        .spawn();
    let rest = take(&inbox, 8, Duration::from_secs(10)).await;
    let all: Vec<MessageId> = kept.iter().chain(&rest).map(Message::id).collect();
    assert_eq!(all.iter().copied().collect::<HashSet<_>>(), ids);
    assert_eq!(all.len(), 10, "each once");
    let redelivered = rest
        .iter()
        .filter(|m| m.redelivery_count().unwrap() > 0)
        .count();
    println!("redelivery: {redelivered} of 8 came marked redelivered");
    assert!(
        redelivered >= 1,
        "the ones the first bridge held come back marked"
    );
    second.shutdown().await.unwrap();
    delete_stream(&url, &stream).await;
}

/// The headers of a poison message: `n` said to be an integer, and it is not.
fn poison() -> async_nats::HeaderMap {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("eip-types", "n=i");
    headers.insert("n", "x");
    headers
}

/// `dead_letter` is a poison message as it came, dead-lettered as invalid naming its header.
fn assert_is_the_poison_message(dead_letter: &Message) {
    assert_eq!(dead_letter.payload().as_ref(), b"poison");
    let death = dead_letter.death().unwrap().expect("a death record");
    assert_eq!(death.reason.to_string(), "invalid");
    assert!(
        death.error.as_deref().unwrap_or("").contains("`n`"),
        "{death:?}"
    );
}

/// A stream made for a test, on its own subjects.
async fn create_stream(js: &async_nats::jetstream::Context, stream: &str, prefix: &str) {
    js.create_stream(async_nats::jetstream::stream::Config {
        name: stream.to_owned(),
        subjects: vec![format!("{prefix}.>")],
        ..Default::default()
    })
    .await
    .unwrap();
}

/// An inbox whose dead letters go to the channel returned with it.
fn inbox_with_dead_letters(capacity: usize) -> (PointToPoint, PointToPoint) {
    let dead = PointToPoint::new("dead", capacity).unwrap();
    let inbox = PointToPoint::builder("inbox")
        .capacity(capacity)
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .build()
        .unwrap();
    (inbox, dead)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_of_one_asks_again_after_every_message_poison_or_not() {
    let Some(url) = server("window of one").await else {
        return;
    };
    let (stream, prefix) = unique("windowone");
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    create_stream(&js, &stream, &prefix).await;
    const MESSAGES: usize = 10_000;
    const EVERY: usize = 50;
    // Published in rounds: the client holds at most 5000 publishes waiting for their acks.
    for round in (0..MESSAGES).collect::<Vec<_>>().chunks(1000) {
        let mut acks = Vec::with_capacity(round.len());
        for &i in round {
            let subject = format!("{prefix}.m");
            acks.push(if i % EVERY == 0 {
                js.publish_with_headers(subject, poison(), "poison".into())
                    .await
                    .unwrap()
            } else {
                js.publish(subject, format!("{i}").into()).await.unwrap()
            });
        }
        for ack in acks {
            ack.await.unwrap();
        }
    }
    let (inbox, dead) = inbox_with_dead_letters(MESSAGES);
    let mut config = source(&url, &stream, &prefix);
    // A pull the bridge believed outstanding, and the server did not, would stall it until
    // two heartbeats were missed: a minute here, far past the bound below.
    config.heartbeat = Duration::from_secs(30);
    let bridge = JetStreamSource::new(config)
        .unwrap()
        .bridge(inbox.clone(), 1)
        .spawn();
    let poisoned = MESSAGES.div_ceil(EVERY);
    let good = take(&inbox, MESSAGES - poisoned, Duration::from_secs(50)).await;
    let mut numbers: Vec<usize> = good
        .iter()
        .map(|m| std::str::from_utf8(m.payload()).unwrap().parse().unwrap())
        .collect();
    numbers.sort_unstable();
    let want: Vec<usize> = (0..MESSAGES).filter(|i| i % EVERY != 0).collect();
    assert_eq!(numbers, want, "each good message once");
    for dead_letter in take(&dead, poisoned, Duration::from_secs(5)).await {
        assert_is_the_poison_message(&dead_letter);
    }
    bridge.shutdown().await.unwrap();
    let _ = js.delete_stream(&stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_and_does_not_block_those_behind_it() {
    let Some(url) = server("poison").await else {
        return;
    };
    let (stream, prefix) = unique("poison");
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    create_stream(&js, &stream, &prefix).await;
    js.publish_with_headers(format!("{prefix}.bad"), poison(), "poison".into())
        .await
        .unwrap()
        .await
        .unwrap();
    for i in 0..5 {
        js.publish(format!("{prefix}.good"), format!("{i}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let (inbox, dead) = inbox_with_dead_letters(10);
    let bridge = JetStreamSource::new(source(&url, &stream, &prefix))
        .unwrap()
        .bridge(inbox.clone(), 1)
        .spawn();
    let good = take(&inbox, 5, Duration::from_secs(10)).await;
    for msg in &good {
        // A producer that is not eip: the NATS subject is the eip subject.
        assert_eq!(
            msg.subject().unwrap(),
            Some(format!("{prefix}.good").as_str())
        );
    }
    assert_is_the_poison_message(&take(&dead, 1, Duration::from_secs(5)).await[0]);
    bridge.shutdown().await.unwrap();
    let _ = js.delete_stream(&stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_nats_msg_id_is_kept_as_external_id() {
    let Some(url) = server("foreign msg id").await else {
        return;
    };
    let (stream, prefix) = unique("externalid");
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    create_stream(&js, &stream, &prefix).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, "order-17");
    js.publish_with_headers(format!("{prefix}.m"), headers, "{}".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let inbox = PointToPoint::new("inbox", 10).unwrap();
    let bridge = JetStreamSource::new(source(&url, &stream, &prefix))
        .unwrap()
        .bridge(inbox.clone(), 4)
        .spawn();
    let got = take(&inbox, 1, Duration::from_secs(10)).await;
    assert_eq!(
        got[0].headers().get("external-id"),
        Some(&HeaderValue::Str("order-17".into()))
    );
    bridge.shutdown().await.unwrap();
    let _ = js.delete_stream(&stream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_stream_is_an_error_naming_the_subject() {
    let Some(url) = server("missing stream").await else {
        return;
    };
    let (_, prefix) = unique("nostream");
    let subject = format!("{prefix}.nobody");
    let config = JetStreamOutboundConfig::new(&url, SubjectTemplate::fixed(&subject).unwrap());
    let outbound = JetStreamOutbound::new(config).unwrap();
    let e = outbound
        .publish(&Message::new(&b"x"[..]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains(&subject), "{e}");
    assert!(!e.is_permanent(), "a stream may be created: retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_is_a_connection_error_naming_it() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let outbound = JetStreamOutbound::new(JetStreamOutboundConfig::new(
        &url,
        SubjectTemplate::fixed("a.b").unwrap(),
    ))
    .unwrap();
    let e = outbound
        .publish(&Message::new(&b"x"[..]))
        .await
        .unwrap_err();
    assert!(
        matches!(e, BridgeError::Connection { .. })
            && e.to_string().contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
    // Within the backoff, a call fails at once without a new attempt.
    let again = outbound
        .publish(&Message::new(&b"x"[..]))
        .await
        .unwrap_err();
    assert!(again.to_string().contains("next attempt"), "{again}");
}

fn upstream() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 4222))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_and_stalled_connections_lose_nothing_either_way() {
    let Some(url) = server("cut connections").await else {
        return;
    };
    let (stream, prefix) = unique("cut");
    let proxy_out = proxy::Proxy::start(upstream()).await;
    let proxy_in = proxy::Proxy::start(upstream()).await;
    let via = |proxy: &proxy::Proxy| format!("nats://{}", proxy.address());
    let quick = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

    let mut config = outbound(&via(&proxy_out), &stream, &prefix, &format!("{prefix}.cut"));
    config.publish_timeout = Duration::from_millis(1000);
    config.backoff = quick.clone();
    let outbound = JetStreamOutbound::new(config).unwrap();
    outbound.connect().await.unwrap();

    let mut config = source(&via(&proxy_in), &stream, &prefix);
    config.ack_wait = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(1);
    config.heartbeat = Duration::from_millis(500);
    let inbox = PointToPoint::new("inbox", 10_000).unwrap();
    let bridge = InboundBridge::new(JetStreamSource::new(config).unwrap(), inbox.clone(), 32)
        .backoff(quick)
        .spawn();

    let outbox = patient_outbox();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(16)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();
    let proxies = std::sync::Arc::new((proxy_out, proxy_in));
    cut_and_stall(
        "nats",
        &outbox,
        &inbox,
        proxies,
        2_000,
        Duration::from_millis(2500),
    )
    .await;
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
    delete_stream(&url, &stream).await;
}
