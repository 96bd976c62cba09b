//! Good flow files become the expected plan: the canonical example, an empty file, and every
//! key a flow file may hold.

use std::path::Path;

use eip_core::channel::{ChannelKind, Overflow};
use eip_dsl::load::{load_file, load_str};
use eip_dsl::plan::{ActionPlan, RecipientsPlan, TargetRef};
use eip_dsl::step::{FilterConfig, WireTapConfig};

mod support {
    pub mod queues;
    pub mod validate;
}

use support::queues::with_queues;
use support::validate::{fixtures, load};

#[test]
fn the_issue_example_validates_to_the_expected_plan() {
    let plan =
        load_file(&fixtures().join("trades.yaml")).unwrap_or_else(|e| panic!("{}", e.render()));

    let kinds: Vec<(&str, ChannelKind)> = plan
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    use ChannelKind::{PointToPoint as P2p, PublishSubscribe as PubSub};
    assert_eq!(
        kinds,
        [
            ("trades.requests", P2p),
            ("trades.invalid", P2p),
            ("trades.buy", P2p),
            ("trades.other", P2p),
            ("trades.audit", P2p),
            ("unrouted", P2p),
            ("quotes", PubSub),
            ("quotes.nyse", PubSub),
            ("dead-letters", P2p),
        ]
    );
    let requests = plan.channel("trades.requests").expect("trades.requests");
    let datatype = requests.datatype.as_ref().expect("a datatype");
    assert_eq!(datatype.path, "schemas/trade.json");
    assert_eq!(datatype.invalid, "trades.invalid");
    assert_eq!(datatype.schema["required"][0], "side");

    assert_eq!(plan.routes.len(), 1);
    let route = &plan.routes[0];
    assert_eq!(route.name, "route-1");
    assert_eq!(route.from, "trades.requests");
    assert!(route.steps.is_empty(), "{:?}", route.steps);
    match &route.action {
        ActionPlan::Choice { when, otherwise } => {
            assert_eq!(when.len(), 1);
            assert_eq!(when[0].1, TargetRef::Channel("trades.buy".into()));
            let buy = eip_core::Message::new(r#"{"side": "buy"}"#);
            let sell = eip_core::Message::new(r#"{"side": "sell"}"#);
            assert!(when[0].0.matches(&buy) && !when[0].0.matches(&sell));
            assert_eq!(otherwise, &Some(TargetRef::Channel("trades.other".into())));
        }
        other => panic!("expected a choice, got {other:?}"),
    }

    let joins: Vec<(&str, &str, u32, bool, bool)> = plan
        .joins
        .iter()
        .map(|j| {
            (
                j.from.as_str(),
                j.to.as_str(),
                j.hops,
                j.archival,
                j.filter.is_some(),
            )
        })
        .collect();
    assert_eq!(
        joins,
        [
            ("quotes", "quotes.nyse", 5, false, true),
            ("quotes", "trades.audit", 10, true, false),
        ]
    );

    let market = plan.exchange("market").expect("market");
    assert_eq!(market.alternate.as_deref(), Some("unrouted"));
    let bindings: Vec<(Option<&str>, Vec<&str>)> = market
        .bindings
        .iter()
        .map(|b| {
            (
                b.key.as_ref().map(|k| k.as_str()),
                b.to.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            (Some("stock.*.nyse"), vec!["quotes.nyse"]),
            (Some("stock.#"), vec!["quotes", "trades.audit"]),
        ]
    );
}

#[test]
fn an_empty_file_is_an_empty_flow_with_its_dead_letter_channel() {
    for text in ["", "\n", "# nothing yet\n", "channels:\nroutes:\n"] {
        let plan = load_str(text, "empty.yaml", Path::new("."))
            .unwrap_or_else(|e| panic!("{}", e.render()));
        assert_eq!(plan.channels.len(), 1, "{text:?}");
        assert_eq!(plan.channels[0].name, "dead-letters");
        assert_eq!(plan.channels[0].kind, ChannelKind::PointToPoint);
        assert!(plan.routes.is_empty() && plan.joins.is_empty() && plan.exchanges.is_empty());
    }
}

#[test]
fn every_key_is_read_into_the_plan() {
    let plan = load(&with_queues(&[
        "  fast:",
        "    kind: publish-subscribe",
        "    capacity: 64",
        "    dead-letter: out",
        "    time-to-live: 1500ms",
        "    overflow: drop-oldest",
        "    redelivery: {max-attempts: 3, initial-backoff: 10ms, max-backoff: 1s, multiplier: 3, jitter: 0.5}",
        "  taps: {kind: point-to-point}",
        "routes:",
        "  - name: sort",
        "    from: in",
        "    filter: 'exists($.id)'",
        "    discard: out",
        "    wire-tap: taps",
        "    recipient-list: [fast, mx]",
        "  - {from: news, recipient-list: {header: to}}",
        "  - {from: fast, to: [out, mx]}",
        "exchanges:",
        "  mx:",
        "    bindings:",
        "      - to: out",
    ]))
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let fast = plan.channel("fast").expect("fast");
    assert_eq!(fast.capacity, Some(64));
    assert_eq!(fast.dead_letter.as_deref(), Some("out"));
    assert_eq!(
        fast.time_to_live,
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!(fast.overflow, Some(Overflow::DropOldest));
    let redelivery = fast.redelivery.as_ref().expect("redelivery");
    assert_eq!(redelivery.max_attempts, 3);
    assert_eq!(
        redelivery.initial_backoff,
        std::time::Duration::from_millis(10)
    );
    assert_eq!(redelivery.max_backoff, std::time::Duration::from_secs(1));
    assert_eq!((redelivery.multiplier, redelivery.jitter), (3.0, 0.5));

    let names: Vec<&str> = plan.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["sort", "route-2", "route-3"]);
    let sort = &plan.routes[0];
    // The shorthands, as the steps they stand for: the tap first.
    let kinds: Vec<&str> = sort.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["wire-tap", "filter"]);
    let tap = sort.steps[0]
        .config_as::<WireTapConfig>()
        .expect("a wire tap");
    assert_eq!((tap.channel.as_str(), tap.wait), ("taps", true));
    let filter = sort.steps[1].config_as::<FilterConfig>().expect("a filter");
    assert_eq!(filter.discard.as_deref(), Some("out"));
    match &sort.action {
        ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)) => assert_eq!(
            targets,
            &[
                TargetRef::Channel("fast".into()),
                TargetRef::Exchange("mx".into())
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &plan.routes[1].action,
        ActionPlan::RecipientList(RecipientsPlan::Header(h)) if h == "to"
    ));
    assert!(matches!(&plan.routes[2].action, ActionPlan::To(t) if t.len() == 2));
    let mx = plan.exchange("mx").expect("mx");
    assert!(mx.bindings[0].key.is_none(), "no key matches every subject");
}
