//! SVG, laid out here (no Graphviz needed): a standalone picture a browser opens directly.
//!
//! The document is the header (size, arrow markers, a white background), then three groups
//! drawn in turn so labels sit on top: the edges, the nodes (`node`), the edge labels. Text
//! is measured, cut and escaped by `text`.

mod node;
mod text;

use std::fmt::Write;

use super::layout::{self, EdgeIn, Layout};
use super::model::{Edge, Graph, Line};
use node::{draw_node, node_size, onto_outline};
use text::{escape, shorten, text_width};

/// Font size of node names.
const FONT: f64 = 12.0;
/// Font size of a node's second line and of edge labels.
const SMALL: f64 = 10.0;
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

/// The laid-out graph as an SVG document.
fn draw(graph: &Graph, layout: &Layout) -> String {
    let (min_x, min_y, max_x, max_y) = bounds(graph, layout);
    let (w, h) = (max_x - min_x + 2.0 * MARGIN, max_y - min_y + 2.0 * MARGIN);
    let (x0, y0) = (min_x - MARGIN, min_y - MARGIN);
    let mut out = String::new();
    // Writing to a String can not fail; the results of `write!` here and in the functions
    // called are ignored for that reason.
    draw_header(&mut out, (x0, y0), (w, h));
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
        draw_edge(&mut out, graph, layout, edge, &route.points);
    }
    out.push_str("</g>\n<g class=\"nodes\">\n");
    for (node, rect) in graph.nodes.iter().zip(&layout.nodes) {
        draw_node(&mut out, node, *rect);
    }
    out.push_str("</g>\n<g class=\"edge-labels\">\n");
    for (edge, route) in graph.edges.iter().zip(&layout.edges) {
        if let (Some(label), Some(centre)) = (&edge.label, route.label) {
            draw_edge_label(&mut out, label, centre);
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}

/// The document's start: the `<svg>` element showing the box at `(x0, y0)` of size `(w, h)`,
/// the arrow markers, and a white background.
fn draw_header(out: &mut String, (x0, y0): (f64, f64), (w, h): (f64, f64)) {
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
}

/// An edge along `points`, its ends moved onto its nodes' outlines, in its line style, its
/// label as its tooltip. Nothing for an edge whose ends are not nodes or that has no route.
fn draw_edge(out: &mut String, graph: &Graph, layout: &Layout, edge: &Edge, points: &[(f64, f64)]) {
    let (Some(from), Some(to)) = (graph.nodes.get(edge.from), graph.nodes.get(edge.to)) else {
        return;
    };
    if points.is_empty() {
        return;
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
    let mut ends = points.to_vec();
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

/// An edge's label centred at `(cx, cy)` on a white box, cut short (in full in its tooltip).
fn draw_edge_label(out: &mut String, label: &str, (cx, cy): (f64, f64)) {
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

/// The colour of a solid or dashed edge and its arrow.
const SOLID: &str = "#555555";
/// The colour of a dotted edge (where failures go) and its arrow.
const FAILURE: &str = "#b04040";

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
