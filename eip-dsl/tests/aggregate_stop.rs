//! What an aggregator does with its open groups when the flow stops (`on-stop:`): released by
//! default on a route kept in memory, dead-lettered as `incomplete`, dropped, or kept in the
//! store of a durable route for the next start; through `RunningFlow::stop` and through `eip
//! run` (its input ended, or SIGTERM), and the problems `eip validate` reports.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eip_core::Message;
use eip_core::message::DeathReason;

mod support {
    pub mod durable_run;
    pub mod one_route;
    pub mod scratch;
    pub mod stopping;
}

use support::durable_run::run_durable;
use support::one_route::{problems, yaml_with};
use support::scratch::Scratch;
use support::stopping::run_then_stop;

fn reading(sensor: &str, value: u64) -> Message {
    Message::new(format!(r#"{{"sensor": "{sensor}", "value": {value}}}"#))
}

fn json(msg: &Message) -> serde_json::Value {
    serde_json::from_slice(msg.payload()).expect("a JSON payload")
}

/// Three readings: two groups (`s1` with 2, `s2` with 1), none complete at 10.
fn three_readings() -> Vec<Message> {
    vec![reading("s1", 1), reading("s2", 10), reading("s1", 2)]
}

fn on(channel: &str, seen: &[(String, Message)]) -> Vec<serde_json::Value> {
    seen.iter()
        .filter(|(c, _)| c == channel)
        .map(|(_, m)| json(m))
        .collect()
}

fn aggregate(on_stop: &str) -> String {
    yaml_with(
        "",
        &format!("      - aggregate: {{key: '.sensor', size: 10{on_stop}}}"),
    )
}

#[test]
fn by_default_a_stopping_flow_releases_the_open_groups_through_the_rest_of_the_route() {
    let (seen, flow) = run_then_stop(&aggregate(""), three_readings());
    assert_eq!(
        on("out", &seen),
        [
            serde_json::json!([{"sensor": "s1", "value": 1}, {"sensor": "s1", "value": 2}]),
            serde_json::json!([{"sensor": "s2", "value": 10}]),
        ],
        "oldest group first"
    );
    assert!(on("dead-letters", &seen).is_empty());
    // Counted as the route's and the channel's own.
    assert_eq!(flow.routes()[0].stats().passed, 2);
    let out = flow
        .channels()
        .iter()
        .find(|c| c.name() == "out")
        .expect("out");
    assert_eq!(out.stats().accepted, 2);
}

#[test]
fn a_stopping_flow_can_send_the_open_groups_to_the_dead_letters_as_incomplete() {
    let (seen, _) = run_then_stop(&aggregate(", on-stop: dead-letter"), three_readings());
    assert!(on("out", &seen).is_empty());
    let dead: Vec<&Message> = seen
        .iter()
        .filter(|(c, _)| c == "dead-letters")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(dead.len(), 3, "each message of each group");
    for msg in dead {
        let death = msg.death().expect("readable").expect("a death record");
        assert_eq!(death.reason, DeathReason::Incomplete);
        let error = death.error.unwrap_or_default();
        assert!(error.contains("given up (stop)"), "{error}");
    }
}

#[test]
fn a_stopping_flow_can_drop_the_open_groups() {
    let (seen, flow) = run_then_stop(&aggregate(", on-stop: drop"), three_readings());
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(flow.routes()[0].stats().passed, 0);
}

const BY_SENSOR: &str = "
  - name: by-sensor
    from: orders
    steps:
      - aggregate: {key: '.sensor', size: 10}
    to: batches";

const ALL_BATCHES: &str = "
  - name: all-batches
    from: batches
    steps:
      - aggregate: {key: '\"all\"', size: 10}
    to: out";

/// Whichever route is declared first, the one fed by the other hands on, at stop, one group
/// holding everything the other handed on: routes hand on one at a time, each followed by a
/// settle, never while what another handed on is still on its way.
#[test]
fn a_group_released_at_stop_into_another_aggregator_is_released_there_too() {
    for routes in [[BY_SENSOR, ALL_BATCHES], [ALL_BATCHES, BY_SENSOR]] {
        let yaml = format!(
            "
channels:
  orders: {{kind: point-to-point}}
  batches: {{kind: point-to-point}}
  out: {{kind: point-to-point}}
routes:{}{}
",
            routes[0], routes[1]
        );
        released_into_another_aggregator(&yaml);
    }
}

fn released_into_another_aggregator(yaml: &str) {
    let (seen, _) = run_then_stop(yaml, three_readings());
    let out = on("out", &seen);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        out[0],
        serde_json::json!([
            [{"sensor": "s1", "value": 1}, {"sensor": "s1", "value": 2}],
            [{"sensor": "s2", "value": 10}]
        ])
    );
}

const DURABLE: &str = "
channels:
  orders: {kind: point-to-point, durable: true}
  out: {kind: point-to-point, durable: true}
routes:
  - name: batch
    from: orders
    steps:
      - aggregate: {key: '.sensor', size: 3, timeout: 1s ON_STOP}
    to: out
";

fn durable(on_stop: &str) -> String {
    DURABLE.replace(" ON_STOP", on_stop)
}

#[test]
fn on_a_durable_route_the_open_groups_are_kept_for_the_next_start_unless_told_otherwise() {
    for on_stop in ["", ", on-stop: keep"] {
        let scratch = Scratch::new("aggregate-stop-keep");
        let data = scratch.0.join("data");
        let yaml = durable(on_stop);
        let out = run_durable(&yaml, &data, "orders", three_readings(), Duration::ZERO);
        assert!(out.is_empty(), "{on_stop}: kept, not released");
        let out = run_durable(
            &yaml,
            &data,
            "orders",
            vec![reading("s1", 3)],
            Duration::ZERO,
        );
        assert_eq!(out.len(), 1, "{on_stop}: s1 completes with what was kept");
        assert_eq!(json(&out[0]).as_array().map(Vec::len), Some(3));
    }
}

#[test]
fn on_a_durable_route_groups_released_at_stop_are_gone_from_the_store() {
    let scratch = Scratch::new("aggregate-stop-release");
    let data = scratch.0.join("data");
    let yaml = durable(", on-stop: release");
    let out = run_durable(&yaml, &data, "orders", three_readings(), Duration::ZERO);
    assert_eq!(out.len(), 2, "released at stop");
    // The next start holds nothing: its timeout gives nothing back.
    let out = run_durable(
        &yaml,
        &data,
        "orders",
        Vec::new(),
        Duration::from_millis(1500),
    );
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn on_a_durable_route_groups_dropped_at_stop_are_gone_from_the_store() {
    let scratch = Scratch::new("aggregate-stop-drop");
    let data = scratch.0.join("data");
    let yaml = durable(", on-stop: drop");
    let out = run_durable(&yaml, &data, "orders", three_readings(), Duration::ZERO);
    assert!(out.is_empty());
    // s1's group is gone: a new message of s1 opens a group of one, which times out.
    let out = run_durable(
        &yaml,
        &data,
        "orders",
        vec![reading("s1", 3)],
        Duration::from_millis(1500),
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        json(&out[0]),
        serde_json::json!([{"sensor": "s1", "value": 3}])
    );
}

#[test]
fn a_bad_on_stop_is_reported_at_its_value() {
    let text = problems("      - aggregate: {size: 2, on-stop: flush}");
    assert!(text.contains("`on-stop` can not be `flush`"), "{text}");
    assert!(text.contains("flow.yaml:8:39"), "{text}");

    let text = problems("      - aggregate: {size: 2, on-stop: keep}");
    assert!(
        text.contains("`on-stop: keep` keeps the open groups"),
        "{text}"
    );
    assert!(text.contains("`orders` is not durable"), "{text}");
    assert!(text.contains("flow.yaml:8:39"), "{text}");
    assert!(text.contains("durable: true"), "the help: {text}");
}

/// The flow file `yaml` and the input `lines` in a scratch directory: `eip run --input`.
fn eip_run(scratch: &Scratch, yaml: &str, lines: &[&str]) -> std::process::Output {
    let flow = scratch.0.join("flow.yaml");
    std::fs::write(&flow, yaml).expect("written");
    let input = scratch.0.join("input.jsonl");
    std::fs::write(&input, lines.join("\n")).expect("written");
    Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(&flow)
        .arg("--input")
        .arg(&input)
        .args(["--stats-interval", "0"])
        .current_dir(&scratch.0)
        .output()
        .expect("eip runs")
}

const LINES: [&str; 3] = [
    r#"{"to": "orders", "payload": {"sensor": "s1", "value": 1}}"#,
    r#"{"to": "orders", "payload": {"sensor": "s2", "value": 10}}"#,
    r#"{"to": "orders", "payload": {"sensor": "s1", "value": 2}}"#,
];

/// The payloads of the output lines on `channel`.
fn printed(stdout: &[u8], channel: &str) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["channel"] == channel)
        .map(|v| v["payload"].clone())
        .collect()
}

#[test]
fn eip_run_releases_the_open_groups_when_its_input_ends_before_it_exits() {
    let scratch = Scratch::new("aggregate-stop-run");
    let out = eip_run(&scratch, &aggregate(""), &LINES);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        printed(&out.stdout, "out"),
        [
            serde_json::json!([{"sensor": "s1", "value": 1}, {"sensor": "s1", "value": 2}]),
            serde_json::json!([{"sensor": "s2", "value": 10}]),
        ]
    );
    // The final counters come after the release: the aggregates are counted.
    assert!(err.contains("out: in 2, out 2"), "{err}");
}

#[test]
fn eip_run_dead_letters_or_drops_the_open_groups_as_on_stop_says() {
    let scratch = Scratch::new("aggregate-stop-run-dead");
    let out = eip_run(&scratch, &aggregate(", on-stop: dead-letter"), &LINES);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(printed(&out.stdout, "out").is_empty());
    assert_eq!(printed(&out.stdout, "dead-letters").len(), 3, "{err}");

    let scratch = Scratch::new("aggregate-stop-run-drop");
    let out = eip_run(&scratch, &aggregate(", on-stop: drop"), &LINES);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty());
    assert!(err.contains("2 open groups dropped (3 messages)"), "{err}");
}

#[test]
fn eip_run_releases_the_open_groups_on_sigterm() {
    let scratch = Scratch::new("aggregate-stop-sigterm");
    let flow = scratch.0.join("flow.yaml");
    std::fs::write(&flow, aggregate("")).expect("written");
    let mut child = Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(&flow)
        .args(["--input", "-", "--receipts", "--stats-interval", "0"])
        .current_dir(&scratch.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eip runs");
    let mut stdin = child.stdin.take().expect("its input");
    for line in LINES {
        writeln!(stdin, "{line}").expect("written");
    }
    stdin.flush().expect("flushed");
    // Each line accepted (a receipt), so the groups are open when the signal comes.
    let mut stdout = BufReader::new(child.stdout.take().expect("its output"));
    let mut lines = Vec::new();
    while lines
        .iter()
        .filter(|l: &&String| l.contains("accepted"))
        .count()
        < 3
    {
        let mut line = String::new();
        if stdout.read_line(&mut line).expect("readable") == 0 {
            panic!("eip's output ended after {lines:?}");
        }
        lines.push(line);
    }
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("waitable") {
            break exit;
        }
        if Instant::now() > deadline {
            child.kill().expect("killed");
            panic!("eip run did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).expect("readable");
    let mut err = String::new();
    let mut stderr = child.stderr.take().expect("its errors");
    std::io::Read::read_to_string(&mut stderr, &mut err).expect("readable");
    assert_eq!(exit.code(), Some(0), "{err}");
    assert_eq!(printed(&rest, "out").len(), 2, "{err}");
    assert!(err.contains("out: in 2, out 2"), "{err}");
}
