//! `eip graph` in DOT and Mermaid: every node and edge of a plan with its shape, label and
//! style; channel adapters as endpoints with their kind and endpoint, joined to their channel
//! in the direction messages flow; every format deterministic, named and parsed, and drawing an
//! empty plan; every name escaped in every format; names the plan does not declare drawn as
//! undeclared.

use eip_core::topic::TopicPattern;
use eip_dsl::graph::{self, Format};
use eip_dsl::plan::{ActionPlan, BindingPlan, ExchangePlan, Plan, StepPlan};

mod support {
    pub mod graph;
    pub mod svg;
    pub mod xml;
}

use support::graph::{adapters_plan, p2p, predicate, pubsub, route, sample, to};
use support::svg::{node_boxes, svg_elements};
use support::xml::parse_xml;

// ----- DOT -----

#[test]
fn dot_shows_every_channel_exchange_and_route_with_its_shape() {
    let dot = graph::dot(&sample());
    assert!(dot.starts_with("digraph flow {\n  rankdir=LR;"), "{dot}");
    assert!(dot.ends_with("}\n"));
    for line in [
        r#"c0_orders [label="orders\ndatatype: orders.schema.json", shape=box, peripheries=2];"#,
        r#"c1_invalid_orders [label="invalid-orders", shape=box];"#,
        r#"c3_quotes [label="quotes", shape=box, style=rounded];"#,
        r#"c4_quotes_nyse [label="quotes.nyse", shape=box, style=rounded];"#,
        r#"c10_dead_letters [label="dead-letters", shape=box];"#,
        r#"x0_markets [label="markets", shape=hexagon];"#,
        r#"r0_triage [label="triage", shape=diamond];"#,
        r#"r2_by_header [label="by-header\nrecipients from header x-to", shape=diamond];"#,
    ] {
        assert!(
            dot.contains(&format!("  {line}\n")),
            "missing {line}\n{dot}"
        );
    }
}

#[test]
fn dot_shows_every_edge_with_its_label_and_style() {
    let dot = graph::dot(&sample());
    for line in [
        r#"c0_orders -> c1_invalid_orders [label="invalid", style=dotted];"#,
        r#"c0_orders -> c2_order_failures [label="dead letters", style=dotted];"#,
        r#"c0_orders -> r0_triage [label="filter exists($.id)"];"#,
        r#"r0_triage -> c8_audit [label="wire tap"];"#,
        r#"r0_triage -> c9_rejected [label="discard"];"#,
        r#"r0_triage -> c6_big [label="when $.total > 100"];"#,
        r#"r0_triage -> c7_small [label="otherwise"];"#,
        r#"c6_big -> r1_fan_out;"#,
        r#"r1_fan_out -> c5_archive [label="recipients"];"#,
        r#"r1_fan_out -> x0_markets [label="recipients"];"#,
        r#"c7_small -> r2_by_header;"#,
        r#"c4_quotes_nyse -> r3_pass;"#,
        r#"r3_pass -> c7_small;"#,
        r#"c3_quotes -> c4_quotes_nyse [label="join hops=5, filter header(\"exchange\") == \"NYSE\""];"#,
        r#"c4_quotes_nyse -> c5_archive [label="join hops=0, archival", style=dashed];"#,
        r#"x0_markets -> c4_quotes_nyse [label="stock.*.nyse"];"#,
        r#"x0_markets -> c8_audit [label="(all)"];"#,
        r#"x0_markets -> c11_unrouted [label="alternate"];"#,
    ] {
        assert!(
            dot.contains(&format!("  {line}\n")),
            "missing {line}\n{dot}"
        );
    }
}

#[test]
fn the_default_dead_letter_channel_gets_no_edges() {
    let plan = sample();
    for out in [graph::dot(&plan), graph::mermaid(&plan)] {
        let edges_in = out
            .lines()
            .filter(|l| l.contains("-> c10_dead_letters") || l.contains("> c10_dead_letters"))
            .count();
        assert_eq!(edges_in, 0, "{out}");
        assert!(
            out.contains("c10_dead_letters"),
            "the channel itself is drawn\n{out}"
        );
    }
    let elements = svg_elements(&plan);
    assert!(!elements.iter().any(|e| {
        e.attrs
            .get("data-to")
            .is_some_and(|t| t == "c10_dead_letters")
    }));
}

// ----- Mermaid -----

#[test]
fn mermaid_shows_every_node_with_its_shape() {
    let m = graph::mermaid(&sample());
    assert!(m.starts_with("flowchart LR\n"), "{m}");
    for line in [
        r#"c0_orders["orders<br/>datatype: orders.schema.json"]"#,
        r#"c3_quotes(["quotes"])"#,
        r#"x0_markets{{"markets"}}"#,
        r#"r0_triage{"triage"}"#,
        r#"r2_by_header{"by-header<br/>recipients from header x-to"}"#,
        "classDef datatype stroke-width:4px",
        "class c0_orders datatype",
    ] {
        assert!(m.contains(&format!("  {line}\n")), "missing {line}\n{m}");
    }
}

#[test]
fn mermaid_shows_every_edge_with_its_label_and_style() {
    let m = graph::mermaid(&sample());
    let edges: Vec<&str> = m
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("--") || l.contains("-.-"))
        .collect();
    for line in [
        r#"c0_orders -.->|"invalid"| c1_invalid_orders"#,
        r#"c0_orders -.->|"dead letters"| c2_order_failures"#,
        r#"c0_orders -->|"filter exists($.id)"| r0_triage"#,
        r#"r0_triage -->|"wire tap"| c8_audit"#,
        r#"r0_triage -->|"discard"| c9_rejected"#,
        r#"r0_triage -->|"when $.total #62; 100"| c6_big"#,
        r#"r0_triage -->|"otherwise"| c7_small"#,
        r#"r1_fan_out -->|"recipients"| x0_markets"#,
        r#"r3_pass --> c7_small"#,
        r#"c3_quotes -->|"join hops=5, filter header(#34;exchange#34;) == #34;NYSE#34;"| c4_quotes_nyse"#,
        r#"c4_quotes_nyse -.->|"join hops=0, archival"| c5_archive"#,
        r#"x0_markets -->|"stock.*.nyse"| c4_quotes_nyse"#,
        r#"x0_markets -->|"(all)"| c8_audit"#,
        r#"x0_markets -->|"alternate"| c11_unrouted"#,
    ] {
        assert!(edges.contains(&line), "missing {line}\n{m}");
    }
    // The archival join is the only dashed link, restyled by its index.
    let archival = edges
        .iter()
        .position(|l| l.contains("archival"))
        .expect("the archival join is drawn");
    assert!(
        m.contains(&format!("  linkStyle {archival} stroke-dasharray:8 4\n")),
        "{m}"
    );
    assert_eq!(m.matches("linkStyle").count(), 1, "{m}");
}

// ----- all formats -----

#[test]
fn every_format_is_deterministic() {
    for plan in [sample, adapters_plan] {
        for format in Format::ALL {
            let first = graph::render(&plan(), format);
            for _ in 0..3 {
                assert_eq!(graph::render(&plan(), format), first, "{format}");
            }
        }
    }
}

#[test]
fn render_is_the_named_format() {
    let plan = sample();
    assert_eq!(graph::render(&plan, Format::Dot), graph::dot(&plan));
    assert_eq!(graph::render(&plan, Format::Mermaid), graph::mermaid(&plan));
    assert_eq!(graph::render(&plan, Format::Svg), graph::svg(&plan));
}

#[test]
fn format_parses_from_its_name_and_rejects_others() {
    assert_eq!("dot".parse::<Format>(), Ok(Format::Dot));
    assert_eq!("mermaid".parse::<Format>(), Ok(Format::Mermaid));
    assert_eq!("svg".parse::<Format>(), Ok(Format::Svg));
    let err = "graphviz".parse::<Format>().expect_err("not a format");
    assert_eq!(
        err.to_string(),
        "unknown graph format `graphviz`: expected one of dot, mermaid, svg"
    );
}

#[test]
fn an_empty_plan_renders_in_every_format() {
    let plan = Plan::default();
    assert_eq!(
        graph::dot(&plan),
        "digraph flow {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n  \
         edge [fontname=\"Helvetica\", fontsize=9];\n}\n"
    );
    assert_eq!(graph::mermaid(&plan), "flowchart LR\n");
    let elements = svg_elements(&plan);
    assert_eq!(elements[0].name, "svg");
    assert!(node_boxes(&elements).is_empty());
}

// ----- hostile names -----

/// Names no format can take as they are.
const HOSTILE: &str = "a\"b<c>&d\\e'f 注文 \u{1F600}\n#x|%;`$";

fn hostile_plan() -> Plan {
    let mut plan = Plan::default();
    plan.channels.push(pubsub(HOSTILE));
    plan.channels.push(p2p("plain"));
    let mut r = route(
        HOSTILE,
        HOSTILE,
        ActionPlan::Choice {
            when: vec![(predicate(r#"$.a == "<&>\\\"""#), to("plain"))],
            otherwise: None,
        },
    );
    r.steps.push(StepPlan::wire_tap("plain"));
    plan.routes.push(r);
    plan.exchanges.push(ExchangePlan {
        name: HOSTILE.into(),
        alternate: None,
        bindings: vec![BindingPlan {
            key: Some(TopicPattern::parse("a.\"<&>\".#").expect("the pattern parses")),
            to: vec![HOSTILE.into()],
        }],
    });
    plan
}

#[test]
fn dot_escapes_quotes_and_backslashes() {
    let dot = graph::dot(&hostile_plan());
    assert!(
        dot.contains(r#"c0_a_b_c__d_e_f_______x_____ [label="a\"b<c>&d\\e'f 注文 😀 #x|%;`$", shape=box, style=rounded];"#),
        "{dot}"
    );
    assert!(
        dot.contains(r#"[label="when $.a == \"<&>\\\\\\\"\""];"#),
        "{dot}"
    );
    // Every quoted string closes: outside them, no quote or backslash is left.
    for line in dot.lines() {
        let mut in_string = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match (in_string, c) {
                (true, '\\') => {
                    chars.next();
                }
                (_, '"') => in_string = !in_string,
                (false, '\\') => panic!("a backslash outside a string: {line}"),
                _ => {}
            }
        }
        assert!(!in_string, "an unclosed string: {line}");
    }
}

#[test]
fn mermaid_escapes_every_special_character() {
    let m = graph::mermaid(&hostile_plan());
    assert!(
        m.contains(r#"  c0_a_b_c__d_e_f_______x_____(["a#34;b#60;c#62;#38;d#92;e'f 注文 #128512; #35;x#124;#37;#59;#96;$"])"#),
        "{m}"
    );
    // Inside each label, nothing but entity codes and safe characters.
    for line in m.lines() {
        let mut parts = line.split('"');
        parts.next();
        for (i, label) in parts.enumerate() {
            if i % 2 == 0 {
                assert!(
                    !label.contains(['<', '>', '&', '\\', '`', '|', '%'])
                        || label.contains("<br/>"),
                    "unescaped label {label:?} in {line}"
                );
            }
        }
    }
}

#[test]
fn svg_escapes_markup_in_names_and_labels() {
    let svg = graph::svg(&hostile_plan());
    parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert!(
        svg.contains("a&quot;b&lt;c&gt;&amp;d\\e&apos;f 注文 😀 #x|%;`$"),
        "{svg}"
    );
    assert!(
        svg.contains("when $.a == &quot;&lt;&amp;&gt;\\\\\\&quot;&quot;"),
        "{svg}"
    );
    assert!(svg.contains("a.&quot;&lt;&amp;&gt;&quot;.#"), "{svg}");
}

// ----- undeclared names -----

#[test]
fn names_the_plan_does_not_declare_are_drawn_as_undeclared() {
    let mut plan = Plan::default();
    plan.channels.push(p2p("in"));
    plan.routes
        .push(route("r", "in", ActionPlan::To(vec![to("nowhere")])));
    let dot = graph::dot(&plan);
    assert!(dot.contains(r#"u0_nowhere [label="nowhere\nundeclared channel", shape=box, style=dashed, color=red];"#), "{dot}");
    assert!(dot.contains("r0_r -> u0_nowhere;"), "{dot}");
    let svg = graph::svg(&plan);
    assert!(svg.contains("class=\"node undeclared\""), "{svg}");
}

// ----- durable channels -----

/// A durable queue, a durable publish-subscribe datatype channel, and a channel in memory.
fn durable_plan() -> Plan {
    let mut plan = Plan::default();
    let mut payments = p2p("payments");
    payments.durable = true;
    let mut trades = pubsub("trades");
    trades.durable = true;
    trades.datatype = Some(eip_dsl::plan::DatatypePlan {
        path: "trade.json".into(),
        schema: serde_json::json!({"type": "object"}),
        invalid: "payments".into(),
    });
    plan.channels.extend([payments, trades, p2p("scratch")]);
    plan
}

#[test]
fn durable_channels_say_so_on_their_second_line_in_every_format() {
    let plan = durable_plan();
    let dot = graph::dot(&plan);
    for line in [
        r#"c0_payments [label="payments\ndurable", shape=box];"#,
        r#"c1_trades [label="trades\ndurable, datatype: trade.json", shape=box, style=rounded, peripheries=2];"#,
        r#"c2_scratch [label="scratch", shape=box];"#,
    ] {
        assert!(
            dot.contains(&format!("  {line}\n")),
            "missing {line}\n{dot}"
        );
    }

    let m = graph::mermaid(&plan);
    for line in [
        r#"c0_payments["payments<br/>durable"]"#,
        r#"c1_trades(["trades<br/>durable, datatype: trade.json"])"#,
        r#"c2_scratch["scratch"]"#,
    ] {
        assert!(m.contains(&format!("  {line}\n")), "missing {line}\n{m}");
    }

    let svg = graph::svg(&plan);
    let elements = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    let class = |id: &str| {
        elements
            .iter()
            .find(|e| e.attrs.get("id").map(String::as_str) == Some(id))
            .and_then(|e| e.attrs.get("class").cloned())
            .unwrap_or_else(|| panic!("no node {id}\n{svg}"))
    };
    assert_eq!(class("c0_payments"), "node point-to-point durable");
    assert_eq!(
        class("c1_trades"),
        "node publish-subscribe datatype durable"
    );
    assert_eq!(class("c2_scratch"), "node point-to-point");
    assert!(
        svg.contains("<title>payments (point-to-point durable)</title>"),
        "{svg}"
    );
    assert!(svg.contains(">durable</text>"), "{svg}");
    assert!(
        svg.contains(">durable, datatype: trade.json</text>"),
        "{svg}"
    );
}

// ----- channel adapters -----

#[test]
fn dot_draws_each_adapter_as_an_endpoint_with_its_kind_and_endpoint() {
    let dot = graph::dot(&adapters_plan());
    for line in [
        r#"a0_files_in [label="files-in\nfile-in · /flows/in/*.json", shape=parallelogram];"#,
        r#"a1_api [label="api\nhttp-in · POST http://127.0.0.1:8080/orders", shape=parallelogram];"#,
        r#"a2_poll [label="poll\nsql-in · sqlite:orders.db", shape=cylinder];"#,
        r#"a3_archive [label="archive\nfile-out · /flows/out", shape=parallelogram];"#,
        r#"a4_notify [label="notify\nhttp-out · http://127.0.0.1:9000/big", shape=parallelogram];"#,
        r#"a5_store [label="store\nsql-out · postgres://app:***@db.example/shop", shape=cylinder];"#,
    ] {
        assert!(
            dot.contains(&format!("  {line}\n")),
            "missing {line}\n{dot}"
        );
    }
    assert!(!dot.contains("secret"), "the password is hidden\n{dot}");
}

#[test]
fn adapter_edges_run_the_way_messages_flow_in_dot_and_mermaid() {
    let plan = adapters_plan();
    let dot = graph::dot(&plan);
    let m = graph::mermaid(&plan);
    for (from, to) in [
        ("a0_files_in", "c0_orders"),
        ("a1_api", "c0_orders"),
        ("a2_poll", "c0_orders"),
        ("c2_small", "a3_archive"),
        ("c1_big", "a4_notify"),
        ("c1_big", "a5_store"),
    ] {
        // Solid and unlabelled: messages go there.
        assert!(dot.contains(&format!("  {from} -> {to};\n")), "{dot}");
        assert!(m.contains(&format!("  {from} --> {to}\n")), "{m}");
        // And only that way round.
        assert!(!dot.contains(&format!("{to} -> {from}")), "{dot}");
    }
}

#[test]
fn mermaid_draws_adapters_as_parallelograms_and_databases_as_cylinders() {
    let m = graph::mermaid(&adapters_plan());
    for line in [
        r#"a0_files_in[/"files-in<br/>file-in #183; /flows/in/*.json"/]"#,
        r#"a1_api[/"api<br/>http-in #183; POST http://127.0.0.1:8080/orders"/]"#,
        r#"a2_poll[("poll<br/>sql-in #183; sqlite:orders.db")]"#,
        r#"a3_archive[/"archive<br/>file-out #183; /flows/out"/]"#,
        r#"a4_notify[/"notify<br/>http-out #183; http://127.0.0.1:9000/big"/]"#,
        r#"a5_store[("store<br/>sql-out #183; postgres://app:***@db.example/shop")]"#,
    ] {
        assert!(m.contains(&format!("  {line}\n")), "missing {line}\n{m}");
    }
}

#[test]
fn adapter_ids_never_collide_with_channel_exchange_or_route_ids() {
    // Validation forbids these names; a plan built by hand can still have them.
    let mut plan = adapters_plan();
    plan.adapters[0].name = "orders".into();
    plan.adapters[1].name = "triage".into();
    plan.adapters[2].name = "orders".into();
    let dot = graph::dot(&plan);
    let ids: Vec<&str> = dot
        .lines()
        .filter(|l| l.contains(" [label=") && !l.contains(" -> "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 4 + 1 + 6, "{dot}");
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(dot.contains("  a0_orders -> c0_orders;\n"), "{dot}");
    assert!(dot.contains("  a2_orders -> c0_orders;\n"), "{dot}");
    let elements = svg_elements(&plan);
    assert_eq!(node_boxes(&elements).len(), ids.len());
}

#[test]
fn adapter_names_and_endpoints_are_escaped_in_every_format() {
    let mut plan = adapters_plan();
    plan.adapters[3].name = HOSTILE.into();
    let dir = eip_dsl::load::load_str(
        "channels: {c: {kind: point-to-point}}\n\
         adapters: {out: {kind: file-out, from: c, dir: 'x\"<y>&z'}}\n",
        "flow.yaml",
        std::path::Path::new("/flows"),
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    plan.adapters[4] = dir.adapters[0].clone();
    plan.adapters[4].channel = "big".into();

    let dot = graph::dot(&plan);
    assert!(
        dot.contains(r#" [label="a\"b<c>&d\\e'f 注文 😀 #x|%;`$\nfile-out · /flows/out", shape=parallelogram];"#),
        "{dot}"
    );
    assert!(
        dot.contains(r#"a4_out [label="out\nfile-out · /flows/x\"<y>&z", shape=parallelogram];"#),
        "{dot}"
    );

    let m = graph::mermaid(&plan);
    assert!(
        m.contains(r#"[/"a#34;b#60;c#62;#38;d#92;e'f 注文 #128512; #35;x#124;#37;#59;#96;$<br/>file-out #183; /flows/out"/]"#),
        "{m}"
    );
    assert!(
        m.contains(r#"a4_out[/"out<br/>file-out #183; /flows/x#34;#60;y#62;#38;z"/]"#),
        "{m}"
    );

    let svg = graph::svg(&plan);
    parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert!(
        svg.contains(">file-out · /flows/x&quot;&lt;y&gt;&amp;z</text>"),
        "{svg}"
    );
    assert!(
        svg.contains(
            "<title>a&quot;b&lt;c&gt;&amp;d\\e&apos;f 注文 😀 #x|%;`$ (file-out adapter)</title>"
        ),
        "{svg}"
    );
}

#[test]
fn channels_kept_in_a_broker_say_where_on_their_second_line() {
    use eip_dsl::plan::{BrokerPlace, BrokerStorePlan};
    let mut plan = Plan::default();
    let mut orders = p2p("orders");
    orders.broker = Some(BrokerStorePlan {
        place: BrokerPlace::RabbitMqQueue {
            url: "amqp://guest:secret@127.0.0.1:5672/%2f".into(),
            queue: "orders-q".into(),
        },
        publish_window: None,
        retry_for: None,
    });
    let mut readings = pubsub("readings");
    readings.broker = Some(BrokerStorePlan {
        place: BrokerPlace::JetStream {
            url: "nats://127.0.0.1:4222".into(),
            stream: "READINGS".into(),
            subject: None,
            ack_wait: None,
        },
        publish_window: None,
        retry_for: None,
    });
    plan.channels.extend([orders, readings]);
    let dot = graph::render(&plan, Format::Dot);
    assert!(
        dot.contains(r#"c0_orders [label="orders\nin rabbitmq queue orders-q""#),
        "{dot}"
    );
    assert!(
        dot.contains(r#"c1_readings [label="readings\nin jetstream stream READINGS""#),
        "{dot}"
    );
    assert!(!dot.contains("secret"), "no password drawn: {dot}");
}
