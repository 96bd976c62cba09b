//! Drawing a flow: a checked [`Plan`] as Graphviz DOT, a Mermaid flowchart, or an SVG laid out
//! here without Graphviz.
//!
//! All three formats draw the same picture. Channels are boxes (point-to-point square,
//! publish-subscribe rounded, a datatype channel with a double border and its schema on a second
//! line, a durable channel with `durable` on its second line), exchanges hexagons, channel adapters
//! where messages enter or leave the flow parallelograms (cylinders for `sql-in` and `sql-out`)
//! with their kind and endpoint on a second line (`http-in · POST http://127.0.0.1:8080/orders`, a
//! database's password hidden) and an edge into the channel an inbound adapter feeds or out of the
//! one an outbound adapter consumes, and each route a diamond named after it, with an edge in from
//! the channel it consumes (labelled `filter …` when it has a filter) and edges out labelled
//! `when …`, `otherwise`, `recipients`, `discard` or `wire tap`. Joins are edges labelled `join hops=N`
//! (dashed and marked `archival` for an archival join, with their filter), bindings are edges from
//! the exchange labelled with their key (`(all)` for a binding without one), and `alternate`,
//! `invalid` and `dead letters` edges show where the rest goes; the latter two dotted. The default
//! dead letter channel every channel has is not drawn as an edge from each. Output is
//! deterministic: the same plan always gives the same bytes, and node ids are derived from the
//! order and names in the plan, with a letter for the kind of node (`c` channel, `x` exchange, `r`
//! route, `a` adapter), so an adapter named like a channel can not take its id. Every name is
//! escaped for the format, so no name can break the output.
//!
//! ```
//! use eip_dsl::graph::{self, Format};
//! use eip_dsl::plan::{ChannelPlan, Plan};
//! use eip_dsl::core::channel::ChannelKind;
//!
//! let mut plan = Plan::default();
//! plan.channels.push(ChannelPlan {
//!     name: "orders".into(),
//!     kind: ChannelKind::PointToPoint,
//!     capacity: None,
//!     datatype: None,
//!     dead_letter: None,
//!     time_to_live: None,
//!     redelivery: None,
//!     overflow: None,
//!     durable: false,
//!     broker: None,
//! });
//! let format: Format = "dot".parse()?;
//! let dot = graph::render(&plan, format);
//! assert!(dot.contains(r#"c0_orders [label="orders", shape=box];"#));
//! assert!("png".parse::<Format>().is_err());
//! # Ok::<(), graph::UnknownFormat>(())
//! ```

mod dot;
mod layout;
mod mermaid;
mod model;
mod svg;

use std::fmt;
use std::str::FromStr;

use crate::plan::Plan;
use model::Graph;

/// An output format of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Graphviz DOT ([`dot`]).
    Dot,
    /// A Mermaid flowchart ([`mermaid`]).
    Mermaid,
    /// A standalone SVG document ([`svg`]).
    Svg,
}

impl Format {
    /// Every format, in the order listed in messages.
    pub const ALL: [Format; 3] = [Format::Dot, Format::Mermaid, Format::Svg];

    /// The name the format is parsed from: `dot`, `mermaid` or `svg`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Dot => "dot",
            Format::Mermaid => "mermaid",
            Format::Svg => "svg",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown graph format `{given}`: expected one of dot, mermaid, svg")]
pub struct UnknownFormat {
    /// The name given.
    pub given: String,
}

impl FromStr for Format {
    type Err = UnknownFormat;

    /// Parses `dot`, `mermaid` or `svg`, in any case.
    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat {
                given: s.to_owned(),
            })
    }
}

/// The plan drawn in `format`.
pub fn render(plan: &Plan, format: Format) -> String {
    match format {
        Format::Dot => dot(plan),
        Format::Mermaid => mermaid(plan),
        Format::Svg => svg(plan),
    }
}

/// The plan as a Graphviz DOT digraph, left to right (`dot -Tsvg` draws it).
pub fn dot(plan: &Plan) -> String {
    dot::write(&Graph::from_plan(plan))
}

/// The plan as a Mermaid flowchart, left to right.
pub fn mermaid(plan: &Plan) -> String {
    mermaid::write(&Graph::from_plan(plan))
}

/// The plan as a standalone SVG document, laid out in layers left to right.
pub fn svg(plan: &Plan) -> String {
    svg::write(&Graph::from_plan(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_parse_back() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string().to_uppercase().parse::<Format>(), Ok(f));
        }
    }

    #[test]
    fn an_unknown_format_names_itself_and_the_valid_ones() {
        let err = "png".parse::<Format>().unwrap_err();
        assert_eq!(err.given, "png");
        let message = err.to_string();
        assert!(message.contains("`png`"), "{message}");
        for f in Format::ALL {
            assert!(message.contains(f.name()), "{message}");
        }
    }
}
