//! `eip graph`: every format shows every node and edge of a plan, escapes every name, and is
//! deterministic; the SVG layout is well-formed XML with no overlapping boxes, cycles included.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use eip_core::channel::ChannelKind;
use eip_core::predicate::Predicate;
use eip_core::topic::TopicPattern;
use eip_dsl::graph::{self, Format};
use eip_dsl::plan::{
    ActionPlan, BindingPlan, ChannelPlan, DEAD_LETTERS, DatatypePlan, ExchangePlan, JoinPlan, Plan,
    RecipientsPlan, RoutePlan, TargetRef,
};
use proptest::prelude::*;

// ----- building plans -----

fn channel(name: &str, kind: ChannelKind) -> ChannelPlan {
    ChannelPlan {
        name: name.into(),
        kind,
        capacity: None,
        datatype: None,
        dead_letter: None,
        time_to_live: None,
        redelivery: None,
        overflow: None,
    }
}

fn p2p(name: &str) -> ChannelPlan {
    channel(name, ChannelKind::PointToPoint)
}

fn pubsub(name: &str) -> ChannelPlan {
    channel(name, ChannelKind::PublishSubscribe)
}

fn predicate(source: &str) -> Predicate {
    Predicate::parse(source).expect("the test's predicates parse")
}

fn to(name: &str) -> TargetRef {
    TargetRef::Channel(name.into())
}

fn route(name: &str, from: &str, action: ActionPlan) -> RoutePlan {
    RoutePlan {
        name: name.into(),
        from: from.into(),
        filter: None,
        discard: None,
        wire_tap: None,
        action,
    }
}

fn join(from: &str, to: &str, hops: u32, archival: bool) -> JoinPlan {
    JoinPlan {
        from: from.into(),
        to: to.into(),
        filter: None,
        hops,
        archival,
    }
}

/// Channels c0..c10, exchange x0, routes r0..r3: one of everything a plan can draw.
fn sample() -> Plan {
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
    triage.filter = Some(predicate("exists($.id)"));
    triage.discard = Some("rejected".into());
    triage.wire_tap = Some("audit".into());
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
    }
}

// ----- a tiny XML checker -----

/// An element's name and attributes, in document order.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
}

/// Checks `text` is character data: no `<`, every `&` starting a known or numeric entity.
fn check_text(text: &str) -> Result<(), String> {
    if text.contains('<') {
        return Err(format!("raw `<` in {text:?}"));
    }
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        rest = &rest[i + 1..];
        let end = rest
            .find(';')
            .ok_or_else(|| format!("unterminated entity in {text:?}"))?;
        let name = &rest[..end];
        let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || name
                .strip_prefix('#')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("bad entity `&{name};` in {text:?}"));
        }
        rest = &rest[end + 1..];
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')
}

/// Parses a well-formed XML document of elements, attributes and text (a declaration first
/// allowed), returning every element; an error for anything else.
fn parse_xml(doc: &str) -> Result<Vec<Element>, String> {
    let mut rest = doc;
    if let Some(after) = rest.strip_prefix("<?xml") {
        let end = after.find("?>").ok_or("unterminated declaration")?;
        rest = &after[end + 2..];
    }
    let mut stack: Vec<String> = Vec::new();
    let mut elements = Vec::new();
    let mut roots = 0;
    loop {
        let next = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..next];
        check_text(text)?;
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        rest = &rest[next..];
        if rest.is_empty() {
            break;
        }
        if let Some(after) = rest.strip_prefix("</") {
            let end = after.find('>').ok_or("unterminated end tag")?;
            let name = after[..end].trim_end();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("`</{name}>` closes {other:?}")),
            }
            rest = &after[end + 1..];
            continue;
        }
        // A start tag.
        let after = &rest[1..];
        let name_len = after.find(|c| !is_name_char(c)).unwrap_or(after.len());
        if name_len == 0 {
            return Err(format!("not a tag: {:?}", &rest[..rest.len().min(20)]));
        }
        let name = after[..name_len].to_owned();
        let mut tail = &after[name_len..];
        let mut attrs = BTreeMap::new();
        let self_closing = loop {
            let trimmed = tail.trim_start();
            if let Some(t) = trimmed.strip_prefix("/>") {
                tail = t;
                break true;
            }
            if let Some(t) = trimmed.strip_prefix('>') {
                tail = t;
                break false;
            }
            if trimmed.len() == tail.len() {
                return Err(format!("no space before an attribute of <{name}>"));
            }
            let a_len = trimmed.find(|c| !is_name_char(c)).unwrap_or(trimmed.len());
            if a_len == 0 {
                return Err(format!(
                    "bad attribute in <{name}>: {:?}",
                    &trimmed[..trimmed.len().min(20)]
                ));
            }
            let a_name = &trimmed[..a_len];
            let t = trimmed[a_len..]
                .strip_prefix('=')
                .ok_or_else(|| format!("attribute `{a_name}` of <{name}> has no `=`"))?;
            let quote = t.chars().next().filter(|&c| c == '"' || c == '\'');
            let quote =
                quote.ok_or_else(|| format!("attribute `{a_name}` of <{name}> is not quoted"))?;
            let t = &t[1..];
            let end = t.find(quote).ok_or("unterminated attribute value")?;
            check_text(&t[..end])?;
            if attrs
                .insert(a_name.to_owned(), t[..end].to_owned())
                .is_some()
            {
                return Err(format!("attribute `{a_name}` twice in <{name}>"));
            }
            tail = &t[end + 1..];
        };
        if stack.is_empty() {
            roots += 1;
        }
        if !self_closing {
            stack.push(name.clone());
        }
        elements.push(Element { name, attrs });
        rest = tail;
    }
    if !stack.is_empty() {
        return Err(format!("unclosed: {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(elements)
}

#[test]
fn the_xml_checker_rejects_what_it_should() {
    assert!(parse_xml(r#"<svg a="1"><g/></svg>"#).is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg a=1/>",
        "<svg>a < b</svg>",
        "<svg>a & b</svg>",
        r#"<svg a="x<y"/>"#,
        r#"<svg a="1" a="2"/>"#,
        "<svg/><svg/>",
        "<svg>",
    ] {
        assert!(parse_xml(bad).is_err(), "{bad}");
    }
}

// ----- reading SVG output -----

/// A node's box, from its group's `data-*` attributes.
#[derive(Debug, Clone, Copy)]
struct Box2 {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn attr_f64(e: &Element, name: &str) -> f64 {
    e.attrs
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{} has no numeric {name}", e.name))
}

fn node_boxes(elements: &[Element]) -> BTreeMap<String, Box2> {
    elements
        .iter()
        .filter(|e| e.name == "g" && e.attrs.get("class").is_some_and(|c| c.starts_with("node ")))
        .map(|e| {
            let b = Box2 {
                x: attr_f64(e, "data-x"),
                y: attr_f64(e, "data-y"),
                w: attr_f64(e, "data-width"),
                h: attr_f64(e, "data-height"),
            };
            (e.attrs["id"].clone(), b)
        })
        .collect()
}

fn overlap(a: Box2, b: Box2) -> bool {
    a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
}

fn svg_elements(plan: &Plan) -> Vec<Element> {
    let svg = graph::svg(plan);
    parse_xml(&svg).unwrap_or_else(|e| panic!("not well-formed: {e}\n{svg}"))
}

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

// ----- SVG -----

#[test]
fn svg_is_well_formed_and_sized_to_its_content() {
    let svg = graph::svg(&sample());
    let elements = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    let root = &elements[0];
    assert_eq!(root.name, "svg");
    assert_eq!(root.attrs["xmlns"], "http://www.w3.org/2000/svg");
    let view: Vec<f64> = root.attrs["viewBox"]
        .split(' ')
        .map(|v| v.parse().expect("numbers"))
        .collect();
    assert_eq!(view.len(), 4);
    let boxes = node_boxes(&elements);
    for (id, b) in &boxes {
        assert!(
            b.x >= view[0]
                && b.y >= view[1]
                && b.x + b.w <= view[0] + view[2]
                && b.y + b.h <= view[1] + view[3],
            "{id} {b:?} outside {view:?}"
        );
    }
    // Not much bigger than needed either.
    let right = boxes.values().map(|b| b.x + b.w).fold(0.0, f64::max);
    assert!(view[0] + view[2] < right + 200.0, "{view:?} vs {right}");
    assert!(elements.iter().any(|e| e.name == "marker"));
}

#[test]
fn svg_shows_every_node_with_its_shape() {
    let elements = svg_elements(&sample());
    let classes: BTreeMap<&str, &str> = elements
        .iter()
        .filter(|e| e.name == "g" && e.attrs.contains_key("data-x"))
        .map(|e| (e.attrs["id"].as_str(), e.attrs["class"].as_str()))
        .collect();
    assert_eq!(classes.len(), 12 + 1 + 4, "{classes:?}");
    assert_eq!(classes["c0_orders"], "node point-to-point datatype");
    assert_eq!(classes["c3_quotes"], "node publish-subscribe");
    assert_eq!(classes["x0_markets"], "node exchange");
    assert_eq!(classes["r0_triage"], "node route");
    let svg = graph::svg(&sample());
    assert!(svg.contains(">recipients from header x-to</text>"), "{svg}");
    assert!(
        svg.contains(">datatype: orders.schema.json</text>"),
        "{svg}"
    );
}

#[test]
fn svg_shows_every_edge_with_its_label_and_style() {
    let svg = graph::svg(&sample());
    for (from, to, class, label) in [
        ("c0_orders", "c1_invalid_orders", "dotted", Some("invalid")),
        (
            "c0_orders",
            "c2_order_failures",
            "dotted",
            Some("dead letters"),
        ),
        (
            "c0_orders",
            "r0_triage",
            "solid",
            Some("filter exists($.id)"),
        ),
        (
            "r0_triage",
            "c6_big",
            "solid",
            Some("when $.total &gt; 100"),
        ),
        ("r0_triage", "c7_small", "solid", Some("otherwise")),
        ("r0_triage", "c8_audit", "solid", Some("wire tap")),
        ("r0_triage", "c9_rejected", "solid", Some("discard")),
        ("r1_fan_out", "x0_markets", "solid", Some("recipients")),
        ("r3_pass", "c7_small", "solid", None),
        (
            "c3_quotes",
            "c4_quotes_nyse",
            "solid",
            Some("join hops=5, filter header(&quot;exchange&quot;) == &quot;NYSE&quot;"),
        ),
        (
            "c4_quotes_nyse",
            "c5_archive",
            "dashed",
            Some("join hops=0, archival"),
        ),
        (
            "x0_markets",
            "c4_quotes_nyse",
            "solid",
            Some("stock.*.nyse"),
        ),
        ("x0_markets", "c8_audit", "solid", Some("(all)")),
        ("x0_markets", "c11_unrouted", "solid", Some("alternate")),
    ] {
        let mut tag = format!("<g class=\"edge {class}\" data-from=\"{from}\" data-to=\"{to}\">");
        if let Some(label) = label {
            tag.push_str(&format!("<title>{label}</title>"));
            // And drawn as text, not only as a tooltip.
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "no text {label}\n{svg}"
            );
        }
        assert!(svg.contains(&tag), "missing {tag}\n{svg}");
    }
    let dashed = svg.matches("stroke-dasharray=\"7 4\"").count();
    assert_eq!(dashed, 1, "only the archival join is dashed");
}

#[test]
fn svg_boxes_do_not_overlap() {
    let boxes = node_boxes(&svg_elements(&sample()));
    let all: Vec<_> = boxes.iter().collect();
    for (i, (a, ba)) in all.iter().enumerate() {
        for (b, bb) in &all[i + 1..] {
            assert!(!overlap(**ba, **bb), "{a} {ba:?} overlaps {b} {bb:?}");
        }
    }
}

#[test]
fn a_flow_reads_left_to_right() {
    let boxes = node_boxes(&svg_elements(&sample()));
    assert!(boxes["c0_orders"].x < boxes["r0_triage"].x);
    assert!(boxes["r0_triage"].x < boxes["c6_big"].x);
    assert!(boxes["c6_big"].x < boxes["r1_fan_out"].x);
    assert!(boxes["r1_fan_out"].x < boxes["x0_markets"].x);
}

// ----- all formats -----

#[test]
fn every_format_is_deterministic() {
    for format in Format::ALL {
        let first = graph::render(&sample(), format);
        for _ in 0..3 {
            assert_eq!(graph::render(&sample(), format), first, "{format}");
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
    r.wire_tap = Some("plain".into());
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

#[test]
fn a_cycle_of_joins_is_laid_out() {
    let mut plan = Plan::default();
    plan.channels.push(pubsub("channel0"));
    plan.channels.push(pubsub("channel1"));
    plan.joins.push(join("channel0", "channel1", 5, false));
    plan.joins.push(join("channel1", "channel0", 10, false));
    let started = Instant::now();
    let svg = graph::svg(&plan);
    assert!(started.elapsed() < Duration::from_secs(5));
    let elements = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    let boxes = node_boxes(&elements);
    assert!(boxes["c0_channel0"].x < boxes["c1_channel1"].x, "{boxes:?}");
    assert!(svg.contains(">join hops=5</text>") && svg.contains(">join hops=10</text>"));
    // The two edges are drawn apart, not on top of each other.
    let lines: Vec<&String> = elements
        .iter()
        .filter(|e| e.name == "polyline")
        .map(|e| &e.attrs["points"])
        .collect();
    assert_eq!(lines.len(), 2);
    assert_ne!(lines[0], lines[1]);
    let dot = graph::dot(&plan);
    assert!(
        dot.contains("c0_channel0 -> c1_channel1") && dot.contains("c1_channel1 -> c0_channel0")
    );
}

#[test]
fn a_long_cycle_and_a_self_join_are_laid_out() {
    let mut plan = Plan::default();
    for i in 0..10 {
        plan.channels.push(pubsub(&format!("channel{i}")));
    }
    for i in 0..10 {
        plan.joins.push(join(
            &format!("channel{i}"),
            &format!("channel{}", (i + 1) % 10),
            1,
            false,
        ));
    }
    plan.joins.push(join("channel3", "channel3", 1, false));
    let elements = svg_elements(&plan);
    let boxes = node_boxes(&elements);
    assert_eq!(boxes.len(), 10);
    assert_eq!(elements.iter().filter(|e| e.name == "polyline").count(), 11);
}

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

// ----- random plans -----

fn name() -> impl Strategy<Value = String> {
    "[a-z<>&\"'\\\\. é注_-]{1,10}"
}

prop_compose! {
    fn random_plan()(
        channels in proptest::collection::vec((name(), any::<bool>(), proptest::option::of(0..8usize), proptest::option::of(0..8usize)), 0..8),
        routes in proptest::collection::vec((name(), 0..8usize, 0..3u8, proptest::collection::vec((0..8usize, any::<bool>()), 0..4), any::<bool>()), 0..5),
        joins in proptest::collection::vec((0..8usize, 0..8usize, 0..12u32, any::<bool>()), 0..8),
        exchanges in proptest::collection::vec((name(), proptest::option::of(0..8usize), proptest::collection::vec((any::<bool>(), 0..8usize), 0..3)), 0..3),
    ) -> Plan {
        let names: Vec<String> = channels.iter().map(|c| c.0.clone()).collect();
        // An index past the channels names a channel the plan does not declare.
        let ch = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("missing{i}"));
        let mut plan = Plan::default();
        for (n, publish, invalid, dead) in &channels {
            let mut c = if *publish { pubsub(n) } else { p2p(n) };
            c.datatype = invalid.map(|i| DatatypePlan {
                path: format!("{n}.json"),
                schema: serde_json::Value::Null,
                invalid: ch(i),
            });
            c.dead_letter = dead.map(ch);
            plan.channels.push(c);
        }
        let xnames: Vec<String> = exchanges.iter().map(|x| x.0.clone()).collect();
        let target = |(i, exchange): (usize, bool)| match xnames.get(i).filter(|_| exchange) {
            Some(x) => TargetRef::Exchange(x.clone()),
            None => TargetRef::Channel(ch(i)),
        };
        for (n, from, kind, targets, filtered) in &routes {
            let targets: Vec<TargetRef> = targets.iter().copied().map(target).collect();
            let action = match kind {
                0 => ActionPlan::To(targets),
                1 => ActionPlan::Choice {
                    when: targets.iter().map(|t| (predicate("$.a > 1"), t.clone())).collect(),
                    otherwise: targets.first().cloned(),
                },
                _ => ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)),
            };
            let mut r = route(n, &ch(*from), action);
            if *filtered {
                r.filter = Some(predicate("exists($.id)"));
                r.discard = Some(ch(from + 1));
                r.wire_tap = Some(ch(from + 2));
            }
            plan.routes.push(r);
        }
        for (a, b, hops, archival) in joins {
            plan.joins.push(join(&ch(a), &ch(b), hops, archival));
        }
        for (n, alternate, bindings) in exchanges {
            plan.exchanges.push(ExchangePlan {
                name: n,
                alternate: alternate.map(ch),
                bindings: bindings
                    .into_iter()
                    .map(|(keyed, to)| BindingPlan {
                        key: keyed.then(|| TopicPattern::parse("a.*.#").expect("the pattern parses")),
                        to: vec![ch(to)],
                    })
                    .collect(),
            });
        }
        plan
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_plans_draw_well_formed_svg_without_overlapping_boxes(plan in random_plan()) {
        let svg = graph::svg(&plan);
        let elements = parse_xml(&svg).map_err(|e| TestCaseError::fail(format!("{e}\n{svg}")))?;
        let boxes: Vec<Box2> = node_boxes(&elements).into_values().collect();
        let dot = graph::dot(&plan);
        let nodes = dot
            .lines()
            .filter(|l| l.split(' ').find(|w| !w.is_empty()).is_some() && l.trim_start().split(' ').nth(1).is_some_and(|w| w.starts_with("[label=")))
            .count();
        prop_assert_eq!(boxes.len(), nodes);
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                prop_assert!(!overlap(*a, *b), "{:?} overlaps {:?}\n{}", a, b, svg);
            }
        }
        prop_assert_eq!(graph::svg(&plan), svg);
    }
}
