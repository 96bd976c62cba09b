//! Mermaid flowcharts: paste into a ```` ```mermaid ```` block on GitHub, GitLab or mdBook
//! (with a Mermaid preprocessor) and it is drawn.

use std::fmt::Write;

use super::model::{Graph, Line, Shape};

/// The graph as a Mermaid flowchart, left to right.
pub(crate) fn write(graph: &Graph) -> String {
    let mut out = String::from("flowchart LR\n");
    // Writing to a String can not fail; the results of `write!` below are ignored for that
    // reason.
    for node in &graph.nodes {
        let mut label = escape(&node.label);
        if let Some(detail) = &node.detail {
            label.push_str("<br/>");
            label.push_str(&escape(detail));
        }
        let (open, close) = match node.shape {
            Shape::PointToPoint | Shape::Undeclared => ("[", "]"),
            Shape::PublishSubscribe => ("([", "])"),
            Shape::Exchange => ("{{", "}}"),
            Shape::Router => ("{", "}"),
            Shape::Adapter(_) if node.shape.is_database() => ("[(", ")]"),
            Shape::Adapter(_) => ("[/", "/]"),
        };
        let _ = writeln!(out, "  {}{open}\"{label}\"{close}", node.id);
    }
    let mut dashed = Vec::new();
    let mut drawn = 0usize;
    for edge in &graph.edges {
        let (Some(from), Some(to)) = (graph.nodes.get(edge.from), graph.nodes.get(edge.to)) else {
            continue;
        };
        // Mermaid has solid and dotted links only; a dashed one is a dotted one restyled.
        let arrow = match edge.line {
            Line::Solid => "-->",
            Line::Dashed => {
                dashed.push(drawn);
                "-.->"
            }
            Line::Dotted => "-.->",
        };
        match &edge.label {
            Some(label) => {
                let _ = writeln!(
                    out,
                    "  {} {arrow}|\"{}\"| {}",
                    from.id,
                    escape(label),
                    to.id
                );
            }
            None => {
                let _ = writeln!(out, "  {} {arrow} {}", from.id, to.id);
            }
        }
        drawn += 1;
    }
    let datatype: Vec<&str> = graph
        .nodes
        .iter()
        .filter(|n| n.datatype)
        .map(|n| n.id.as_str())
        .collect();
    if !datatype.is_empty() {
        out.push_str("  classDef datatype stroke-width:4px\n");
        let _ = writeln!(out, "  class {} datatype", datatype.join(","));
    }
    let undeclared: Vec<&str> = graph
        .nodes
        .iter()
        .filter(|n| n.shape == Shape::Undeclared)
        .map(|n| n.id.as_str())
        .collect();
    if !undeclared.is_empty() {
        out.push_str("  classDef undeclared stroke:#c00,stroke-dasharray:5 3\n");
        let _ = writeln!(out, "  class {} undeclared", undeclared.join(","));
    }
    for i in dashed {
        let _ = writeln!(out, "  linkStyle {i} stroke-dasharray:8 4");
    }
    out
}

/// `s` for the inside of a Mermaid `"..."` label: letters, digits, spaces and punctuation
/// Mermaid leaves alone are kept, everything else becomes an entity code (`#34;` for `"`), so
/// no name can end the label, start a comment, or be read as HTML, Markdown or math.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut previous = None;
    while let Some(c) = chars.next() {
        // `$$` opens math; a lone `$` (a JSONPath root) stays readable.
        let math = c == '$' && (previous == Some('$') || chars.peek() == Some(&'$'));
        previous = Some(c);
        if c.is_control() {
            out.push(' ');
        } else if (c.is_alphanumeric() || " .,:-_/+=*!?@^'()[]{}~".contains(c))
            || (c == '$' && !math)
        {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", u32::from(c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn quotes_html_and_entity_starts_become_entity_codes() {
        assert_eq!(
            escape(r#"a"b<c>&d#e|f%g`h\i;"#),
            "a#34;b#60;c#62;#38;d#35;e#124;f#37;g#96;h#92;i#59;"
        );
    }

    #[test]
    fn a_dollar_is_kept_unless_it_could_open_math() {
        assert_eq!(escape("$.a + $$x$$ $"), "$.a + #36;#36;x#36;#36; $");
    }

    #[test]
    fn unicode_letters_are_kept() {
        assert_eq!(escape("zürich.Ω"), "zürich.Ω");
    }
}
