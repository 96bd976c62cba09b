//! Plans to draw: builders for each part of a plan, and a sample plan with one of everything.

use eip_core::channel::ChannelKind;
use eip_core::predicate::Predicate;
use eip_core::topic::TopicPattern;
use eip_dsl::plan::{
    ActionPlan, BindingPlan, ChannelPlan, DEAD_LETTERS, DatatypePlan, ExchangePlan, JoinPlan, Plan,
    RecipientsPlan, RoutePlan, StepPlan, StorePlan, TargetRef,
};

pub fn channel(name: &str, kind: ChannelKind) -> ChannelPlan {
    ChannelPlan {
        name: name.into(),
        kind,
        capacity: None,
        datatype: None,
        dead_letter: None,
        time_to_live: None,
        redelivery: None,
        overflow: None,
        durable: false,
        broker: None,
    }
}

pub fn p2p(name: &str) -> ChannelPlan {
    channel(name, ChannelKind::PointToPoint)
}

pub fn pubsub(name: &str) -> ChannelPlan {
    channel(name, ChannelKind::PublishSubscribe)
}

pub fn predicate(source: &str) -> Predicate {
    Predicate::parse(source).expect("the test's predicates parse")
}

pub fn to(name: &str) -> TargetRef {
    TargetRef::Channel(name.into())
}

pub fn route(name: &str, from: &str, action: ActionPlan) -> RoutePlan {
    RoutePlan {
        name: name.into(),
        from: from.into(),
        steps: Vec::new(),
        action,
        on_error: None,
        concurrency: 1,
    }
}

pub fn join(from: &str, to: &str, hops: u32, archival: bool) -> JoinPlan {
    JoinPlan {
        from: from.into(),
        to: to.into(),
        filter: None,
        hops,
        archival,
    }
}

/// Channels c0..c10, exchange x0, routes r0..r3: one of everything a plan can draw.
pub fn sample() -> Plan {
    let mut orders = p2p("orders");
    orders.datatype = Some(DatatypePlan {
        path: "orders.schema.json".into(),
        schema: serde_json::json!({"type": "object"}),
        invalid: "invalid-orders".into(),
    });
    orders.dead_letter = Some("order-failures".into());
    let mut audit = p2p("audit");
    // The default dead letter channel, named explicitly: still not drawn.
    audit.dead_letter = Some(DEAD_LETTERS.into());
    let channels = vec![
        orders,                // c0
        p2p("invalid-orders"), // c1
        p2p("order-failures"), // c2
        pubsub("quotes"),      // c3
        pubsub("quotes.nyse"), // c4
        p2p("archive"),        // c5
        p2p("big"),            // c6
        p2p("small"),          // c7
        audit,                 // c8
        p2p("rejected"),       // c9
        p2p(DEAD_LETTERS),     // c10
        p2p("unrouted"),       // c11
    ];
    let mut triage = route(
        "triage",
        "orders",
        ActionPlan::Choice {
            when: vec![(predicate("$.total > 100"), to("big"))],
            otherwise: Some(to("small")),
        },
    );
    triage.steps = vec![
        StepPlan::filter(predicate("exists($.id)"), Some("rejected".into())),
        StepPlan::wire_tap("audit"),
    ];
    let routes = vec![
        triage,
        route(
            "fan-out",
            "big",
            ActionPlan::RecipientList(RecipientsPlan::Fixed(vec![
                to("archive"),
                TargetRef::Exchange("markets".into()),
            ])),
        ),
        route(
            "by-header",
            "small",
            ActionPlan::RecipientList(RecipientsPlan::Header("x-to".into())),
        ),
        route("pass", "quotes.nyse", ActionPlan::To(vec![to("small")])),
    ];
    let mut nyse = join("quotes", "quotes.nyse", 5, false);
    nyse.filter = Some(predicate(r#"header("exchange") == "NYSE""#));
    let joins = vec![nyse, join("quotes.nyse", "archive", 0, true)];
    let exchanges = vec![ExchangePlan {
        name: "markets".into(),
        alternate: Some("unrouted".into()),
        bindings: vec![
            BindingPlan {
                key: Some(TopicPattern::parse("stock.*.nyse").expect("the pattern parses")),
                to: vec!["quotes.nyse".into()],
            },
            BindingPlan {
                key: None,
                to: vec!["audit".into()],
            },
        ],
    }];
    Plan {
        channels,
        routes,
        joins,
        exchanges,
        store: StorePlan::default(),
        adapters: Vec::new(),
        history: false,
        admin: None,
    }
}

/// A flow with one adapter of each kind around a router, loaded as `eip graph` loads a file,
/// with `/flows` as the directory file adapters' paths are relative to.
///
/// Nodes: channels c0 `orders`, c1 `big`, c2 `small`, c3 `dead-letters`; route r0 `triage`;
/// adapters a0 `files-in`, a1 `api`, a2 `poll`, a3 `archive`, a4 `notify`, a5 `store`.
pub fn adapters_plan() -> Plan {
    let flow = r#"
channels:
  orders: {kind: point-to-point}
  big:    {kind: point-to-point}
  small:  {kind: publish-subscribe}
routes:
  - name: triage
    from: orders
    choice:
      - {when: '$.total > 100', to: big}
    otherwise: small
adapters:
  files-in: {kind: file-in, to: orders, dir: in, glob: '*.json'}
  api: {kind: http-in, to: orders, listen: 127.0.0.1:8080, path: /orders}
  poll:
    kind: sql-in
    to: orders
    url: sqlite:orders.db
    query: SELECT id, total FROM orders WHERE NOT done
    done: UPDATE orders SET done = 1 WHERE id = :id
  archive: {kind: file-out, from: small, dir: out}
  notify: {kind: http-out, from: big, url: 'http://127.0.0.1:9000/big'}
  store:
    kind: sql-out
    from: big
    url: postgres://app:secret@db.example/shop
    statement: INSERT INTO big (total) VALUES (:$.total)
"#;
    eip_dsl::load::load_str(flow, "flow.yaml", std::path::Path::new("/flows"))
        .unwrap_or_else(|e| panic!("{}", e.render()))
}
