//! Edge routes: edges between the same two boxes drawn side by side, labels in the middle of
//! their gap (moved apart where two in one gap would overlap), and the polyline of every edge
//! along its chain of virtual nodes.

use super::columns::Columns;
use super::virtual_graph::{VirtualGraph, label_segment};
use super::{EdgeIn, Rect, Route};

/// How far apart edges between the same two boxes are drawn.
const PARALLEL: f64 = 18.0;

/// Per edge (one per chain), how far from the straight line between its boxes it is drawn:
/// edges between the same two boxes are spread [`PARALLEL`] apart around it.
pub(super) fn parallel_offsets(chains: &[Vec<usize>]) -> Vec<f64> {
    let mut offset = vec![0.0; chains.len()];
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
    offset
}

/// Per edge, the centre of its label: in the middle of the gap its label segment crosses,
/// halfway between the `port`s of the segment's ends (plus the edge's `offset`), moved apart
/// where two in one gap would overlap.
pub(super) fn place_labels(
    edges: &[EdgeIn],
    graph: &VirtualGraph,
    columns: &Columns,
    port: &[f64],
    offset: &[f64],
) -> Vec<Option<(f64, f64)>> {
    let mut label_at: Vec<Option<(f64, f64)>> = vec![None; edges.len()];
    let mut in_gap: Vec<(usize, f64, usize)> = Vec::new();
    for (i, (e, chain)) in edges.iter().zip(&graph.chains).enumerate() {
        let s = label_segment(chain);
        if let (Some(_), Some(&a), Some(&b)) = (e.label, chain.get(s), chain.get(s + 1)) {
            let g = graph.layer[a];
            let y = (port[a] + port[b]) / 2.0 + offset[i];
            label_at[i] = Some((columns.gap_middle(g), y));
            in_gap.push((g, y, i));
        }
    }
    spread_labels(&mut label_at, in_gap, edges);
    label_at
}

/// Moves labels down where they would overlap the one above in the same gap; `in_gap` holds
/// each placed label's gap, height and edge.
fn spread_labels(
    label_at: &mut [Option<(f64, f64)>],
    mut in_gap: Vec<(usize, f64, usize)>,
    edges: &[EdgeIn],
) {
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
}

/// What an edge is routed through: the columns, the boxes of the real nodes and the height
/// at which an edge enters or leaves each virtual node (its port).
pub(super) struct Placed<'a> {
    pub graph: &'a VirtualGraph,
    pub columns: &'a Columns,
    pub boxes: &'a [Rect],
    pub port: &'a [f64],
}

impl Placed<'_> {
    /// The route of an edge along `chain` (two virtual nodes or more): from box to box through
    /// each column's port, through its `label` on the label segment or else bent `offset` off
    /// the straight line, and turned the right way round if it was laid out reversed (`back`).
    pub(super) fn route(
        &self,
        chain: &[usize],
        label: Option<(f64, f64)>,
        offset: f64,
        back: bool,
    ) -> Route {
        let n = self.boxes.len();
        let port = |v: usize| self.port[v];
        let right = |v: usize| self.columns.right(self.graph.layer[v]);
        let left = |v: usize| self.columns.left(self.graph.layer[v]);
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut push = |p: (f64, f64)| {
            if points.last() != Some(&p) {
                points.push(p);
            }
        };
        let first = self.boxes[chain[0]];
        push((first.x + first.w, port(chain[0])));
        for s in 0..chain.len() - 1 {
            let (a, b) = (chain[s], chain[s + 1]);
            let exit = (right(a), port(a));
            let entry = (left(b), port(b));
            push(exit);
            if let Some(at) = label.filter(|_| s == label_segment(chain)) {
                push(at);
            } else if offset != 0.0 {
                push(((exit.0 + entry.0) / 2.0, (exit.1 + entry.1) / 2.0 + offset));
            }
            push(entry);
            if b < n {
                push((self.boxes[b].x, port(b)));
            } else {
                push((right(b), port(b)));
            }
        }
        if back {
            points.reverse();
        }
        Route { points, label }
    }
}
