//! One template language everywhere: jq placeholders (`{jq: EXPR}`) in route targets and
//! adapter destinations, checked by `eip validate` at their byte in the flow file, and at run
//! time a jq error making the message invalid (dead letter reason `invalid`), never a silent
//! drop.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eip_dsl::compile::{self, Flow, InputMessage, Report, ReportEntry};
use eip_dsl::load;

mod support {
    pub mod scratch;
}

use support::scratch::Scratch;

const FLOW: &str = "
channels:
  orders: {kind: point-to-point}
  orders.eu: {kind: point-to-point}
  orders.us: {kind: point-to-point}
  audit: {kind: point-to-point}
routes:
  - from: orders
    to: ['orders.{jq: .region | ascii_downcase}', audit]
";

fn flow(yaml: &str, dir: &Path) -> Flow {
    match load::load_str(yaml, "flow.yaml", dir) {
        Ok(plan) => compile::compile(&plan).expect("the flow compiles"),
        Err(errors) => panic!("{}", errors.render()),
    }
}

fn problems(yaml: &str) -> String {
    match load::load_str(yaml, "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("the flow validated"),
        Err(errors) => errors.render(),
    }
}

fn dry(flow: &Flow, payload: &str) -> Report {
    let line = format!(r#"{{"to": "orders", "payload": {payload}}}"#);
    flow.dry_run(&InputMessage::parse(&line).expect("an input line"))
        .expect("a dry run")
}

#[test]
fn a_jq_placeholder_names_each_message_s_destination() {
    let f = flow(FLOW, Path::new("."));
    assert_eq!(
        dry(&f, r#"{"region": "EU"}"#).stored,
        ["audit", "orders", "orders.eu"]
    );
    assert_eq!(
        dry(&f, r#"{"region": "Us"}"#).stored,
        ["audit", "orders", "orders.us"]
    );
}

#[test]
fn a_jq_error_makes_the_message_invalid_and_a_name_no_channel_has_is_no_route() {
    let f = flow(FLOW, Path::new("."));
    // `ascii_downcase` of a number, of null, and a payload that is not JSON: jq errors.
    for payload in [r#"{"region": 5}"#, r#"{"country": "fr"}"#, r#""text""#] {
        let report = dry(&f, payload);
        assert_eq!(
            report.stored,
            ["audit", "dead-letters", "orders"],
            "{payload}"
        );
        assert_eq!(
            report.dead_letter,
            Some(ReportEntry {
                channel: "dead-letters".into(),
                reason: "invalid".into(),
            }),
            "{payload}"
        );
    }
    let report = dry(&f, r#"{"region": "MARS"}"#);
    assert_eq!(
        report.dead_letter.map(|d| d.reason),
        Some("no-route".to_owned())
    );
}

#[test]
fn the_running_route_dead_letters_a_jq_error_with_reason_invalid() {
    let f = flow(FLOW, Path::new("."));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let channel = |name: &str| {
        f.channels()
            .iter()
            .find(|c| c.name() == name)
            .cloned()
            .expect("a channel")
    };
    let letter = runtime.block_on(async {
        let route = &f.routes()[0];
        for payload in [r#"{"region": "EU"}"#, r#"{"region": 5}"#] {
            route
                .handle(eip_core::Message::new(payload.to_owned()))
                .await
                .expect("the route takes it");
        }
        let eip_core::channel::Channel::PointToPoint(dead) = channel("dead-letters") else {
            panic!("the dead letter channel is a queue")
        };
        assert_eq!(dead.stats().depth, 1);
        let delivery = dead.receiver().recv().await.expect("a dead letter");
        let letter = delivery.message().clone();
        delivery.ack();
        letter
    });
    assert_eq!(channel("orders.eu").stats().depth, 1);
    assert_eq!(channel("audit").stats().depth, 2);
    let death = letter
        .death()
        .expect("a readable death header")
        .expect("a death record");
    assert_eq!(death.reason.as_str(), "invalid");
    assert!(
        death
            .error
            .as_deref()
            .is_some_and(|e| e.contains("ascii_downcase")),
        "{death:?}"
    );
}

#[test]
fn a_bad_jq_expression_is_refused_at_its_byte_in_the_flow_file() {
    let text = problems(&FLOW.replace("ascii_downcase", "lower"));
    assert!(text.contains("invalid template"), "{text}");
    assert!(text.contains("undefined filter `lower/0`"), "{text}");
    assert!(text.contains("key: routes[0].to[0]"), "{text}");
    // `    to: ['` is 10 columns; `lower` is byte 22 of the template.
    assert!(text.contains("flow.yaml:9:33"), "{text}");
}

#[test]
fn an_adapter_destination_takes_jq_and_reports_a_bad_expression_inside_it() {
    let bridge = |key: &str, value: &str, kind: &str, extra: &str| {
        format!(
            "channels:\n  orders: {{kind: point-to-point}}\nbridges:\n  out: {{kind: {kind}, from: orders, {extra}{key}: '{value}'}}\n"
        )
    };
    let nats = |v: &str| bridge("subject", v, "nats-out", "url: 'nats://127.0.0.1:4222', ");
    let amqp = |v: &str| {
        bridge(
            "routing-key",
            v,
            "rabbitmq-out",
            "url: 'amqp://127.0.0.1', exchange: x, ",
        )
    };
    let mqtt = |v: &str| {
        bridge(
            "topic",
            v,
            "mqtt-out",
            "url: 'mqtt://127.0.0.1:1883', client-id: t, ",
        )
    };
    for good in [
        nats("events.{jq: .type}.{header.region}"),
        amqp("orders.{$.region}.{jq: .kind}"),
        mqtt("plant/{jq: .line}/{subject}"),
    ] {
        if let Err(e) = load::load_str(&good, "flow.yaml", Path::new(".")) {
            panic!("{good}\n{}", e.render());
        }
    }
    let text = problems(&nats("events.{jq: .type | nope}"));
    assert!(
        text.contains("invalid `subject`: jq: undefined filter `nope/0`"),
        "{text}"
    );
    let at = text.find("flow.yaml:4:").expect("a position");
    let column: String = text[at + "flow.yaml:4:".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let line = nats("events.{jq: .type | nope}");
    let value_at = line
        .lines()
        .nth(3)
        .and_then(|l| l.find("events"))
        .expect("the value");
    assert_eq!(column, (value_at + 1 + 19).to_string(), "{text}");
    // What a broker refuses in its own text is still refused.
    let text = problems(&mqtt("plant/#/{jq: .line}"));
    assert!(text.contains("wildcards"), "{text}");
    let text = problems(&amqp("orders.{nope}"));
    assert!(text.contains("unknown placeholder `{nope}`"), "{text}");
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
    let f = flow(yaml, &scratch.0);
    let adapters = f.connect_adapters().await.expect("the adapters connect");
    let mut running = f.start(Arc::new(|channel: &str, _: &eip_core::Message| {
        panic!("nothing is an output, yet {channel} printed")
    }));
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
    let dead = f
        .channels()
        .iter()
        .find(|c| c.name() == "dead-letters")
        .cloned()
        .expect("the dead letter channel");
    let written = scratch.0.join("out/paid-1.json");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(written.exists() && dead.stats().depth == 1) {
        assert!(Instant::now() < deadline, "timed out: {:?}", dead.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&written).expect("the file"),
        r#"{"kind": "PAID", "n": 1}"#
    );
    assert!(!scratch.0.join("x").exists() && !scratch.0.join("out/x").exists());
    running.stop(Duration::from_secs(5)).await;
}
