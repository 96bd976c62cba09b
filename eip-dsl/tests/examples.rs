//! The example flows under `examples/flows`, run through the `eip` binary: `eip route` must
//! give the answers kept next to each flow, and `eip run` must deliver the same messages to
//! the same channels.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn flows() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows")
}

fn eip(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_eip"))
        .args(args)
        .output()
        .expect("the eip binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `eip route FLOW --input INPUT` prints exactly the expected lines.
fn routes_as_expected(flow: &str) {
    let dir = flows();
    let out = eip(&[
        "route",
        dir.join(format!("{flow}.yaml")).to_str().unwrap(),
        "--input",
        dir.join(format!("{flow}.input.jsonl")).to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = std::fs::read_to_string(dir.join(format!("{flow}.expected.jsonl"))).unwrap();
    assert_eq!(text(&out.stdout), expected);
}

/// The records `eip run FLOW --input INPUT` printed (one per message that reached an output
/// channel), and its standard error.
fn run_records(flow: &str) -> (Vec<Value>, String) {
    let dir = flows();
    // A data directory of its own for the flow's durable channels, gone afterwards.
    let data = std::env::temp_dir().join(format!("eip-examples-{flow}-{}", std::process::id()));
    let out = eip(&[
        "run",
        dir.join(format!("{flow}.yaml")).to_str().unwrap(),
        "--input",
        dir.join(format!("{flow}.input.jsonl")).to_str().unwrap(),
        "--stats-interval",
        "0",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&data);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (records, text(&out.stderr))
}

/// What `eip run FLOW --input INPUT` delivered: channel → payloads, and its standard error.
fn run(flow: &str) -> (BTreeMap<String, Vec<Value>>, String) {
    let (records, stderr) = run_records(flow);
    let mut delivered: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for record in records {
        let channel = record["channel"].as_str().unwrap().to_owned();
        delivered
            .entry(channel)
            .or_default()
            .push(record["payload"].clone());
    }
    (delivered, stderr)
}

#[test]
fn the_trading_flow_routes_as_its_expected_answers_say() {
    routes_as_expected("trading");
}

#[test]
fn the_join_chain_routes_as_the_seed_says() {
    routes_as_expected("join-chain");
    let dir = flows();
    let expected = std::fs::read_to_string(dir.join("join-chain.expected.jsonl")).unwrap();
    let first: Value = serde_json::from_str(expected.lines().next().unwrap()).unwrap();
    let stored: Vec<&str> = first["stored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        stored,
        (0..=6).map(|i| format!("channel{i}")).collect::<Vec<_>>(),
        "published to channel0: stored on channel0 to channel6, not on channel7 to channel9"
    );
}

#[test]
fn the_order_history_example_shows_the_way_each_copy_came() {
    routes_as_expected("order-history");
}

#[test]
fn running_the_order_history_example_puts_the_way_in_each_message() {
    let (records, _) = run_records("order-history");
    let mut ways = BTreeMap::new();
    for record in records {
        let history: Value =
            serde_json::from_str(record["headers"]["history"].as_str().unwrap()).unwrap();
        let names: Vec<String> = history
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        let order = record["payload"]["order"].as_str().unwrap().to_owned();
        let channel = record["channel"].as_str().unwrap().to_owned();
        ways.insert((order, channel), names.join(" > "));
    }
    let way = |order: &str, channel: &str| ways[&(order.to_owned(), channel.to_owned())].clone();
    assert_eq!(
        way("A-2", "orders.large"),
        "orders > triage > triage/1 wire-tap > triage/2 filter > orders.large"
    );
    assert_eq!(
        way("A-3", "orders.empty"),
        "orders > triage > triage/1 wire-tap > orders.empty"
    );
    assert_eq!(way("A-1", "orders.audit"), "orders > triage > orders.audit");
    assert_eq!(ways.len(), 6, "{ways:?}");
}

#[test]
fn running_the_trading_flow_delivers_each_message_where_route_said() {
    let (delivered, stderr) = run("trading");
    let symbols = |channel: &str| -> Vec<String> {
        delivered
            .get(channel)
            .map(|payloads| {
                let mut s: Vec<String> = payloads
                    .iter()
                    .map(|p| p["symbol"].as_str().unwrap_or_default().to_owned())
                    .collect();
                s.sort();
                s
            })
            .unwrap_or_default()
    };
    assert_eq!(symbols("trades.buy"), ["IBM"]);
    assert_eq!(symbols("trades.sell"), ["VOD"]);
    assert_eq!(symbols("trades.approval"), ["AAPL"]);
    assert_eq!(symbols("trades.audit"), ["AAPL", "GME", "IBM", "VOD"]);
    assert_eq!(symbols("dead-letters"), ["GME"]);
    assert_eq!(
        symbols("trades.invalid"),
        [""],
        "the request without a symbol"
    );
    assert_eq!(
        symbols("quotes.nyse"),
        ["IBM"],
        "once, though two paths lead there"
    );
    assert_eq!(symbols("quotes.archive"), ["IBM", "VOD"]);
    assert_eq!(symbols("quotes"), ["IBM", "VOD"]);
    assert_eq!(symbols("unrouted"), ["UST10Y"]);
    assert!(
        stderr.contains("trades.requests: in 5, out 4, dead letters 1, invalid 1, waiting 0"),
        "{stderr}"
    );
    assert!(stderr.contains("[eip] stopped"), "{stderr}");
}

#[test]
fn running_the_join_chain_stores_on_channel0_to_channel6() {
    let (delivered, _) = run("join-chain");
    let count = |channel: &str| delivered.get(channel).map_or(0, Vec::len);
    for i in 0..=4 {
        assert_eq!(count(&format!("channel{i}")), 1, "channel{i}");
    }
    // channel5 and channel6 also get the message published on channel5 (which goes on to
    // channel9: its joins have the default hop count).
    for i in 5..=6 {
        assert_eq!(count(&format!("channel{i}")), 2, "channel{i}");
    }
    for i in 7..=9 {
        assert_eq!(
            count(&format!("channel{i}")),
            1,
            "channel{i}: only the second message"
        );
    }
}

#[test]
fn running_the_sensor_batches_flow_delivers_the_expected_batches() {
    let (delivered, stderr) = run("sensor-batches");
    let expected: Vec<Value> =
        std::fs::read_to_string(flows().join("sensor-batches.expected.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    assert_eq!(delivered.get("batches"), Some(&expected), "{stderr}");
    assert_eq!(
        delivered.get("dead-letters"),
        Some(&vec![serde_json::json!({"celsius": 40})]),
        "the reading without a sensor"
    );
}
