//! Adapters and bridges declared with the Rust builder: the same keys and the same checks as
//! in a flow file (the same problem, key path and help), and a flow so declared runs.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_dsl::builder::{FlowBuilder, adapter, channel};
use eip_dsl::compile::Output;
use eip_dsl::diagnostic::Problem;
use eip_dsl::load::load_str;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

/// A problem as (message, key, help).
type Said = (String, String, String);

/// The problems of the flow made in code, and of the same flow written as a file.
fn both(code: &FlowBuilder, file: &str) -> (Vec<Said>, Vec<Said>) {
    let texts = |problems: Vec<Problem>| {
        problems
            .into_iter()
            .map(|p| {
                (
                    p.message,
                    p.key.unwrap_or_default(),
                    p.help.unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    };
    let from_code = code
        .plan(".")
        .expect_err("the code flow is refused")
        .problems;
    let from_file = load_str(file, "flow.yaml", Path::new("."))
        .expect_err("the file flow is refused")
        .problems;
    (texts(from_code), texts(from_file))
}

#[test]
fn a_bad_value_is_the_same_problem_in_code_as_in_a_file() {
    let code = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .adapter(
            "incoming",
            adapter::kind("file-in")
                .to("orders")
                .set("dir", "in")
                .set("max-size", "lots")
                .set("poll-interval", 5),
        );
    let file = "
channels:
  orders: {kind: point-to-point}
adapters:
  incoming: {kind: file-in, to: orders, dir: in, max-size: lots, poll-interval: 5}
";
    let (code, file) = both(&code, file);
    assert_eq!(code.len(), 2, "{code:?}");
    assert_eq!(code, file);
}

#[test]
fn a_missing_required_key_and_a_missing_channel_are_reported_in_code() {
    let errors = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .adapter(
            "poll",
            adapter::kind("sql-in").set("url", "sqlite:orders.db"),
        )
        .plan(".")
        .expect_err("refused");
    let messages: Vec<&str> = errors.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages.contains(&"`sql-in` adapter `poll` has no `query`"),
        "{messages:?}"
    );
    assert!(
        messages.contains(&"`sql-in` adapter `poll` has no `to`"),
        "{messages:?}"
    );
}

#[test]
fn a_key_the_kind_does_not_have_is_refused_with_the_closest_one() {
    let errors = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .adapter(
            "incoming",
            adapter::kind("file-in")
                .to("orders")
                .set("dir", "in")
                .set("glb", "*.json"),
        )
        .plan(".")
        .expect_err("refused");
    let p = &errors.problems[0];
    assert_eq!(
        p.message,
        "unknown key `glb` in `file-in` adapter `incoming`"
    );
    assert_eq!(p.key.as_deref(), Some("adapters[\"incoming\"].glb"));
    assert_eq!(p.help.as_deref(), Some("did you mean `glob`?"));
}

#[test]
fn an_outbound_kind_given_to_is_refused_as_a_file_would_be() {
    let errors = FlowBuilder::new()
        .channel("shipped", channel::point_to_point())
        .adapter(
            "notify",
            adapter::kind("http-out")
                .to("shipped")
                .set("url", "http://127.0.0.1:9/x"),
        )
        .plan(".")
        .expect_err("refused");
    let messages: Vec<&str> = errors.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "unknown key `to` in `http-out` adapter `notify`",
            "`http-out` adapter `notify` has no `from`"
        ]
    );
}

#[test]
fn an_unknown_kind_and_a_bridge_under_adapters_are_refused() {
    let errors = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .adapter("a", adapter::kind("file-inn").to("orders"))
        .adapter(
            "b",
            adapter::kind("rabbitmq-in")
                .to("orders")
                .set("url", "amqp://127.0.0.1:5672/%2f")
                .set("queue", "orders"),
        )
        .plan(".")
        .expect_err("refused");
    let problems: Vec<(&str, Option<&str>)> = errors
        .problems
        .iter()
        .map(|p| (p.message.as_str(), p.help.as_deref()))
        .collect();
    assert_eq!(
        problems,
        [
            (
                "`kind` can not be `file-inn`",
                Some("did you mean `file-in`?")
            ),
            (
                "`rabbitmq-in` is a messaging bridge: declare it under `bridges:`",
                None
            ),
        ]
    );
}

#[test]
fn a_bridge_declared_in_code_is_planned_with_its_settings() {
    let plan = FlowBuilder::new()
        .channel("alerts", channel::point_to_point())
        .bridge(
            "to-rabbit",
            adapter::kind("rabbitmq-out")
                .from("alerts")
                .set("url", "amqp://guest:guest@127.0.0.1:5672/%2f")
                .set("exchange", "alerts")
                .set("routing-key", "{subject}")
                .set("concurrency", 4)
                .map(
                    "rate-limit",
                    [
                        ("requests", adapter::Value::from(10)),
                        ("per", Duration::from_secs(1).into()),
                    ],
                ),
        )
        .plan(".")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let bridge = &plan.adapters[0];
    assert!(bridge.is_bridge());
    assert_eq!(bridge.kind().as_str(), "rabbitmq-out");
    assert_eq!(bridge.outbound.concurrency, Some(4));
    assert_eq!(
        bridge.outbound.rate_limit,
        Some((10, Duration::from_secs(1)))
    );
    assert_eq!(
        bridge.endpoint(),
        "amqp://guest:***@127.0.0.1:5672/%2f exchange alerts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_of_adapters_made_in_code_runs_a_timer_into_a_directory() {
    let scratch = Scratch::new("builder-adapters");
    let flow = FlowBuilder::new()
        .channel("ticks", channel::point_to_point())
        .adapter(
            "clock",
            adapter::kind("timer")
                .to("ticks")
                .set("interval", Duration::from_millis(10))
                .set("count", 3)
                .set("payload", "tick {seq}"),
        )
        .adapter(
            "files",
            adapter::kind("file-out")
                .from("ticks")
                .set("dir", "out")
                .set("name", "{header.timer-sequence}.txt"),
        )
        .compile(&scratch.0)
        .unwrap_or_else(|e| panic!("{e}"));
    let adapters = flow.connect_adapters().await.expect("the adapters connect");
    let output: Output = Arc::new(|_, _| {});
    let mut running = flow.start(output);
    running.attach(adapters);
    let out = scratch.0.join("out");
    let deadline = Instant::now() + Duration::from_secs(10);
    while ["1.txt", "2.txt", "3.txt"]
        .iter()
        .any(|name| !out.join(name).exists())
    {
        assert!(Instant::now() < deadline, "timed out waiting for the files");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.stop(Duration::from_secs(5)).await;
    assert_eq!(
        std::fs::read_to_string(out.join("2.txt")).expect("a file"),
        "tick 2"
    );
}
