//! A layered layout, left to right, in the manner of Sugiyama et al., kept simple.
//!
//! 1. **Cycles.** A depth-first search from the sources marks the edges that close a cycle
//!    (a join back to an earlier channel); they are laid out reversed and drawn the right way
//!    round at the end.
//! 2. **Layers.** Each node goes one column right of its furthest predecessor (longest path
//!    from the sources), then each source moves right to just before its nearest successor.
//!    An edge spanning several columns gets a dummy node in each column it crosses, so it is
//!    routed around the boxes there instead of through them.
//! 3. **Order.** Alternating downward and upward sweeps sort each column by the mean position
//!    of a node's neighbours in the column before (barycenter heuristic); the order with the
//!    fewest crossings seen is kept.
//! 4. **Coordinates.** Columns are as wide as their widest box and separated by a gap wide
//!    enough for the widest edge label placed in it. Within a column boxes keep their order and
//!    a minimum spacing, and a few passes move each towards its neighbours' height.
//!
//! Every step is a plain loop over indices in a fixed order, so the same input always gives
//! the same layout, and nothing recurses, so a large flow can not overflow the stack. Boxes
//! never overlap: columns are disjoint, and within a column the spacing is enforced.
//!
//! The phases live in their own modules: `rank` (cycles and layers), `virtual_graph` (the
//! dummy chains), `order`, `loops` (self-loops), `vertical` and `columns` (coordinates) and
//! `routes` (parallel edges, labels and polylines); `layout` runs them in turn.

mod columns;
mod loops;
mod order;
mod rank;
mod routes;
mod vertical;
mod virtual_graph;

use columns::Columns;
use loops::SelfLoops;
use order::{initial_order, minimise_crossings};
use rank::{back_edges, layers};
use routes::{Placed, parallel_offsets, place_labels};
use vertical::vertical_positions;
use virtual_graph::VirtualGraph;

/// A box, by its top-left corner and size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// Where an edge is drawn.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Route {
    /// The polyline from the source's box to the destination's box (empty for an edge whose
    /// ends are not nodes).
    pub points: Vec<(f64, f64)>,
    /// The centre of the edge's label, when it has one.
    pub label: Option<(f64, f64)>,
}

/// A laid-out graph: a box per node and a route per edge, indexed as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    pub nodes: Vec<Rect>,
    pub edges: Vec<Route>,
}

/// An edge to lay out: its ends and the size of its label, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EdgeIn {
    pub from: usize,
    pub to: usize,
    pub label: Option<(f64, f64)>,
}

/// Lays out nodes of the given sizes `(width, height)` joined by `edges`.
pub(crate) fn layout(sizes: &[(f64, f64)], edges: &[EdgeIn]) -> Layout {
    let n = sizes.len();
    let is_link = |e: &EdgeIn| e.from < n && e.to < n && e.from != e.to;
    let back = back_edges(n, edges, &is_link);
    let layer = layers(n, edges, &back, &is_link);
    let graph = VirtualGraph::new(&layer, edges, &back, &is_link);
    let first = initial_order(&graph.layer, graph.columns, &graph.down);
    let order = minimise_crossings(first, &graph.up, &graph.down);
    let loops = SelfLoops::new(n, graph.total(), edges);

    let heights: Vec<f64> = (0..graph.total())
        .map(|v| sizes.get(v).map_or(0.0, |s| s.1) + loops.reserve[v])
        .collect();
    let centre = vertical_positions(&order, &heights, n, &loops.reserve, &graph.up, &graph.down);
    // Where an edge leaves or enters a virtual node: the middle of its box, below its loops.
    let port: Vec<f64> = (0..graph.total())
        .map(|v| centre[v] + loops.reserve[v] / 2.0)
        .collect();

    let columns = Columns::new(sizes, &layer, &loops.width, edges, &graph);
    let boxes = columns.boxes(sizes, &layer, &centre, &heights, &loops.reserve);
    let offset = parallel_offsets(&graph.chains);
    let label_at = place_labels(edges, &graph, &columns, &port, &offset);

    let placed = Placed {
        graph: &graph,
        columns: &columns,
        boxes: &boxes,
        port: &port,
    };
    let routes = edges
        .iter()
        .zip(&graph.chains)
        .enumerate()
        .map(|(i, (e, chain))| {
            if e.from < n && e.from == e.to {
                loops.route(i, edges, &boxes)
            } else if chain.len() < 2 {
                Route::default()
            } else {
                placed.route(chain, label_at[i], offset[i], back[i])
            }
        })
        .collect();

    let mut out = Layout {
        nodes: boxes,
        edges: routes,
    };
    normalise(&mut out);
    out
}

/// Moves everything so the top-left of what is drawn is at the origin.
fn normalise(layout: &mut Layout) {
    let xs = layout
        .nodes
        .iter()
        .map(|r| (r.x, r.y))
        .chain(layout.edges.iter().flat_map(|e| e.points.iter().copied()));
    let (mut min_x, mut min_y) = (f64::INFINITY, f64::INFINITY);
    for (x, y) in xs {
        min_x = min_x.min(x);
        min_y = min_y.min(y);
    }
    if !min_x.is_finite() || !min_y.is_finite() {
        return;
    }
    for r in &mut layout.nodes {
        r.x -= min_x;
        r.y -= min_y;
    }
    for e in &mut layout.edges {
        for p in &mut e.points {
            p.0 -= min_x;
            p.1 -= min_y;
        }
        if let Some(l) = e.label.as_mut() {
            l.0 -= min_x;
            l.1 -= min_y;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::vertical::V_SEP;
    use super::*;

    /// An unlabelled edge, for the layout's tests (the ranking's too).
    pub(super) fn edge(from: usize, to: usize) -> EdgeIn {
        EdgeIn {
            from,
            to,
            label: None,
        }
    }

    #[test]
    fn a_chain_goes_one_column_per_node() {
        let l = layout(&[(40.0, 20.0); 3], &[edge(0, 1), edge(1, 2)]);
        assert!(l.nodes[0].x < l.nodes[1].x && l.nodes[1].x < l.nodes[2].x);
    }

    #[test]
    fn a_cycle_is_laid_out_with_one_edge_reversed() {
        let edges = [edge(0, 1), edge(1, 0)];
        let l = layout(&[(40.0, 20.0); 2], &edges);
        assert!(l.nodes[0].x < l.nodes[1].x);
        // The reversed edge still ends at node 0, on its right side.
        let last = l.edges[1].points.last().copied().unwrap_or_default();
        assert_eq!(last.0, l.nodes[0].x + l.nodes[0].w);
    }

    #[test]
    fn sweeps_remove_a_crossing() {
        let edges = [edge(0, 3), edge(1, 2)];
        let l = layout(&[(40.0, 20.0); 4], &edges);
        let (a, b) = (l.nodes[3].y < l.nodes[2].y, l.nodes[0].y < l.nodes[1].y);
        assert_eq!(a, b, "the edges should not cross");
    }

    #[test]
    fn a_long_edge_bends_around_the_column_it_crosses() {
        let l = layout(&[(40.0, 20.0); 3], &[edge(0, 1), edge(1, 2), edge(0, 2)]);
        let route = &l.edges[2].points;
        assert!(route.len() > 2, "{route:?}");
    }

    #[test]
    fn a_node_without_edges_stays_next_to_its_column() {
        // Node 0 has no edge and shares the first column with three sources of node 4.
        let sizes = [(40.0, 20.0); 5];
        let l = layout(&sizes, &[edge(1, 4), edge(2, 4), edge(3, 4)]);
        let below = (1..4).map(|v| l.nodes[v].y).fold(f64::INFINITY, f64::min);
        let gap = below - (l.nodes[0].y + l.nodes[0].h);
        assert!((0.0..=V_SEP).contains(&gap), "{gap} {:?}", l.nodes);
    }

    #[test]
    fn edges_to_missing_nodes_are_left_out() {
        let l = layout(&[(40.0, 20.0)], &[edge(0, 7)]);
        assert!(l.edges[0].points.is_empty());
    }
}
