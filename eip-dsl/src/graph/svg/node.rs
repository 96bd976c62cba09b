//! A node as SVG: its shape in its colours (a box, a rounded box, a hexagon, a diamond, a
//! parallelogram or a cylinder), a second border for a datatype channel, its name and second
//! line, and the size of its box.

use std::fmt::Write;

use super::text::{escape, shorten, text_width};
use super::{FONT, SMALL, num};
use crate::graph::layout::Rect;
use crate::graph::model::{Node, Shape};

/// Names longer than this are cut (in full in the tooltip).
const MAX_NODE_CHARS: usize = 40;
/// Second lines longer than this are cut (in full in the tooltip). Longer than a name: an
/// adapter's endpoint is a URL or a path.
const MAX_DETAIL_CHARS: usize = 64;
/// How far a parallelogram's top side is shifted right of its bottom side.
const SLANT: f64 = 12.0;
/// The half-height of a cylinder's top and bottom ellipses.
const RIM: f64 = 5.0;

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

/// A node in box `r`: a group with its kind as class, its name and position as data (the web
/// console finds a node by name there) and its name, kind and full second line as tooltip,
/// holding its outline and its text.
pub(super) fn draw_node(out: &mut String, node: &Node, r: Rect) {
    let (fill, stroke) = colours(node.shape);
    let kind = kind_name(node);
    // A second line cut short is in the tooltip in full.
    let title = match node.detail.as_deref() {
        Some(d) if d.chars().count() > MAX_DETAIL_CHARS => format!("{} ({kind}): {d}", node.label),
        _ => format!("{} ({kind})", node.label),
    };
    let _ = write!(
        out,
        "<g class=\"node {kind}\" id=\"{}\" data-name=\"{}\" data-x=\"{}\" data-y=\"{}\" \
         data-width=\"{}\" data-height=\"{}\"><title>{}</title>",
        node.id,
        escape(&node.label),
        num(r.x),
        num(r.y),
        num(r.w),
        num(r.h),
        escape(&title)
    );
    draw_outline(out, node.shape, r, fill, stroke);
    if node.datatype {
        draw_datatype_border(out, node.shape, r, stroke);
    }
    draw_text(out, node, r);
    out.push_str("</g>\n");
}

/// The outline of `shape` filling box `r`.
fn draw_outline(out: &mut String, shape: Shape, r: Rect, fill: &str, stroke: &str) {
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
    match shape {
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
        Shape::Adapter(_) if shape.is_database() => cylinder(out, r, &paint, stroke),
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
}

/// A second border inside the first, which marks a datatype channel.
fn draw_datatype_border(out: &mut String, shape: Shape, r: Rect, stroke: &str) {
    let rx = match shape {
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

/// The node's name, and its second line below it if it has one, centred in box `r`.
fn draw_text(out: &mut String, node: &Node, r: Rect) {
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
pub(super) fn onto_outline(shape: Shape, r: Rect, p: (f64, f64)) -> (f64, f64) {
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

/// A polygon through `points`, painted with `paint`.
fn polygon(out: &mut String, points: &[(f64, f64)], paint: &str) {
    let pts: Vec<String> = points
        .iter()
        .map(|&(x, y)| format!("{},{}", num(x), num(y)))
        .collect();
    let _ = write!(out, "<polygon points=\"{}\" {paint}/>", pts.join(" "));
}

/// The width and height of a node's box, from its text and shape.
pub(super) fn node_size(node: &Node) -> (f64, f64) {
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

#[cfg(all(test, feature = "file", feature = "sql"))]
mod tests {
    use super::*;

    #[test]
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
}
