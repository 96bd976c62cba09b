//! The Redis Streams bridge against the real server on 127.0.0.1:6379 (`REDIS_URL` to change
//! it): both ways with every header, backpressure, pending entries read again by the next
//! bridge with the same consumer name, those of a dead consumer claimed, a poison entry
//! dead-lettered, a server that is down named, and connections cut and stalled mid-stream
//! through a proxy the test controls. A server that is down fails each test naming it;
//! `EIP_SKIP_BROKERS=1` skips them and says so. Each test uses its own stream keys and deletes
//! them at the end.

#[path = "support/faults.rs"]
mod faults;
#[path = "support/proxy.rs"]
mod proxy;

use faults::{cut_and_stall, patient_outbox, take};

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use eip_adapters::bridge::{Backoff, BridgeError, InboundBridge, Source};
use eip_adapters::redis::{
    RedisStreamOutbound, RedisStreamOutboundConfig, RedisStreamSource, RedisStreamSourceConfig,
    StreamKey,
};
use eip_core::MessageId;
use eip_core::channel::{DeadLetterChannel, PointToPoint};
use eip_core::endpoint::Consumer;
use eip_core::message::{HeaderValue, Message};

fn url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The server's URL, or `None` (said on stdout) when `EIP_SKIP_BROKERS=1`. A server that does
/// not answer fails the test, naming where it was looked for.
async fn server(test: &str) -> Option<String> {
    if std::env::var("EIP_SKIP_BROKERS").is_ok_and(|v| v == "1") {
        println!("{test}: skipped, EIP_SKIP_BROKERS=1");
        return None;
    }
    let url = url();
    let ping = async {
        let client = redis::Client::open(url.as_str())?;
        let mut connection = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
    };
    match tokio::time::timeout(Duration::from_secs(5), ping).await {
        Ok(Ok(_)) => Some(url),
        Ok(Err(e)) => panic!("Redis at 127.0.0.1:6379 ({url}) is needed: {e}"),
        Err(_) => panic!("Redis at 127.0.0.1:6379 ({url}) does not answer"),
    }
}

/// A stream key unique to this test run.
fn unique(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("eiptest:{name}:{}:{n}:{nanos}", std::process::id())
}

async fn connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn delete(url: &str, keys: &[&str]) {
    let mut connection = connection(url).await;
    let _ = redis::cmd("DEL")
        .arg(keys)
        .query_async::<i64>(&mut connection)
        .await;
}

fn outbound(url: &str, stream: &str) -> RedisStreamOutbound {
    RedisStreamOutbound::new(RedisStreamOutboundConfig::new(
        url,
        StreamKey::parse(stream).expect("a key"),
    ))
    .unwrap()
}

fn source(url: &str, stream: &str) -> RedisStreamSourceConfig {
    RedisStreamSourceConfig::new(url, stream, "eip-test", "bridge-1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_both_ways_with_their_ids_and_typed_headers() {
    let Some(url) = server("round trip").await else {
        return;
    };
    let prefix = unique("roundtrip");
    // Two streams chosen by subject, read by two bridges into one channel.
    let outbound = outbound(&url, &format!("{prefix}:{{subject}}"));
    let inbox = PointToPoint::new("inbox", 1000).unwrap();
    let bridges: Vec<_> = ["eu", "us"]
        .iter()
        .map(|region| {
            RedisStreamSource::new(source(&url, &format!("{prefix}:{region}")))
                .unwrap()
                .bridge(inbox.clone(), 64)
                .spawn()
        })
        .collect();
    let outbox = PointToPoint::new("outbox", 1000).unwrap();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(32)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();
    let mut sent = HashMap::new();
    for i in 0..300i64 {
        let msg = Message::builder(format!("{{\"n\":{i}}}").into_bytes())
            .subject(if i % 2 == 0 { "eu" } else { "us" })
            .correlation_id(format!("c-{i}"))
            .return_address("replies")
            .content_type("application/json")
            .time_to_live(Duration::from_secs(600))
            .hop_budget(4)
            .header("n", i)
            .header("urgent", i % 2 == 0)
            .header("raw", bytes::Bytes::from(vec![0u8, 255]))
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
    for bridge in bridges {
        bridge.shutdown().await.unwrap();
    }
    delete(&url, &[&format!("{prefix}:eu"), &format!("{prefix}:us")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_channel_stops_the_bridge_and_nothing_is_lost() {
    let Some(url) = server("backpressure").await else {
        return;
    };
    let stream = unique("backpressure");
    let outbound = outbound(&url, &stream);
    for i in 0..100u8 {
        outbound.append(&Message::new(vec![i])).await.unwrap();
    }
    let inbox = PointToPoint::new("inbox", 5).unwrap();
    let bridge = RedisStreamSource::new(source(&url, &stream))
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
    delete(&url, &[&stream]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_read_and_not_acked_by_a_stopped_bridge_come_again_to_the_next_one() {
    let Some(url) = server("redelivery").await else {
        return;
    };
    let stream = unique("redelivery");
    let outbound = outbound(&url, &stream);
    let mut ids = HashSet::new();
    for i in 0..10u8 {
        let msg = Message::new(vec![i]);
        ids.insert(msg.id());
        outbound.append(&msg).await.unwrap();
    }
    // A full channel: the bridge reads 4 entries, hands 2 over, more wait, and it is stopped.
    let full = PointToPoint::new("full", 2).unwrap();
    let first = RedisStreamSource::new(source(&url, &stream))
        .unwrap()
        .bridge(full.clone(), 4)
        .spawn();
    tokio::time::sleep(Duration::from_millis(400)).await;
    first.shutdown().await.unwrap();
    let kept = take(&full, 2, Duration::from_secs(5)).await;
    // The next bridge with the same consumer name reads its pending entries first: the ones
    // the first held come again with their eip id, marked redelivered.
    let inbox = PointToPoint::new("inbox", 100).unwrap();
    let second = RedisStreamSource::new(source(&url, &stream))
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
    println!("redis redelivery: {redelivered} of 8 came marked redelivered");
    assert!(
        redelivered >= 1,
        "the ones the first bridge held come back marked"
    );
    second.shutdown().await.unwrap();
    delete(&url, &[&stream]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_a_dead_consumer_left_idle_are_claimed_by_a_bridge() {
    let Some(url) = server("claim").await else {
        return;
    };
    let stream = unique("claim");
    let outbound = outbound(&url, &stream);
    let mut ids = HashSet::new();
    for i in 0..6u8 {
        let msg = Message::new(vec![i]);
        ids.insert(msg.id());
        outbound.append(&msg).await.unwrap();
    }
    // Another consumer of the group reads every entry and dies without acknowledging.
    let mut redis = connection(&url).await;
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&stream)
        .arg("eip-test")
        .arg("0")
        .query_async::<()>(&mut redis)
        .await
        .unwrap();
    redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("eip-test")
        .arg("dead-one")
        .arg("STREAMS")
        .arg(&stream)
        .arg(">")
        .query_async::<redis::Value>(&mut redis)
        .await
        .unwrap();
    let mut config = source(&url, &stream);
    config.claim_idle = Some(Duration::from_millis(300));
    config.block = Duration::from_millis(100);
    let inbox = PointToPoint::new("inbox", 100).unwrap();
    let bridge = RedisStreamSource::new(config)
        .unwrap()
        .bridge(inbox.clone(), 4)
        .spawn();
    let got = take(&inbox, 6, Duration::from_secs(5)).await;
    assert_eq!(got.iter().map(Message::id).collect::<HashSet<_>>(), ids);
    assert!(got.iter().all(|m| m.redelivery_count().unwrap() == 1));
    bridge.shutdown().await.unwrap();
    delete(&url, &[&stream]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_entry_is_dead_lettered_and_does_not_block_those_behind_it() {
    let Some(url) = server("poison").await else {
        return;
    };
    let stream = unique("poison");
    let mut redis = connection(&url).await;
    redis::cmd("XADD")
        .arg(&stream)
        .arg("*")
        .arg("eip-types")
        .arg("n=i")
        .arg("n")
        .arg("x")
        .arg("payload")
        .arg("poison")
        .query_async::<String>(&mut redis)
        .await
        .unwrap();
    for i in 0..5 {
        redis::cmd("XADD")
            .arg(&stream)
            .arg("*")
            .arg("payload")
            .arg(format!("{i}"))
            .query_async::<String>(&mut redis)
            .await
            .unwrap();
    }
    let dead = PointToPoint::new("dead", 10).unwrap();
    let inbox = PointToPoint::builder("inbox")
        .capacity(10)
        .dead_letter_channel(DeadLetterChannel::from(dead.clone()))
        .build()
        .unwrap();
    let bridge = RedisStreamSource::new(source(&url, &stream))
        .unwrap()
        .bridge(inbox.clone(), 1)
        .spawn();
    let good = take(&inbox, 5, Duration::from_secs(10)).await;
    for (i, msg) in good.iter().enumerate() {
        // A producer that is not eip: the stream key is the eip subject.
        assert_eq!(msg.subject().unwrap(), Some(stream.as_str()));
        assert_eq!(msg.payload().as_ref(), format!("{i}").as_bytes());
    }
    let dead_letters = take(&dead, 1, Duration::from_secs(5)).await;
    assert_eq!(dead_letters[0].payload().as_ref(), b"poison");
    let death = dead_letters[0].death().unwrap().expect("a death record");
    assert_eq!(death.reason.to_string(), "invalid");
    assert!(
        death.error.as_deref().unwrap_or("").contains("`n`"),
        "{death:?}"
    );
    bridge.shutdown().await.unwrap();
    delete(&url, &[&stream]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_is_a_connection_error_naming_it() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let outbound = outbound(&url, "orders");
    let e = outbound.append(&Message::new(&b"x"[..])).await.unwrap_err();
    assert!(
        matches!(e, BridgeError::Connection { .. })
            && e.to_string().contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
    // Within the backoff, a call fails at once without a new attempt.
    let again = outbound.append(&Message::new(&b"x"[..])).await.unwrap_err();
    assert!(again.to_string().contains("next attempt"), "{again}");
    let mut source = RedisStreamSource::new(source(&url, "orders")).unwrap();
    let e = source.connect(1).await.unwrap_err();
    assert!(
        matches!(e, BridgeError::Connection { .. })
            && e.to_string().contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
}

fn upstream() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 6379))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_and_stalled_connections_lose_nothing_either_way() {
    let Some(url) = server("cut connections").await else {
        return;
    };
    let stream = unique("cut");
    let proxy_out = proxy::Proxy::start(upstream()).await;
    let proxy_in = proxy::Proxy::start(upstream()).await;
    let via = |proxy: &proxy::Proxy| format!("redis://{}", proxy.address());
    let quick = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

    let mut config =
        RedisStreamOutboundConfig::new(via(&proxy_out), StreamKey::parse(&stream).unwrap());
    config.connect_timeout = Duration::from_secs(1);
    config.response_timeout = Duration::from_secs(1);
    config.backoff = quick.clone();
    let outbound = RedisStreamOutbound::new(config).unwrap();
    outbound.connect().await.unwrap();

    let mut config = source(&via(&proxy_in), &stream);
    config.block = Duration::from_millis(200);
    config.connect_timeout = Duration::from_secs(1);
    config.response_timeout = Duration::from_millis(800);
    let inbox = PointToPoint::new("inbox", 10_000).unwrap();
    let bridge = InboundBridge::new(RedisStreamSource::new(config).unwrap(), inbox.clone(), 32)
        .backoff(quick)
        .spawn();

    let outbox = patient_outbox();
    let consumer = Consumer::new(outbox.receiver(), outbound)
        .concurrency(16)
        .permanent_errors(BridgeError::is_permanent)
        .spawn();
    let proxies = std::sync::Arc::new((proxy_out, proxy_in));
    cut_and_stall(
        "redis",
        &outbox,
        &inbox,
        proxies,
        2_000,
        Duration::from_millis(500),
    )
    .await;
    consumer.shutdown().await;
    bridge.shutdown().await.unwrap();
    delete(&url, &[&stream]).await;
}
