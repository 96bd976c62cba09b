//! Route steps: how `steps:` is read and checked, what each step does in a dry run and in a
//! running flow, and that the Rust builder makes the same steps.

use std::path::Path;
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::builder::{FlowBuilder, channel, route, step};
use eip_dsl::compile::{self, Flow, InputMessage, Report};
use eip_dsl::load;
use eip_dsl::plan::Plan;
use eip_dsl::step::{FilterConfig, Services, WireTapConfig};

const CHANNELS: &str = "
channels:
  orders: {kind: point-to-point}
  audit: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
";

fn plan(routes: &str) -> Plan {
    match load::load_str(&format!("{CHANNELS}{routes}"), "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    }
}

/// The rendered problems of a flow that must not validate.
fn problems(routes: &str) -> String {
    match load::load_str(&format!("{CHANNELS}{routes}"), "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("the flow validated:\n{routes}"),
        Err(errors) => errors.render(),
    }
}

fn dry(flow: &Flow, line: &str) -> Report {
    flow.dry_run_steps(&InputMessage::parse(line).unwrap())
        .unwrap()
}

#[test]
fn a_step_is_its_kind_with_its_main_value_or_its_keys() {
    let plan = plan(
        "
routes:
  - from: orders
    steps:
      - wire-tap: audit
      - wire-tap: {to: small, when-full: drop}
      - filter: '$.total > 100'
      - filter: {when: '$.total < 1000', discard: small}
    to: big
",
    );
    let steps = &plan.routes[0].steps;
    let kinds: Vec<&str> = steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["wire-tap", "wire-tap", "filter", "filter"]);
    let taps: Vec<(&str, bool)> = steps
        .iter()
        .filter_map(|s| s.config_as::<WireTapConfig>())
        .map(|t| (t.channel.as_str(), t.wait))
        .collect();
    assert_eq!(taps, [("audit", true), ("small", false)]);
    let filters: Vec<(&str, Option<&str>)> = steps
        .iter()
        .filter_map(|s| s.config_as::<FilterConfig>())
        .map(|f| (f.text.as_str(), f.discard.as_deref()))
        .collect();
    assert_eq!(
        filters,
        [("$.total > 100", None), ("$.total < 1000", Some("small"))]
    );
    let keys: Vec<&str> = steps.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys[3], "routes[0].steps[3]");
}

#[test]
fn the_shorthands_come_first_the_tap_before_the_filter() {
    let plan = plan(
        "
routes:
  - from: orders
    filter: '$.total > 100'
    wire-tap: audit
    steps:
      - filter: '$.total < 1000'
    to: big
",
    );
    let keys: Vec<&str> = plan.routes[0]
        .steps
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "routes[0].wire-tap",
            "routes[0].filter",
            "routes[0].steps[0]"
        ]
    );
}

#[test]
fn an_unknown_step_kind_or_key_is_refused_with_the_closest_one() {
    let text = problems(
        "
routes:
  - from: orders
    steps:
      - filtre: '$.total > 100'
    to: big
",
    );
    assert!(text.contains("unknown step `filtre`"), "{text}");
    assert!(text.contains("did you mean `filter`?"), "{text}");
    assert!(
        text.contains("flow.yaml:11:9"),
        "points at the kind: {text}"
    );

    let text = problems(
        "
routes:
  - from: orders
    steps:
      - wire-tap: {to: audit, when-ful: drop}
    to: big
",
    );
    assert!(text.contains("unknown key `when-ful`"), "{text}");
    assert!(text.contains("did you mean `when-full`?"), "{text}");

    let text = problems(
        "
routes:
  - from: orders
    steps:
      - wire-tap: {to: audit, when-full: sometimes}
    to: big
",
    );
    assert!(
        text.contains("`when-full` can not be `sometimes`"),
        "{text}"
    );
}

#[test]
fn a_step_is_one_kind_written_as_a_mapping() {
    let text = problems(
        "
routes:
  - from: orders
    steps:
      - {filter: '$.a > 1', wire-tap: audit}
      - just-a-word
    to: big
",
    );
    assert!(
        text.contains("step 1 names two kinds, `filter` and `wire-tap`: a step is one kind"),
        "{text}"
    );
    assert!(text.contains("key: routes[0].steps[1]"), "{text}");
    assert!(
        text.contains("a mapping with one key, the step's kind"),
        "{text}"
    );
}

#[test]
fn a_step_names_declared_channels_and_not_its_own() {
    let text = problems(
        "
routes:
  - from: orders
    steps:
      - wire-tap: audt
      - filter: {when: '$.total > 100', discard: orders}
      - filter: '$.total >'
    to: big
",
    );
    assert!(text.contains("unknown channel `audt`"), "{text}");
    assert!(text.contains("did you mean `audit`?"), "{text}");
    assert!(
        text.contains("the step sends to `orders`, the channel its route consumes"),
        "{text}"
    );
    assert!(text.contains("invalid predicate"), "{text}");
    assert!(
        text.contains("key: routes[0].steps[2].filter.when"),
        "{text}"
    );
}

#[test]
fn the_dry_run_says_what_each_step_passed_on() {
    let flow = compile::compile(&plan(
        "
routes:
  - name: triage
    from: orders
    steps:
      - wire-tap: audit
      - filter: {when: '$.total > 100', discard: small}
    to: big
",
    ))
    .unwrap();
    let big = dry(&flow, r#"{"to": "orders", "payload": {"total": 500}}"#);
    assert_eq!(big.stored, ["audit", "big", "orders"]);
    let steps: Vec<(usize, &str, usize)> = big
        .steps
        .iter()
        .map(|s| (s.step, s.does.as_str(), s.out.len()))
        .collect();
    assert_eq!(
        steps,
        [(1, "wire-tap audit", 1), (2, "filter $.total > 100", 1)]
    );
    assert_eq!(
        big.steps[1].out[0].payload,
        serde_json::json!({"total": 500})
    );

    let small = dry(&flow, r#"{"to": "orders", "payload": {"total": 5}}"#);
    assert_eq!(small.stored, ["audit", "orders", "small"]);
    assert!(small.steps[1].out.is_empty(), "the filter held it back");

    let plain = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": {"total": 5}}"#).unwrap())
        .unwrap();
    assert!(plain.steps.is_empty(), "only asked for, steps are reported");
}

/// Hands each of `payloads` to the flow's route, as its consumer would, no consumer reading
/// `audit`; a message whose handling has not finished after `wait` is left waiting. Returns
/// how many were handled, the route's counters and how many copies `audit` holds.
fn handle(flow: &Flow, payloads: &[&str], wait: Duration) -> (usize, compile::RouteStats, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let route = &flow.routes()[0];
        let mut handled = 0;
        for payload in payloads {
            let msg = Message::new(payload.to_string());
            match tokio::time::timeout(wait, route.handle(msg)).await {
                Ok(result) => {
                    result.unwrap();
                    handled += 1;
                }
                Err(_) => break,
            }
        }
        let audit = flow
            .channels()
            .iter()
            .find(|c| c.name() == "audit")
            .map(|c| c.stats().depth)
            .unwrap();
        (handled, route.stats(), audit)
    })
}

#[test]
fn a_wire_tap_waits_for_room_unless_it_may_drop() {
    // `audit` has room for 2 and no consumer.
    let with = |when_full: &str| {
        let mut plan = plan(&format!(
            "
routes:
  - from: orders
    steps:
      - wire-tap: {{to: audit, when-full: {when_full}}}
    to: big
"
        ));
        for c in &mut plan.channels {
            if c.name == "audit" {
                c.capacity = Some(2);
            }
        }
        compile::compile(&plan).unwrap()
    };
    let wait = Duration::from_millis(300);
    let (handled, stats, audit) = handle(&with("drop"), &["1", "2", "3"], wait);
    assert_eq!((handled, audit), (3, 2), "every message goes on");
    assert_eq!((stats.tapped, stats.tap_dropped, stats.passed), (2, 1, 3));

    let (handled, stats, audit) = handle(&with("wait"), &["1", "2", "3"], wait);
    assert_eq!(
        (handled, audit),
        (2, 2),
        "the third copy waits for room, and its message with it"
    );
    assert_eq!((stats.tapped, stats.tap_dropped, stats.passed), (2, 0, 2));
}

#[test]
fn the_builder_makes_the_steps_a_flow_file_makes() {
    let file = plan(
        "
routes:
  - from: orders
    steps:
      - wire-tap: {to: audit, when-full: drop}
      - filter: {when: '$.total > 100', discard: small}
    to: big
",
    );
    let built = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("audit", channel::point_to_point())
        .channel("big", channel::point_to_point())
        .channel("small", channel::point_to_point())
        .route(
            route::from("orders")
                .step(
                    step::kind("wire-tap")
                        .set("to", "audit")
                        .set("when-full", "drop"),
                )
                .step(
                    step::kind("filter")
                        .set("when", "$.total > 100")
                        .set("discard", "small"),
                )
                .to("big"),
        )
        .plan(".")
        .unwrap();
    let describe = |plan: &Plan| -> Vec<(String, String)> {
        plan.routes[0]
            .steps
            .iter()
            .map(|s| (s.key.clone(), s.config.describe()))
            .collect()
    };
    assert_eq!(describe(&built), describe(&file));

    let errors = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("big", channel::point_to_point())
        .route(
            route::from("orders")
                .step(step::kind("wire-tap").value("nowhere"))
                .to("big"),
        )
        .plan(".")
        .unwrap_err()
        .render();
    assert!(errors.contains("unknown channel `nowhere`"), "{errors}");
    assert!(
        errors.contains("key: routes[0].steps[0].wire-tap.to"),
        "{errors}"
    );
}

/// A service that answers each message with its payload in capitals, and fails on `fail`.
fn upper() -> impl tower::Service<
    Message,
    Response = Message,
    Error = tower::BoxError,
    Future = impl Future<Output = Result<Message, tower::BoxError>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|msg: Message| async move {
        let text = msg.payload_str().unwrap_or_default().to_owned();
        if text == "fail" {
            return Err::<Message, tower::BoxError>("the service refused `fail`".into());
        }
        Ok(Message::new(text.to_uppercase()))
    })
}

#[test]
fn process_runs_a_service_the_program_registered() {
    let routes = "
routes:
  - from: orders
    steps:
      - process: upper
    to: big
";
    let services = Services::new().add("upper", upper());
    let source = format!("{CHANNELS}{routes}");
    let plan = load::load_str_with(&source, "flow.yaml", Path::new("."), &services).unwrap();
    let flow = compile::compile(&plan).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let route = &flow.routes()[0];
        route.handle(Message::new("abc")).await.unwrap();
        let big = flow.channels().iter().find(|c| c.name() == "big").unwrap();
        let Channel::PointToPoint(big) = big else {
            panic!("big is a queue")
        };
        let delivery = big.receiver().recv().await.unwrap();
        assert_eq!(delivery.message().payload_str(), Some("ABC"));

        let failed = route.handle(Message::new("fail")).await.unwrap_err();
        assert_eq!(
            failed.to_string(),
            "route `route-1`, step 1 (process upper): the service refused `fail`"
        );
        assert_eq!(big.stats().depth, 0, "nothing went on");
    });
    // The dry run does not call the service.
    let report = dry(&flow, r#"{"to": "orders", "payload": "abc"}"#);
    assert_eq!(report.stored, ["big", "orders"]);
    assert_eq!(report.steps[0].out[0].payload, serde_json::json!("abc"));

    // Without the service, the flow is refused with the name.
    let text = problems(routes);
    assert!(text.contains("no service `upper` is registered"), "{text}");
    assert!(text.contains("this program registered none"), "{text}");
    let text = match load::load_str_with(
        &source.replace("upper", "uper"),
        "flow.yaml",
        Path::new("."),
        &services,
    ) {
        Ok(_) => panic!("validated"),
        Err(errors) => errors.render(),
    };
    assert!(text.contains("did you mean `upper`?"), "{text}");
}

#[test]
fn the_builder_registers_services_for_its_process_steps() {
    let flow = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("big", channel::point_to_point())
        .service("upper", upper())
        .route(route::from("orders").process("upper").to("big"))
        .compile(".")
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        flow.routes()[0].handle(Message::new("x")).await.unwrap();
    });
    let big = flow.channels().iter().find(|c| c.name() == "big").unwrap();
    assert_eq!(big.stats().depth, 1);
}
