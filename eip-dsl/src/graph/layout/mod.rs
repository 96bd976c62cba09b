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

mod order;
mod rank;

use order::minimise_crossings;
use rank::{back_edges, layers};

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

/// The narrowest gap between two columns.
const MIN_GAP: f64 = 56.0;
/// Room left and right of an edge label in its gap.
const LABEL_PAD: f64 = 16.0;
/// Vertical space between two boxes of a column.
const V_SEP: f64 = 24.0;
/// Vertical space between two edges passing through a column.
const DUMMY_SEP: f64 = 10.0;
/// How far apart edges between the same two boxes are drawn.
const PARALLEL: f64 = 18.0;
/// The height of a self-loop above its box.
const LOOP_H: f64 = 22.0;
/// Passes moving boxes towards their neighbours' height.
const ALIGN_ROUNDS: usize = 4;

/// Lays out nodes of the given sizes `(width, height)` joined by `edges`.
pub(crate) fn layout(sizes: &[(f64, f64)], edges: &[EdgeIn]) -> Layout {
    let n = sizes.len();
    let is_link = |e: &EdgeIn| e.from < n && e.to < n && e.from != e.to;
    let back = back_edges(n, edges, &is_link);
    let layer = layers(n, edges, &back, &is_link);

    // The virtual graph: real nodes, then one dummy per column an edge crosses.
    let mut v_layer = layer.clone();
    let mut chains: Vec<Vec<usize>> = Vec::with_capacity(edges.len());
    for (i, e) in edges.iter().enumerate() {
        if !is_link(e) {
            chains.push(Vec::new());
            continue;
        }
        let (l, r) = if back[i] {
            (e.to, e.from)
        } else {
            (e.from, e.to)
        };
        let mut chain = vec![l];
        for k in layer[l] + 1..layer[r] {
            chain.push(v_layer.len());
            v_layer.push(k);
        }
        chain.push(r);
        chains.push(chain);
    }
    let total = v_layer.len();
    let mut up = vec![Vec::new(); total];
    let mut down = vec![Vec::new(); total];
    for chain in &chains {
        for pair in chain.windows(2) {
            if v_layer[pair[0]] + 1 == v_layer[pair[1]] {
                down[pair[0]].push(pair[1]);
                up[pair[1]].push(pair[0]);
            }
        }
    }
    let columns = v_layer.iter().map(|l| l + 1).max().unwrap_or(0);
    let order = minimise_crossings(initial_order(&v_layer, columns, &down), &up, &down);

    // Self-loops sit above their box, each higher than the last, label on top.
    let mut loops: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in edges.iter().enumerate() {
        if e.from < n && e.from == e.to {
            loops[e.from].push(i);
        }
    }
    let mut reserve = vec![0.0; total];
    let mut loop_width = vec![0.0f64; n];
    for (v, ls) in loops.iter().enumerate() {
        for (k, &i) in ls.iter().enumerate() {
            let (lw, lh) = edges[i].label.unwrap_or((0.0, 0.0));
            reserve[v] = loop_height(k, &loops[v], edges) + lh + 4.0;
            loop_width[v] = loop_width[v].max(lw);
        }
    }

    let heights: Vec<f64> = (0..total)
        .map(|v| sizes.get(v).map_or(0.0, |s| s.1) + reserve[v])
        .collect();
    let centre = vertical_positions(&order, &heights, n, &reserve, &up, &down);
    let port = |v: usize| centre[v] + reserve[v] / 2.0;

    // Columns and gaps.
    let mut col_w = vec![0.0f64; columns];
    for v in 0..n {
        col_w[layer[v]] = col_w[layer[v]].max(sizes[v].0).max(loop_width[v]);
    }
    let mut gap_w = vec![MIN_GAP; columns];
    let label_segment = |chain: &[usize]| chain.len().saturating_sub(2) / 2;
    for (e, chain) in edges.iter().zip(&chains) {
        if let (Some((lw, _)), Some(&a), true) =
            (e.label, chain.get(label_segment(chain)), chain.len() >= 2)
        {
            let g = v_layer[a];
            gap_w[g] = gap_w[g].max(lw + 2.0 * LABEL_PAD);
        }
    }
    let mut col_x = vec![0.0; columns];
    for l in 1..columns {
        col_x[l] = col_x[l - 1] + col_w[l - 1] + gap_w[l - 1];
    }
    let boxes: Vec<Rect> = (0..n)
        .map(|v| {
            let (w, h) = sizes[v];
            let l = layer[v];
            Rect {
                x: col_x[l] + (col_w[l] - w) / 2.0,
                y: centre[v] - heights[v] / 2.0 + reserve[v],
                w,
                h,
            }
        })
        .collect();

    // Edges between the same two boxes, side by side.
    let mut offset = vec![0.0; edges.len()];
    let mut pairs: Vec<((usize, usize), usize)> = chains
        .iter()
        .enumerate()
        .filter(|(_, c)| c.len() == 2)
        .map(|(i, c)| ((c[0], c[1]), i))
        .collect();
    pairs.sort();
    for group in pairs.chunk_by(|a, b| a.0 == b.0) {
        let mid = (group.len() as f64 - 1.0) / 2.0;
        for (k, &(_, i)) in group.iter().enumerate() {
            offset[i] = (k as f64 - mid) * PARALLEL;
        }
    }

    // Labels: at the middle of their gap, moved apart where two in one gap would overlap.
    let mut label_at: Vec<Option<(f64, f64)>> = vec![None; edges.len()];
    let mut in_gap: Vec<(usize, f64, usize)> = Vec::new();
    for (i, (e, chain)) in edges.iter().zip(&chains).enumerate() {
        let s = label_segment(chain);
        if let (Some(_), Some(&a), Some(&b)) = (e.label, chain.get(s), chain.get(s + 1)) {
            let g = v_layer[a];
            let y = (port(a) + port(b)) / 2.0 + offset[i];
            label_at[i] = Some((col_x[g] + col_w[g] + gap_w[g] / 2.0, y));
            in_gap.push((g, y, i));
        }
    }
    in_gap.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    for run in in_gap.chunk_by(|a, b| a.0 == b.0) {
        let mut floor = f64::NEG_INFINITY;
        for &(_, _, i) in run {
            let h = edges[i].label.map_or(0.0, |l| l.1);
            if let Some((_, y)) = label_at[i].as_mut() {
                *y = y.max(floor + h / 2.0 + 2.0);
                floor = *y + h / 2.0;
            }
        }
    }

    let mut routes = Vec::with_capacity(edges.len());
    for (i, (e, chain)) in edges.iter().zip(&chains).enumerate() {
        if e.from < n && e.from == e.to {
            let k = loops[e.from].iter().position(|&j| j == i).unwrap_or(0);
            routes.push(self_loop(
                boxes[e.from],
                loop_height(k, &loops[e.from], edges),
                e,
            ));
            continue;
        }
        if chain.len() < 2 {
            routes.push(Route::default());
            continue;
        }
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut push = |p: (f64, f64)| {
            if points.last() != Some(&p) {
                points.push(p);
            }
        };
        let right = |v: usize| col_x[v_layer[v]] + col_w[v_layer[v]];
        let left = |v: usize| col_x[v_layer[v]];
        let first = boxes[chain[0]];
        push((first.x + first.w, port(chain[0])));
        for s in 0..chain.len() - 1 {
            let (a, b) = (chain[s], chain[s + 1]);
            let exit = (right(a), port(a));
            let entry = (left(b), port(b));
            push(exit);
            if let Some(at) = label_at[i].filter(|_| s == label_segment(chain)) {
                push(at);
            } else if offset[i] != 0.0 {
                push((
                    (exit.0 + entry.0) / 2.0,
                    (exit.1 + entry.1) / 2.0 + offset[i],
                ));
            }
            push(entry);
            if b < n {
                push((boxes[b].x, port(b)));
            } else {
                push((right(b), port(b)));
            }
        }
        if back[i] {
            points.reverse();
        }
        routes.push(Route {
            points,
            label: label_at[i],
        });
    }

    let mut out = Layout {
        nodes: boxes,
        edges: routes,
    };
    normalise(&mut out);
    out
}

/// The first order of each column: the nodes reached from the column before, in the order of
/// its nodes and their edges (so a router's clauses start out top to bottom as declared), then
/// the rest in index order.
fn initial_order(v_layer: &[usize], columns: usize, down: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); columns];
    let mut placed = vec![false; v_layer.len()];
    for (v, &l) in v_layer.iter().enumerate() {
        if l == 0 {
            order[0].push(v);
            placed[v] = true;
        }
    }
    for l in 1..columns {
        let (before, rest) = order.split_at_mut(l);
        for &u in &before[l - 1] {
            for &w in &down[u] {
                if !placed[w] {
                    placed[w] = true;
                    rest[0].push(w);
                }
            }
        }
        for (v, &lv) in v_layer.iter().enumerate() {
            if lv == l && !placed[v] {
                placed[v] = true;
                rest[0].push(v);
            }
        }
    }
    order
}

/// The height above its box of a node's `k`-th self-loop.
fn loop_height(k: usize, loops: &[usize], edges: &[EdgeIn]) -> f64 {
    let below: f64 = loops
        .iter()
        .take(k)
        .map(|&i| edges[i].label.map_or(0.0, |l| l.1) + 8.0)
        .sum();
    LOOP_H + below
}

fn self_loop(b: Rect, height: f64, e: &EdgeIn) -> Route {
    let top = b.y - height;
    let (x1, x2) = (b.x + b.w * 0.65, b.x + b.w * 0.35);
    Route {
        points: vec![(x1, b.y), (x1, top), (x2, top), (x2, b.y)],
        label: e.label.map(|(_, h)| (b.x + b.w / 2.0, top - h / 2.0 - 2.0)),
    }
}

/// The vertical centre of every virtual node: stacked in column order, then moved towards
/// the mean height of its neighbours a few times, spacing kept.
fn vertical_positions(
    order: &[Vec<usize>],
    heights: &[f64],
    real: usize,
    reserve: &[f64],
    up: &[Vec<usize>],
    down: &[Vec<usize>],
) -> Vec<f64> {
    let sep = |a: usize, b: usize| {
        let gap = if a >= real && b >= real {
            DUMMY_SEP
        } else {
            V_SEP
        };
        (heights[a] + heights[b]) / 2.0 + gap
    };
    let mut centre = vec![0.0; heights.len()];
    for column in order {
        let mut y = 0.0;
        for (i, &v) in column.iter().enumerate() {
            if i > 0 {
                y += sep(column[i - 1], v);
            }
            centre[v] = y;
        }
    }
    let mut desired = vec![0.0; heights.len()];
    for _ in 0..ALIGN_ROUNDS {
        let columns = order.len();
        let passes = (1..columns)
            .map(|l| (l, true))
            .chain((0..columns.saturating_sub(1)).rev().map(|l| (l, false)));
        for (l, downward) in passes {
            let column = &order[l];
            for &v in column {
                let ns = if downward { &up[v] } else { &down[v] };
                desired[v] = if ns.is_empty() {
                    centre[v]
                } else {
                    let mean = ns
                        .iter()
                        .map(|&u| centre[u] + reserve[u] / 2.0)
                        .sum::<f64>()
                        / ns.len() as f64;
                    mean - reserve[v] / 2.0
                };
            }
            let mut shift = 0.0;
            for (i, &v) in column.iter().enumerate() {
                centre[v] = if i == 0 {
                    desired[v]
                } else {
                    desired[v].max(centre[column[i - 1]] + sep(column[i - 1], v))
                };
                shift += desired[v] - centre[v];
            }
            if !column.is_empty() {
                let shift = shift / column.len() as f64;
                for &v in column {
                    centre[v] += shift;
                }
            }
        }
    }
    pack_unlinked(order, &mut centre, &sep, up, down);
    centre
}

/// Moves the nodes of a column that have no edge (a channel nothing uses), above its first or
/// below its last linked node, next to it. The alignment passes leave them where the column's
/// shifts carry them, which can be far from everything else.
fn pack_unlinked(
    order: &[Vec<usize>],
    centre: &mut [f64],
    sep: &impl Fn(usize, usize) -> f64,
    up: &[Vec<usize>],
    down: &[Vec<usize>],
) {
    let linked = |v: usize| !up[v].is_empty() || !down[v].is_empty();
    for column in order {
        let (Some(first), Some(last)) = (
            column.iter().position(|&v| linked(v)),
            column.iter().rposition(|&v| linked(v)),
        ) else {
            continue;
        };
        for i in (0..first).rev() {
            centre[column[i]] = centre[column[i + 1]] - sep(column[i], column[i + 1]);
        }
        for i in last + 1..column.len() {
            centre[column[i]] = centre[column[i - 1]] + sep(column[i - 1], column[i]);
        }
    }
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
