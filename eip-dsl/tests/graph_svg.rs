//! `eip graph` as SVG: well-formed XML sized to its content, every node and edge drawn, no boxes
//! overlapping and a flow reading left to right; channel adapters drawn as endpoints before
//! (inbound) or after (outbound) their channel; cycles of joins laid out; and random plans, with
//! adapters, drawn well-formed without overlapping boxes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use eip_core::topic::TopicPattern;
use eip_dsl::graph;
use eip_dsl::plan::{
    ActionPlan, BindingPlan, DatatypePlan, ExchangePlan, Plan, RecipientsPlan, StepPlan, TargetRef,
};
use proptest::prelude::*;

mod support {
    pub mod graph;
    pub mod svg;
    pub mod xml;
}

use support::graph::{adapters_plan, join, p2p, predicate, pubsub, route, sample};
use support::svg::{Box2, node_boxes, svg_elements};
use support::xml::parse_xml;

fn overlap(a: Box2, b: Box2) -> bool {
    a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
}

// ----- the XML checker -----

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

// ----- channel adapters -----

#[test]
fn svg_draws_adapters_as_parallelograms_and_databases_as_cylinders() {
    let svg = graph::svg(&adapters_plan());
    let elements = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    let classes: BTreeMap<&str, &str> = elements
        .iter()
        .filter(|e| e.name == "g" && e.attrs.contains_key("data-x"))
        .map(|e| (e.attrs["id"].as_str(), e.attrs["class"].as_str()))
        .collect();
    assert_eq!(classes.len(), 4 + 1 + 6, "{classes:?}");
    for (id, class) in [
        ("a0_files_in", "node file-in adapter"),
        ("a1_api", "node http-in adapter"),
        ("a2_poll", "node sql-in adapter"),
        ("a3_archive", "node file-out adapter"),
        ("a4_notify", "node http-out adapter"),
        ("a5_store", "node sql-out adapter"),
    ] {
        assert_eq!(classes[id], class);
    }
    // Four parallelograms (the router's diamond is the only other polygon), two cylinders of
    // two paths each (body, front of the top rim).
    assert_eq!(
        elements.iter().filter(|e| e.name == "polygon").count(),
        4 + 1
    );
    assert_eq!(
        elements.iter().filter(|e| e.name == "path").count(),
        2 * 2 + 2
    );
    for text in [
        ">files-in</text>",
        ">file-in · /flows/in/*.json</text>",
        ">http-in · POST http://127.0.0.1:8080/orders</text>",
        ">sql-in · sqlite:orders.db</text>",
        ">file-out · /flows/out</text>",
        ">http-out · http://127.0.0.1:9000/big</text>",
        ">sql-out · postgres://app:***@db.example/shop</text>",
        "<title>api (http-in adapter)</title>",
    ] {
        assert!(svg.contains(text), "missing {text}\n{svg}");
    }
    for (from, to) in [
        ("a0_files_in", "c0_orders"),
        ("a1_api", "c0_orders"),
        ("a2_poll", "c0_orders"),
        ("c2_small", "a3_archive"),
        ("c1_big", "a4_notify"),
        ("c1_big", "a5_store"),
    ] {
        let tag =
            format!("<g class=\"edge solid\" data-from=\"{from}\" data-to=\"{to}\"><polyline");
        assert!(svg.contains(&tag), "missing {tag}\n{svg}");
    }
}

#[test]
fn inbound_adapters_come_before_their_channel_and_outbound_after() {
    let boxes = node_boxes(&svg_elements(&adapters_plan()));
    for inbound in ["a0_files_in", "a1_api", "a2_poll"] {
        let (a, c) = (boxes[inbound], boxes["c0_orders"]);
        assert!(a.x + a.w < c.x, "{inbound} {a:?} not left of orders {c:?}");
    }
    for (outbound, channel) in [
        ("a3_archive", "c2_small"),
        ("a4_notify", "c1_big"),
        ("a5_store", "c1_big"),
    ] {
        let (a, c) = (boxes[outbound], boxes[channel]);
        assert!(
            c.x + c.w < a.x,
            "{outbound} {a:?} not right of {channel} {c:?}"
        );
    }
    let all: Vec<_> = boxes.iter().collect();
    for (i, (a, ba)) in all.iter().enumerate() {
        for (b, bb) in &all[i + 1..] {
            assert!(!overlap(**ba, **bb), "{a} {ba:?} overlaps {b} {bb:?}");
        }
    }
}

#[test]
fn edges_meet_the_slanted_side_of_a_parallelogram() {
    let elements = svg_elements(&adapters_plan());
    let boxes = node_boxes(&elements);
    let points = |from: &str, to: &str| -> Vec<(f64, f64)> {
        let at = elements
            .iter()
            .position(|e| {
                e.attrs.get("data-from").is_some_and(|f| f == from)
                    && e.attrs.get("data-to").is_some_and(|t| t == to)
            })
            .unwrap_or_else(|| panic!("no edge {from} -> {to}"));
        elements[at + 1].attrs["points"]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect()
    };
    // Into an outbound adapter: the end is inside its box, on the side slanting in.
    let archive = boxes["a3_archive"];
    let end = *points("c2_small", "a3_archive").last().expect("points");
    assert!(
        end.0 > archive.x && end.0 < archive.x + 12.0,
        "{end:?} {archive:?}"
    );
    // Out of an inbound adapter: the start is inside its box too.
    let api = boxes["a1_api"];
    let start = points("a1_api", "c0_orders")[0];
    assert!(
        start.0 < api.x + api.w && start.0 > api.x + api.w - 12.0,
        "{start:?} {api:?}"
    );
    // A cylinder's sides are straight: the edge ends on its box.
    let store = boxes["a5_store"];
    let end = *points("c1_big", "a5_store").last().expect("points");
    assert_eq!(end.0, store.x);
}

#[test]
fn a_channel_without_edges_is_drawn_next_to_the_rest_of_its_column() {
    // `dead-letters` shares the first column with the three inbound adapters.
    let boxes = node_boxes(&svg_elements(&adapters_plan()));
    let dead = boxes["c3_dead_letters"];
    let centre = |b: Box2| b.x + b.w / 2.0;
    let gap = boxes
        .iter()
        .filter(|(id, b)| id.starts_with('a') && (centre(**b) - centre(dead)).abs() < 1.0)
        .map(|(_, b)| (b.y - (dead.y + dead.h)).max(dead.y - (b.y + b.h)))
        .fold(f64::INFINITY, f64::min);
    assert!(gap.is_finite(), "{boxes:?}");
    assert!(
        gap <= 30.0,
        "{gap} between dead-letters and the adapters\n{boxes:?}"
    );
}

// ----- cycles -----

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
        adapters in proptest::collection::vec((name(), 0..6usize, 0..8usize), 0..5),
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
                r.steps = vec![
                    StepPlan::filter(predicate("exists($.id)"), Some(ch(from + 1))),
                    StepPlan::wire_tap(ch(from + 2)),
                ];
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
        // One adapter of each kind to copy, renamed and attached to a random channel.
        let kinds = adapters_plan().adapters;
        for (n, kind, channel) in adapters {
            let mut a = kinds[kind].clone();
            a.name = n;
            a.channel = ch(channel);
            plan.adapters.push(a);
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
