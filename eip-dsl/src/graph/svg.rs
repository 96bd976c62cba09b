//! SVG, laid out here (no Graphviz needed): a standalone picture a browser opens directly.

use std::fmt::Write;

use super::layout::{self, EdgeIn, Layout, Rect};
use super::model::{Graph, Line, Node, Shape};

/// Font size of node names.
const FONT: f64 = 12.0;
/// Font size of a node's second line and of edge labels.
const SMALL: f64 = 10.0;
/// Names longer than this are cut (in full in the tooltip).
const MAX_NODE_CHARS: usize = 40;
/// Second lines longer than this are cut (in full in the tooltip). Longer than a name: an
/// adapter's endpoint is a URL or a path.
const MAX_DETAIL_CHARS: usize = 64;
/// How far a parallelogram's top side is shifted right of its bottom side.
const SLANT: f64 = 12.0;
/// The half-height of a cylinder's top and bottom ellipses.
const RIM: f64 = 5.0;
/// Edge labels longer than this are cut (in full in the tooltip).
const MAX_EDGE_CHARS: usize = 48;
/// Space around the drawing.
const MARGIN: f64 = 16.0;

/// The graph as an SVG document.
pub(crate) fn write(graph: &Graph) -> String {
    let sizes: Vec<(f64, f64)> = graph.nodes.iter().map(node_size).collect();
    let edges: Vec<EdgeIn> = graph
        .edges
        .iter()
        .map(|e| EdgeIn {
            from: e.from,
            to: e.to,
            label: e.label.as_deref().map(|l| {
                let w = text_width(&shorten(l, MAX_EDGE_CHARS), SMALL);
                (w + 8.0, SMALL + 6.0)
            }),
        })
        .collect();
    let layout = layout::layout(&sizes, &edges);
    draw(graph, &layout)
}

fn draw(graph: &Graph, layout: &Layout) -> String {
    let (min_x, min_y, max_x, max_y) = bounds(graph, layout);
    let (w, h) = (max_x - min_x + 2.0 * MARGIN, max_y - min_y + 2.0 * MARGIN);
    let (x0, y0) = (min_x - MARGIN, min_y - MARGIN);
    let mut out = String::new();
    // Writing to a String can not fail; the results of `write!` below are ignored for that
    // reason.
    let _ = writeln!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" \
         viewBox=\"{} {} {} {}\" font-family=\"Helvetica, Arial, sans-serif\" \
         font-size=\"{FONT}\">",
        num(w),
        num(h),
        num(x0),
        num(y0),
        num(w),
        num(h)
    );
    out.push_str("<defs>\n");
    for (id, colour) in [("eip-arrow", SOLID), ("eip-arrow-failure", FAILURE)] {
        let _ = writeln!(
            out,
            "<marker id=\"{id}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"8\" \
             markerHeight=\"8\" orient=\"auto\"><path d=\"M0,1 L9,5 L0,9 z\" fill=\"{colour}\"/>\
             </marker>"
        );
    }
    out.push_str("</defs>\n");
    let _ = writeln!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"white\"/>",
        num(x0),
        num(y0),
        num(w),
        num(h)
    );
    if graph.nodes.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" fill=\"#666\">(empty flow)</text>",
            num(x0 + MARGIN),
            num(y0 + MARGIN + FONT)
        );
    }

    out.push_str("<g class=\"edges\">\n");
    for (edge, route) in graph.edges.iter().zip(&layout.edges) {
        let (Some(from), Some(to)) = (graph.nodes.get(edge.from), graph.nodes.get(edge.to)) else {
            continue;
        };
        if route.points.is_empty() {
            continue;
        }
        let (style, dash, colour, marker) = match edge.line {
            Line::Solid => ("solid", "", SOLID, "eip-arrow"),
            Line::Dashed => ("dashed", " stroke-dasharray=\"7 4\"", SOLID, "eip-arrow"),
            Line::Dotted => (
                "dotted",
                " stroke-dasharray=\"2 3\"",
                FAILURE,
                "eip-arrow-failure",
            ),
        };
        let mut ends = route.points.clone();
        for (node, at) in [(edge.from, 0), (edge.to, ends.len() - 1)] {
            if let (Some(n), Some(r)) = (graph.nodes.get(node), layout.nodes.get(node)) {
                ends[at] = onto_outline(n.shape, *r, ends[at]);
            }
        }
        let points: Vec<String> = ends
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let _ = write!(
            out,
            "<g class=\"edge {style}\" data-from=\"{}\" data-to=\"{}\">",
            from.id, to.id
        );
        if let Some(label) = &edge.label {
            let _ = write!(out, "<title>{}</title>", escape(label));
        }
        let _ = writeln!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.3\"{dash} \
             marker-end=\"url(#{marker})\"/></g>",
            points.join(" ")
        );
    }
    out.push_str("</g>\n<g class=\"nodes\">\n");
    for (node, rect) in graph.nodes.iter().zip(&layout.nodes) {
        draw_node(&mut out, node, *rect);
    }
    out.push_str("</g>\n<g class=\"edge-labels\">\n");
    for (edge, route) in graph.edges.iter().zip(&layout.edges) {
        let (Some(label), Some((cx, cy))) = (&edge.label, route.label) else {
            continue;
        };
        let text = shorten(label, MAX_EDGE_CHARS);
        let tw = text_width(&text, SMALL) + 8.0;
        let th = SMALL + 6.0;
        let _ = writeln!(
            out,
            "<g class=\"edge-label\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" \
             height=\"{}\" rx=\"3\" fill=\"white\" fill-opacity=\"0.9\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"middle\" font-size=\"{SMALL}\" fill=\"#333\">{}</text></g>",
            escape(label),
            num(cx - tw / 2.0),
            num(cy - th / 2.0),
            num(tw),
            num(th),
            num(cx),
            num(cy + SMALL * 0.35),
            escape(&text)
        );
    }
    out.push_str("</g>\n</svg>\n");
    out
}

const SOLID: &str = "#555555";
const FAILURE: &str = "#b04040";

/// Fill and stroke of each shape.
fn colours(shape: Shape) -> (&'static str, &'static str) {
    match shape {
        Shape::PointToPoint => ("#eaf2fb", "#2f6aa3"),
        Shape::PublishSubscribe => ("#e9f7ec", "#2f855a"),
        Shape::Exchange => ("#fdf3e1", "#b7791f"),
        Shape::Router => ("#f1ecfb", "#6b46c1"),
        Shape::Adapter(_) => ("#eef1f4", "#4a5568"),
        Shape::Undeclared => ("#fdeeee", "#c53030"),
    }
}

/// The node's kind as words, for its class and tooltip: `point-to-point datatype durable`,
/// `http-in adapter`.
fn kind_name(node: &Node) -> String {
    let mut kind = match node.shape {
        Shape::PointToPoint => "point-to-point".to_owned(),
        Shape::PublishSubscribe => "publish-subscribe".to_owned(),
        Shape::Exchange => "exchange".to_owned(),
        Shape::Router => "route".to_owned(),
        Shape::Adapter(k) => format!("{} adapter", k.as_str()),
        Shape::Undeclared => "undeclared".to_owned(),
    };
    if node.datatype {
        kind.push_str(" datatype");
    }
    if node.durable {
        kind.push_str(" durable");
    }
    kind
}

fn draw_node(out: &mut String, node: &Node, r: Rect) {
    let (fill, stroke) = colours(node.shape);
    let kind = kind_name(node);
    // A second line cut short is in the tooltip in full.
    let title = match node.detail.as_deref() {
        Some(d) if d.chars().count() > MAX_DETAIL_CHARS => format!("{} ({kind}): {d}", node.label),
        _ => format!("{} ({kind})", node.label),
    };
    let _ = write!(
        out,
        "<g class=\"node {kind}\" id=\"{}\" data-x=\"{}\" data-y=\"{}\" data-width=\"{}\" \
         data-height=\"{}\"><title>{}</title>",
        node.id,
        num(r.x),
        num(r.y),
        num(r.w),
        num(r.h),
        escape(&title)
    );
    let paint = format!("fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"");
    let rect = |out: &mut String, inset: f64, rx: f64, extra: &str| {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" {paint}{extra}/>",
            num(r.x + inset),
            num(r.y + inset),
            num(r.w - 2.0 * inset),
            num(r.h - 2.0 * inset),
            num(rx)
        );
    };
    match node.shape {
        Shape::PointToPoint => rect(out, 0.0, 2.0, ""),
        Shape::PublishSubscribe => rect(out, 0.0, r.h / 2.0, ""),
        Shape::Undeclared => rect(out, 0.0, 2.0, " stroke-dasharray=\"5 3\""),
        Shape::Exchange => {
            let i = (r.w / 4.0).min(12.0);
            let pts = [
                (r.x + i, r.y),
                (r.x + r.w - i, r.y),
                (r.x + r.w, r.y + r.h / 2.0),
                (r.x + r.w - i, r.y + r.h),
                (r.x + i, r.y + r.h),
                (r.x, r.y + r.h / 2.0),
            ];
            polygon(out, &pts, &paint);
        }
        Shape::Router => {
            let pts = [
                (r.x + r.w / 2.0, r.y),
                (r.x + r.w, r.y + r.h / 2.0),
                (r.x + r.w / 2.0, r.y + r.h),
                (r.x, r.y + r.h / 2.0),
            ];
            polygon(out, &pts, &paint);
        }
        Shape::Adapter(_) if node.shape.is_database() => cylinder(out, r, &paint, stroke),
        Shape::Adapter(_) => {
            let pts = [
                (r.x + SLANT, r.y),
                (r.x + r.w, r.y),
                (r.x + r.w - SLANT, r.y + r.h),
                (r.x, r.y + r.h),
            ];
            polygon(out, &pts, &paint);
        }
    }
    if node.datatype {
        // A second border inside the first marks a datatype channel.
        let rx = match node.shape {
            Shape::PublishSubscribe => (r.h - 8.0) / 2.0,
            _ => 1.0,
        };
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" fill=\"none\" \
             stroke=\"{stroke}\" stroke-width=\"1\"/>",
            num(r.x + 4.0),
            num(r.y + 4.0),
            num(r.w - 8.0),
            num(r.h - 8.0),
            num(rx)
        );
    }
    let cx = r.x + r.w / 2.0;
    // A cylinder's text goes on its body, below the top rim.
    let cy = if node.shape.is_database() {
        r.y + RIM + r.h / 2.0
    } else {
        r.y + r.h / 2.0
    };
    let name = escape(&shorten(&node.label, MAX_NODE_CHARS));
    match &node.detail {
        None => {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1a202c\">{name}</text>",
                num(cx),
                num(cy + FONT * 0.35)
            );
        }
        Some(detail) => {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1a202c\">{name}</text>\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{SMALL}\" \
                 fill=\"#4a5568\">{}</text>",
                num(cx),
                num(cy - 6.0 + FONT * 0.35),
                num(cx),
                num(cy + 8.0 + SMALL * 0.35),
                escape(&shorten(detail, MAX_DETAIL_CHARS))
            );
        }
    }
    out.push_str("</g>\n");
}

/// A cylinder filling `r`: the body with its rounded bottom, then the front of the top rim.
fn cylinder(out: &mut String, r: Rect, paint: &str, stroke: &str) {
    let (rx, top, bottom) = (r.w / 2.0, r.y + RIM, r.y + r.h - RIM);
    let _ = write!(
        out,
        "<path d=\"M{},{} A{},{RIM} 0 0 1 {},{} L{},{} A{},{RIM} 0 0 1 {},{} Z\" {paint}/>\
         <path d=\"M{},{} A{},{RIM} 0 0 0 {},{}\" fill=\"none\" stroke=\"{stroke}\" \
         stroke-width=\"1.5\"/>",
        num(r.x),
        num(top),
        num(rx),
        num(r.x + r.w),
        num(top),
        num(r.x + r.w),
        num(bottom),
        num(rx),
        num(r.x),
        num(bottom),
        num(r.x),
        num(top),
        num(rx),
        num(r.x + r.w),
        num(top),
    );
}

/// `p`, an edge's end on a side of `r`'s box, moved onto the outline actually drawn there: a
/// parallelogram's sides slant inwards, the other shapes touch their box at mid-height.
fn onto_outline(shape: Shape, r: Rect, p: (f64, f64)) -> (f64, f64) {
    if !matches!(shape, Shape::Adapter(_)) || shape.is_database() || r.h <= 0.0 {
        return p;
    }
    // How far the outline is inside the box at the height of `p`: the left side runs from
    // SLANT in at the top to the corner at the bottom, the right side the other way round.
    let down = ((p.1 - r.y) / r.h).clamp(0.0, 1.0);
    if p.0 <= r.x {
        (r.x + SLANT * (1.0 - down), p.1)
    } else if p.0 >= r.x + r.w {
        (r.x + r.w - SLANT * down, p.1)
    } else {
        p
    }
}

fn polygon(out: &mut String, points: &[(f64, f64)], paint: &str) {
    let pts: Vec<String> = points
        .iter()
        .map(|&(x, y)| format!("{},{}", num(x), num(y)))
        .collect();
    let _ = write!(out, "<polygon points=\"{}\" {paint}/>", pts.join(" "));
}

/// The width and height of a node's box, from its text and shape.
fn node_size(node: &Node) -> (f64, f64) {
    let name = text_width(&shorten(&node.label, MAX_NODE_CHARS), FONT);
    let detail = node
        .detail
        .as_deref()
        .map_or(0.0, |d| text_width(&shorten(d, MAX_DETAIL_CHARS), SMALL));
    let text = name.max(detail);
    let two_lines = node.detail.is_some();
    let (w, h) = match node.shape {
        Shape::PointToPoint | Shape::Undeclared => {
            (text + 24.0, if two_lines { 42.0 } else { 30.0 })
        }
        Shape::PublishSubscribe => {
            let h = if two_lines { 42.0 } else { 30.0 };
            (text + h + 8.0, h)
        }
        Shape::Exchange => (text + 40.0, if two_lines { 42.0 } else { 30.0 }),
        Shape::Router => {
            // The text must fit between the diamond's slanted sides at its own height.
            let (h, th) = if two_lines {
                (56.0, 28.0)
            } else {
                (40.0, 14.0)
            };
            ((text + 8.0) * h / (h - th), h)
        }
        // Room for the slant at both ends, or for the two rims.
        Shape::Adapter(_) if node.shape.is_database() => (text + 24.0, 42.0 + 2.0 * RIM),
        Shape::Adapter(_) => (text + 24.0 + SLANT, 42.0),
    };
    let w = if node.datatype { w + 8.0 } else { w };
    (w.max(56.0), h)
}

/// Roughly how wide `s` is at `size` pixels in a sans-serif font.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | ' ' => 0.32,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.85,
            c if c.is_ascii_uppercase() || c == '#' || c == '&' => 0.68,
            c if c.is_ascii() => 0.56,
            c if is_wide(c) => 1.0,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
}

/// East Asian wide characters and emoji, which take about a square each.
fn is_wide(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x115F
        | 0x2E80..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1FAFF
        | 0x20000..=0x3FFFD)
}

/// `s` cut to `max` characters, an ellipsis marking the cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The smallest box holding every node, edge and label.
fn bounds(graph: &Graph, layout: &Layout) -> (f64, f64, f64, f64) {
    let mut b = (
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    );
    let mut add = |x: f64, y: f64| {
        b.0 = b.0.min(x);
        b.1 = b.1.min(y);
        b.2 = b.2.max(x);
        b.3 = b.3.max(y);
    };
    for r in &layout.nodes {
        add(r.x, r.y);
        add(r.x + r.w, r.y + r.h);
    }
    for (edge, route) in graph.edges.iter().zip(&layout.edges) {
        for &(x, y) in &route.points {
            add(x, y);
        }
        if let (Some(label), Some((cx, cy))) = (&edge.label, route.label) {
            let hw = (text_width(&shorten(label, MAX_EDGE_CHARS), SMALL) + 8.0) / 2.0;
            let hh = (SMALL + 6.0) / 2.0;
            add(cx - hw, cy - hh);
            add(cx + hw, cy + hh);
        }
    }
    if !b.0.is_finite() {
        // Nothing drawn: room for the "(empty flow)" note.
        return (0.0, 0.0, 100.0, 20.0);
    }
    b
}

/// A coordinate with one decimal, never `-0.0`.
fn num(v: f64) -> String {
    let s = format!("{v:.1}");
    if s == "-0.0" { "0.0".to_owned() } else { s }
}

/// `s` as XML text or attribute content: markup characters as entities, and characters XML
/// 1.0 does not allow (control characters, U+FFFE, U+FFFF) replaced.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_entities() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }

    #[test]
    fn characters_xml_forbids_are_replaced() {
        assert_eq!(escape("a\u{0}b\u{FFFF}"), "a b\u{FFFD}");
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }

    #[test]
    #[cfg(all(feature = "file", feature = "sql"))]
    fn an_edge_end_moves_onto_a_parallelogram_s_slanted_side() {
        let kind = |name| crate::kind::named(name).map(|k| k.id).unwrap();
        let r = Rect {
            x: 10.0,
            y: 0.0,
            w: 100.0,
            h: 40.0,
        };
        let file = Shape::Adapter(kind("file-out"));
        // At mid-height each side is half the slant inside the box.
        assert_eq!(onto_outline(file, r, (10.0, 20.0)), (16.0, 20.0));
        assert_eq!(onto_outline(file, r, (110.0, 20.0)), (104.0, 20.0));
        // A cylinder's and a box's sides are the box's.
        let db = Shape::Adapter(kind("sql-out"));
        assert_eq!(onto_outline(db, r, (10.0, 20.0)), (10.0, 20.0));
        assert_eq!(
            onto_outline(Shape::PointToPoint, r, (10.0, 20.0)),
            (10.0, 20.0)
        );
    }

    #[test]
    fn wide_characters_measure_wider() {
        assert!(text_width("注文", FONT) > text_width("ab", FONT));
    }
}
