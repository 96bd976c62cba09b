//! One template language for every destination: an adapter's subject, topic, routing key and
//! file name take the placeholders a route target takes, jq ones included; `eip validate`
//! reports a bad jq expression at its byte in the flow file, and what a place refuses in its
//! own text is still refused. Route targets: `dynamic_routing.rs`.
// Every test here uses jq and one adapter kind or another; built without them, nothing to run
// (`dynamic_routing.rs` checks that a jq placeholder then says so).
#![cfg(all(
    feature = "jq",
    feature = "file",
    feature = "nats",
    feature = "mqtt",
    feature = "amqp",
    feature = "redis"
))]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eip_dsl::compile::{Flow, RunningFlow, compile};
use eip_dsl::load::load_str;

mod support {
    pub mod problems;
    pub mod scratch;
    pub mod validate;
}

use support::problems::{at, only};
use support::scratch::Scratch;
use support::validate::load;

/// A flow whose bridge `out` (of `kind`, with `settings`) has `key: 'value'` on line 4.
fn bridge(kind: &str, settings: &str, key: &str, value: &str) -> Vec<String> {
    vec![
        "channels:".to_owned(),
        "  orders: {kind: point-to-point}".to_owned(),
        "bridges:".to_owned(),
        format!("  out: {{kind: {kind}, from: orders, {settings}, {key}: '{value}'}}"),
    ]
}

fn nats(value: &str) -> Vec<String> {
    bridge("nats-out", "url: 'nats://127.0.0.1:4222'", "subject", value)
}

fn amqp(value: &str) -> Vec<String> {
    let settings = "url: 'amqp://127.0.0.1', exchange: x";
    bridge("rabbitmq-out", settings, "routing-key", value)
}

fn mqtt(value: &str) -> Vec<String> {
    let settings = "url: 'mqtt://127.0.0.1:1883', client-id: t";
    bridge("mqtt-out", settings, "topic", value)
}

/// What reached the flow's outputs (the dead letter channel has no consumer here), by channel.
type Outputs = Arc<Mutex<Vec<(String, eip_core::Message)>>>;

/// `flow` started, collecting what reaches its outputs.
fn start(flow: &Flow) -> (RunningFlow, Outputs) {
    let seen: Outputs = Arc::default();
    let out = seen.clone();
    let running = flow.start(Arc::new(move |channel: &str, msg: &eip_core::Message| {
        if let Ok(mut seen) = out.lock() {
            seen.push((channel.to_owned(), msg.clone()));
        }
    }));
    (running, seen)
}

/// The one message that reached the dead letter channel, and the error of its death record.
fn dead_letter(seen: &Outputs) -> (eip_core::Message, String) {
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let [(channel, letter)] = seen.as_slice() else {
        panic!("one dead letter, not {seen:?}")
    };
    assert_eq!(channel, "dead-letters");
    let death = letter
        .death()
        .expect("a death header")
        .expect("a death record");
    (letter.clone(), death.error.unwrap_or_default())
}

fn lines(all: &[String]) -> Vec<&str> {
    all.iter().map(String::as_str).collect()
}

#[test]
fn every_bridge_destination_takes_every_placeholder() {
    for good in [
        nats("events.{jq: .type}.{header.region}"),
        amqp("orders.{$.region}.{jq: .kind}"),
        mqtt("plant/{jq: .line}/{subject}"),
    ] {
        if let Err(e) = load(&lines(&good)) {
            panic!("{good:?}\n{}", e.render());
        }
    }
}

#[test]
fn a_bad_jq_expression_in_a_destination_is_refused_at_its_byte() {
    let flow = nats("events.{jq: .type | nope}");
    let p = only(&lines(&flow));
    assert_eq!(
        p.message, "invalid `subject`: jq: undefined filter `nope/0`",
        "{p:?}"
    );
    assert_eq!(p.key.as_deref(), Some(r#"bridges["out"].subject"#));
    let value_column = flow[3].find("events").expect("the value") + 1;
    assert_eq!(at(&p), (4, (value_column + 20) as u32));
}

#[test]
fn what_a_broker_refuses_in_its_own_text_is_still_refused() {
    let p = only(&lines(&mqtt("plant/#/{jq: .line}")));
    assert!(p.message.contains("wildcards"), "{}", p.message);
    let p = only(&lines(&amqp("orders.{nope}")));
    assert!(
        p.message.contains("unknown placeholder `{nope}`"),
        "{}",
        p.message
    );
    let p = only(&lines(&nats("events..{subject}")));
    assert!(p.message.contains("empty token"), "{}", p.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_name_made_by_jq_is_written_and_a_value_that_would_escape_is_dead_lettered() {
    let scratch = Scratch::new("templates");
    let yaml = "
channels:
  orders: {kind: point-to-point}
adapters:
  out: {kind: file-out, from: orders, dir: out, name: '{jq: .kind | ascii_downcase}-{$.n}.json'}
";
    let plan = load_str(yaml, "flow.yaml", &scratch.0).unwrap_or_else(|e| panic!("{}", e.render()));
    let f = compile(&plan).expect("the flow compiles");
    let adapters = f.connect_adapters().await.expect("the adapters connect");
    let (mut running, seen) = start(&f);
    running.attach(adapters);
    let orders = f
        .channels()
        .iter()
        .find(|c| c.name() == "orders")
        .cloned()
        .expect("the channel");
    for payload in [r#"{"kind": "PAID", "n": 1}"#, r#"{"kind": "../x", "n": 2}"#] {
        orders
            .send(eip_core::Message::new(payload.to_owned()))
            .await
            .expect("the channel takes it");
    }
    let written = scratch.0.join("out/paid-1.json");
    let dead = || seen.lock().map(|s| s.clone()).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(written.exists() && dead().len() == 1) {
        assert!(Instant::now() < deadline, "timed out: {:?}", dead());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&written).expect("the file"),
        r#"{"kind": "PAID", "n": 1}"#
    );
    let (letter, error) = dead_letter(&seen);
    assert!(error.contains("would leave"), "{error}");
    assert_eq!(letter.payload_str(), Some(r#"{"kind": "../x", "n": 2}"#));
    assert!(!Path::new(&scratch.0.join("x")).exists());
    assert!(!scratch.0.join("out/x").exists());
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_stream_key_made_by_jq_splits_messages_by_kind_and_a_jq_error_is_dead_lettered() {
    let tag = format!(
        "{}-{}",
        std::process::id(),
        eip_core::MessageId::new().as_uuid().simple()
    );
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let yaml = format!(
        "
channels:
  orders: {{kind: point-to-point}}
bridges:
  out: {{kind: redis-out, from: orders, url: '{url}', stream: 'eiptest:{tag}:{{jq: .kind}}'}}
"
    );
    let scratch = Scratch::new("templates-redis");
    let plan =
        load_str(&yaml, "flow.yaml", &scratch.0).unwrap_or_else(|e| panic!("{}", e.render()));
    let f = compile(&plan).expect("the flow compiles");
    let adapters = f
        .connect_adapters()
        .await
        .unwrap_or_else(|e| panic!("Redis at 127.0.0.1:6379 is needed: {e}"));
    let (mut running, seen) = start(&f);
    running.attach(adapters);
    for payload in [
        r#"{"kind": "paid"}"#,
        r#"{"kind": "sent"}"#,
        r#"{"kind": "paid"}"#,
        r#"{"no": "kind"}"#,
    ] {
        let msg = eip_core::Message::new(payload.to_owned());
        f.bus().publish("orders", msg).await.expect("sent");
    }
    let client = redis::Client::open(url.as_str()).expect("a Redis URL");
    let mut redis = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis at 127.0.0.1:6379");
    let len = |key: String| {
        let mut redis = redis.clone();
        async move {
            redis::cmd("XLEN")
                .arg(key)
                .query_async::<u64>(&mut redis)
                .await
                .unwrap_or(0)
        }
    };
    let dead = || seen.lock().map(|s| s.clone()).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let paid = len(format!("eiptest:{tag}:paid")).await;
        let sent = len(format!("eiptest:{tag}:sent")).await;
        if (paid, sent, dead().len()) == (2, 1, 1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "paid {paid}, sent {sent}, dead letters {:?}",
            dead()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, error) = dead_letter(&seen);
    assert!(error.contains("made null"), "{error}");
    let left = running.stop(Duration::from_secs(5)).await;
    assert!(left.is_empty(), "{left:?}");
    let _: Result<(), _> = redis::cmd("DEL")
        .arg(format!("eiptest:{tag}:paid"))
        .arg(format!("eiptest:{tag}:sent"))
        .query_async(&mut redis)
        .await;
}
