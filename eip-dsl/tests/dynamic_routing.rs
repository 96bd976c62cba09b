//! Destinations computed per message: `to` and `recipient-list` entries that are templates.

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
