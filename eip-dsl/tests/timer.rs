//! `kind: timer`: a source that makes its own messages. It sends its `count` and stops, keeps
//! sending until the flow stops when it has none, spaces its messages by `interval`, fills its
//! payload template, and is refused at its position when a setting is wrong.

#![cfg(feature = "timer")]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eip_adapters::timer::TimerConfig;
use eip_core::message::Message;
use eip_dsl::compile::{Flow, Output, RunningFlow, compile};
use eip_dsl::load::load_str;

mod support {
    pub mod problems;
    pub mod validate;
}

use support::problems::{at, help, only};

/// The flow `text`, compiled.
fn compiled(text: &str) -> Flow {
    let plan =
        load_str(text, "flow.yaml", Path::new(".")).unwrap_or_else(|e| panic!("{}", e.render()));
    compile(&plan).expect("the flow compiles")
}

/// What reached the flow's outputs, in order.
type Seen = Arc<Mutex<Vec<Message>>>;

/// `flow` running with its adapters; what reaches its outputs is kept.
async fn run(flow: &Flow) -> (RunningFlow, Seen) {
    let seen: Seen = Arc::default();
    let keep = seen.clone();
    let output: Output = Arc::new(move |_, msg| {
        if let Ok(mut seen) = keep.lock() {
            seen.push(msg.clone());
        }
    });
    let adapters = flow.connect_adapters().await.expect("the adapters connect");
    let mut running = flow.start(output);
    running.attach(adapters);
    (running, seen)
}

fn count(seen: &Seen) -> usize {
    seen.lock().map_or(0, |s| s.len())
}

/// Waits up to 10 s for `seen` to hold `n` messages.
async fn until_seen(seen: &Seen, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(seen) < n {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {n} messages"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_sends_its_count_of_templated_messages_then_stops() {
    let flow = compiled(
        r#"
channels:
  ticks: {kind: point-to-point}
adapters:
  clock:
    kind: timer
    to: ticks
    interval: 10ms
    count: 3
    subject: heartbeat.clock
    payload: '{"n": {seq}, "by": "{name}", "at": {timestamp}}'
"#,
    );
    let (running, seen) = run(&flow).await;
    until_seen(&seen, 3).await;
    // Ten intervals more: nothing after the count.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let messages = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(messages.len(), 3, "exactly its count");
    for (i, msg) in messages.iter().enumerate() {
        let seq = i64::try_from(i + 1).unwrap();
        let body: serde_json::Value =
            serde_json::from_slice(msg.payload()).expect("the payload is JSON");
        assert_eq!(body["n"], seq);
        assert_eq!(body["by"], "clock");
        let fired = msg.headers().get("timer-fired-at").and_then(|v| v.as_int());
        assert_eq!(
            body["at"].as_i64(),
            fired,
            "{{timestamp}} is the fired-at header"
        );
        assert_eq!(
            msg.headers().get("timer-sequence").and_then(|v| v.as_int()),
            Some(seq)
        );
        assert_eq!(msg.subject().ok().flatten(), Some("heartbeat.clock"));
        assert_eq!(
            msg.content_type().ok().flatten(),
            Some("application/json"),
            "a JSON payload says so"
        );
    }
    running.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_without_a_count_sends_until_the_flow_stops_taking_input() {
    let flow = compiled(
        "
channels:
  ticks: {kind: point-to-point}
adapters:
  beat: {kind: timer, to: ticks, interval: 5ms, payload: ping}
",
    );
    let (mut running, seen) = run(&flow).await;
    until_seen(&seen, 5).await;
    running.stop_inbound().await;
    assert!(running.settle(Duration::from_secs(5)).await);
    let stopped_at = count(&seen);
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(count(&seen), stopped_at, "nothing after the stop");
    let first = seen.lock().map(|s| s[0].clone()).expect("a message");
    assert_eq!(first.payload_str(), Some("ping"));
    assert_eq!(first.content_type().ok().flatten(), Some("text/plain"));
    running.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_spaces_its_messages_by_its_interval() {
    let flow = compiled(
        "
channels:
  ticks: {kind: point-to-point}
adapters:
  slow: {kind: timer, to: ticks, interval: 80ms, count: 3}
",
    );
    let started = Instant::now();
    let (running, seen) = run(&flow).await;
    until_seen(&seen, 3).await;
    // The first at once, then two intervals.
    assert!(started.elapsed() >= Duration::from_millis(160));
    running.stop(Duration::from_secs(5)).await;
}

#[test]
fn a_timer_is_planned_with_its_defaults_and_drawn_with_its_period() {
    let plan = load_str(
        "
channels:
  ticks: {kind: point-to-point}
adapters:
  clock: {kind: timer, to: ticks, interval: 250ms, count: 2}
",
        "flow.yaml",
        Path::new("."),
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let timer = &plan.adapters[0];
    assert_eq!(timer.kind().as_str(), "timer");
    assert!(timer.is_inbound());
    assert_eq!(timer.endpoint(), "every 250ms, 2 messages");
    let config = timer.config_as::<TimerConfig>().expect("a timer's config");
    assert_eq!(
        config.payload.as_str(),
        r#"{"seq": {seq}, "timestamp": {timestamp}}"#
    );
    assert_eq!(config.content_type, "application/json");
    assert_eq!(config.count, Some(2));
}

#[test]
fn a_timer_s_wrong_settings_are_refused_at_their_position() {
    let base = [
        "channels:",
        "  ticks: {kind: point-to-point}",
        "adapters:",
        "  clock:",
        "    kind: timer",
        "    to: ticks",
    ];
    let with = |line: &'static str| {
        let mut lines = base.to_vec();
        lines.push(line);
        lines
    };
    let lines = with("    payload: 'n={sqe}'");
    let p = only(&lines);
    assert!(
        p.message
            .starts_with("invalid `payload`: unknown placeholder `{sqe}`"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (7, 17), "at the placeholder's brace");
    assert!(help(&p).contains("`{seq}`"));

    let lines = with("    interval: 0s");
    let p = only(&lines);
    assert_eq!(p.message, "`interval` must be longer than zero");

    let lines = with("    count: 0");
    let p = only(&lines);
    assert_eq!(
        p.message,
        "`count` must be a whole number of at least 1, found 0"
    );

    let lines = with("    intervall: 1s");
    let p = only(&lines);
    assert_eq!(p.message, "unknown key `intervall` in adapter `clock`");
    assert_eq!(help(&p), "did you mean `interval`?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heartbeat_example_beats_and_routes_its_three_sample_orders() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/heartbeat.yaml");
    let plan = eip_dsl::load::load_file(&path).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile(&plan).expect("the example compiles");
    let by_channel: Arc<Mutex<Vec<(String, Message)>>> = Arc::default();
    let keep = by_channel.clone();
    let output: Output = Arc::new(move |channel, msg| {
        if let Ok(mut seen) = keep.lock() {
            seen.push((channel.to_owned(), msg.clone()));
        }
    });
    let adapters = flow.connect_adapters().await.expect("the adapters connect");
    let mut running = flow.start(output);
    running.attach(adapters);
    let on = |name: &str| {
        by_channel
            .lock()
            .map(|seen| seen.iter().filter(|(c, _)| c == name).count())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while on("orders.bulk") + on("orders.small") < 3 || on("heartbeats") < 1 {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the example"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.stop_inbound().await;
    assert_eq!((on("orders.bulk"), on("orders.small")), (2, 1));
    let beat = by_channel
        .lock()
        .ok()
        .and_then(|seen| {
            seen.iter()
                .find(|(c, _)| c == "heartbeats")
                .map(|(_, m)| m.clone())
        })
        .expect("a heartbeat");
    let body: serde_json::Value = serde_json::from_slice(beat.payload()).expect("JSON");
    assert_eq!(body["alive"], true);
    assert_eq!(beat.subject().ok().flatten(), Some("heartbeat.eip"));
    running.stop(Duration::from_secs(5)).await;
}
