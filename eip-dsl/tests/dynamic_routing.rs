//! Destinations computed per message: `to` and `recipient-list` entries that are templates,
//! with JSONPath and jq placeholders; a name no channel has is `no-route`, a jq error `invalid`.

use std::path::Path;

use eip_dsl::compile::{self, Flow, InputMessage, Report, ReportEntry};
use eip_dsl::load;

const FLOW: &str = "
channels:
  orders: {kind: point-to-point}
  orders.eu: {kind: point-to-point}
  orders.us: {kind: point-to-point}
  audit: {kind: point-to-point}
routes:
  - from: orders
    to: ['orders.{$.region}', audit]
";

fn flow(yaml: &str) -> Flow {
    match load::load_str(yaml, "flow.yaml", Path::new(".")) {
        Ok(plan) => compile::compile(&plan).unwrap(),
        Err(errors) => panic!("{}", errors.render()),
    }
}

fn problems(yaml: &str) -> String {
    match load::load_str(yaml, "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("the flow validated"),
        Err(errors) => errors.render(),
    }
}

/// `FLOW` with the region written lower case by jq.
#[cfg(feature = "jq")]
fn jq_flow() -> String {
    FLOW.replace("{$.region}", "{jq: .region | ascii_downcase}")
}

fn dry(flow: &Flow, line: &str) -> Report {
    flow.dry_run(&InputMessage::parse(line).unwrap()).unwrap()
}

#[test]
fn each_message_names_its_destination() {
    let f = flow(FLOW);
    assert_eq!(
        dry(&f, r#"{"to": "orders", "payload": {"region": "eu"}}"#).stored,
        ["audit", "orders", "orders.eu"]
    );
    assert_eq!(
        dry(&f, r#"{"to": "orders", "payload": {"region": "us"}}"#).stored,
        ["audit", "orders", "orders.us"]
    );
}

#[test]
fn a_destination_that_does_not_exist_or_can_not_be_made_is_a_dead_letter() {
    let f = flow(FLOW);
    let no_route = Some(ReportEntry {
        channel: "dead-letters".into(),
        reason: "no-route".into(),
    });
    for payload in [r#"{"region": "mars"}"#, r#"{"country": "fr"}"#, r#""text""#] {
        let report = dry(&f, &format!(r#"{{"to": "orders", "payload": {payload}}}"#));
        assert_eq!(
            report.stored,
            ["audit", "dead-letters", "orders"],
            "{payload}"
        );
        assert_eq!(report.dead_letter, no_route, "{payload}");
    }
}

#[test]
fn the_running_flow_sends_where_the_template_says() {
    let f = flow(FLOW);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let route = &f.routes()[0];
        for payload in [
            r#"{"region": "eu"}"#,
            r#"{"region": "eu"}"#,
            r#"{"region": "mars"}"#,
        ] {
            route
                .handle(eip_core::Message::new(payload.to_owned()))
                .await
                .unwrap();
        }
    });
    let depth = |name: &str| {
        f.channels()
            .iter()
            .find(|c| c.name() == name)
            .map(|c| c.stats().depth)
            .unwrap()
    };
    assert_eq!(
        (depth("orders.eu"), depth("audit"), depth("dead-letters")),
        (2, 3, 1)
    );
    let stats = f.routes()[0].stats();
    assert_eq!(stats.dead_lettered, 1);
}

#[test]
fn a_bad_template_is_refused_where_it_is_wrong() {
    let text = problems(&FLOW.replace("{$.region}", "{$.region"));
    assert!(text.contains("invalid template"), "{text}");
    assert!(text.contains("never closed"), "{text}");
    assert!(text.contains("key: routes[0].to[0]"), "{text}");
    let text = problems(&FLOW.replace("{$.region}", "{region}"));
    assert!(text.contains("unknown placeholder `{region}`"), "{text}");
    assert!(
        text.contains("flow.yaml:9:19"),
        "points inside the template: {text}"
    );
}

#[test]
fn a_choice_names_its_targets() {
    let text = problems(
        "
channels:
  orders: {kind: point-to-point}
  orders.eu: {kind: point-to-point}
routes:
  - from: orders
    choice:
      - {when: 'exists($.region)', to: 'orders.{$.region}'}
",
    );
    assert!(
        text.contains("is a template, and a `choice` sends to a named channel or exchange"),
        "{text}"
    );
}

#[cfg(feature = "jq")]
fn dry_payload(flow: &Flow, payload: &str) -> Report {
    dry(
        flow,
        &format!(r#"{{"to": "orders", "payload": {payload}}}"#),
    )
}

#[cfg(feature = "jq")]
#[test]
fn a_jq_placeholder_names_each_message_s_destination() {
    let f = flow(&jq_flow());
    assert_eq!(
        dry_payload(&f, r#"{"region": "EU"}"#).stored,
        ["audit", "orders", "orders.eu"]
    );
    assert_eq!(
        dry_payload(&f, r#"{"region": "Us"}"#).stored,
        ["audit", "orders", "orders.us"]
    );
}

#[cfg(feature = "jq")]
#[test]
fn a_jq_error_makes_the_message_invalid_and_a_name_no_channel_has_is_no_route() {
    let f = flow(&jq_flow());
    // `ascii_downcase` of a number, of null, and a payload that is not JSON: jq errors.
    for payload in [r#"{"region": 5}"#, r#"{"country": "fr"}"#, r#""text""#] {
        let report = dry_payload(&f, payload);
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
    let report = dry_payload(&f, r#"{"region": "MARS"}"#);
    assert_eq!(
        report.dead_letter.map(|d| d.reason),
        Some("no-route".to_owned())
    );
}

#[cfg(feature = "jq")]
#[test]
fn the_running_route_dead_letters_a_jq_error_with_reason_invalid() {
    let f = flow(&jq_flow());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let channel = |name: &str| {
        f.channels()
            .iter()
            .find(|c| c.name() == name)
            .cloned()
            .unwrap()
    };
    let letter = runtime.block_on(async {
        for payload in [r#"{"region": "EU"}"#, r#"{"region": 5}"#] {
            let msg = eip_core::Message::new(payload.to_owned());
            f.routes()[0].handle(msg).await.unwrap();
        }
        let eip_core::channel::Channel::PointToPoint(dead) = channel("dead-letters") else {
            panic!("the dead letter channel is a queue")
        };
        assert_eq!(dead.stats().depth, 1);
        let delivery = dead.receiver().recv().await.unwrap();
        let letter = delivery.message().clone();
        delivery.ack();
        letter
    });
    assert_eq!(channel("orders.eu").stats().depth, 1);
    assert_eq!(channel("audit").stats().depth, 2);
    let death = letter.death().unwrap().expect("a death record");
    assert_eq!(death.reason.as_str(), "invalid");
    let error = death.error.unwrap_or_default();
    assert!(error.contains("ascii_downcase"), "{error}");
    assert_eq!(f.routes()[0].stats().invalid, 1);
}

#[cfg(feature = "jq")]
#[test]
fn a_bad_jq_expression_is_refused_at_its_byte_in_the_flow_file() {
    let text = problems(&jq_flow().replace("ascii_downcase", "lower"));
    assert!(text.contains("invalid template"), "{text}");
    assert!(text.contains("undefined filter `lower/0`"), "{text}");
    assert!(text.contains("key: routes[0].to[0]"), "{text}");
    // `    to: ['` is 10 columns; `lower` is byte 22 of the template.
    assert!(text.contains("flow.yaml:9:33"), "{text}");
}

#[cfg(not(feature = "jq"))]
#[test]
fn without_jq_a_jq_placeholder_is_refused_saying_so() {
    let text = problems(&FLOW.replace("{$.region}", "{jq: .region}"));
    assert!(
        text.contains("needs the cargo feature `jq`, which this eip is built without"),
        "{text}"
    );
    assert!(
        text.contains("flow.yaml:9:22"),
        "points at the expression: {text}"
    );
}
