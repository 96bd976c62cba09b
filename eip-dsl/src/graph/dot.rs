//! Graphviz DOT: `dot -Tsvg flow.dot > flow.svg` draws it.

use std::fmt::Write;

use super::model::{Graph, Line, Shape};

/// The graph in DOT, left to right.
pub(crate) fn write(graph: &Graph) -> String {
    let mut out = String::from(
        "digraph flow {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n  \
         edge [fontname=\"Helvetica\", fontsize=9];\n",
    );
    // Writing to a String can not fail; the results of `write!` below are ignored for that
    // reason.
    for node in &graph.nodes {
        let mut label = escape(&node.label);
        if let Some(detail) = &node.detail {
            label.push_str("\\n");
            label.push_str(&escape(detail));
        }
        let shape = match node.shape {
            Shape::PointToPoint => "shape=box",
            Shape::PublishSubscribe => "shape=box, style=rounded",
            Shape::Exchange => "shape=hexagon",
            Shape::Router => "shape=diamond",
            Shape::Adapter(_) if node.shape.is_database() => "shape=cylinder",
            Shape::Adapter(_) => "shape=parallelogram",
            Shape::Undeclared => "shape=box, style=dashed, color=red",
        };
        let double = if node.datatype { ", peripheries=2" } else { "" };
        let _ = writeln!(out, "  {} [label=\"{label}\", {shape}{double}];", node.id);
    }
    for edge in &graph.edges {
        let (Some(from), Some(to)) = (graph.nodes.get(edge.from), graph.nodes.get(edge.to)) else {
            continue;
        };
        let mut attrs = Vec::new();
        if let Some(label) = &edge.label {
            attrs.push(format!("label=\"{}\"", escape(label)));
        }
        match edge.line {
            Line::Solid => {}
            Line::Dashed => attrs.push("style=dashed".into()),
            Line::Dotted => attrs.push("style=dotted".into()),
        }
        if attrs.is_empty() {
            let _ = writeln!(out, "  {} -> {};", from.id, to.id);
        } else {
            let _ = writeln!(out, "  {} -> {} [{}];", from.id, to.id, attrs.join(", "));
        }
    }
    out.push_str("}\n");
    out
}

/// `s` for the inside of a DOT double-quoted string: backslashes and quotes escaped (so a `\n`
/// or `\l` in a name stays text), control characters as spaces.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(escape(r#"a"b\nc"#), r#"a\"b\\nc"#);
    }

    #[test]
    fn a_trailing_backslash_can_not_swallow_the_closing_quote() {
        assert_eq!(escape("x\\"), "x\\\\");
    }
}
