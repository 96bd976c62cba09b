//! Columns and the gaps between them: a column is as wide as its widest box (or self-loop
//! label), a gap as wide as the widest edge label placed in it, and each box is centred in
//! its column.

use super::virtual_graph::{VirtualGraph, label_segment};
use super::{EdgeIn, Rect};

/// The narrowest gap between two columns.
const MIN_GAP: f64 = 56.0;
/// Room left and right of an edge label in its gap.
const LABEL_PAD: f64 = 16.0;

/// Where each column is, and the gap after it.
pub(super) struct Columns {
    /// The left side of each column.
    pub x: Vec<f64>,
    /// The width of each column.
    pub w: Vec<f64>,
    /// The width of the gap right of each column.
    pub gap: Vec<f64>,
}

impl Columns {
    /// The columns of nodes of `sizes` in columns `layer`, room made for self-loop labels
    /// (`loop_width`) and for the labels of `edges` laid along `graph`'s chains.
    pub(super) fn new(
        sizes: &[(f64, f64)],
        layer: &[usize],
        loop_width: &[f64],
        edges: &[EdgeIn],
        graph: &VirtualGraph,
    ) -> Columns {
        let columns = graph.columns;
        let mut col_w = vec![0.0f64; columns];
        for v in 0..sizes.len() {
            col_w[layer[v]] = col_w[layer[v]].max(sizes[v].0).max(loop_width[v]);
        }
        let mut gap_w = vec![MIN_GAP; columns];
        for (e, chain) in edges.iter().zip(&graph.chains) {
            if let (Some((lw, _)), Some(&a), true) =
                (e.label, chain.get(label_segment(chain)), chain.len() >= 2)
            {
                let g = graph.layer[a];
                gap_w[g] = gap_w[g].max(lw + 2.0 * LABEL_PAD);
            }
        }
        let mut col_x = vec![0.0; columns];
        for l in 1..columns {
            col_x[l] = col_x[l - 1] + col_w[l - 1] + gap_w[l - 1];
        }
        Columns {
            x: col_x,
            w: col_w,
            gap: gap_w,
        }
    }

    /// The box of every real node: centred in its column, its top below the room `reserve`d
    /// above it, around its vertical `centre` (of the box and its reserve, `heights` tall).
    pub(super) fn boxes(
        &self,
        sizes: &[(f64, f64)],
        layer: &[usize],
        centre: &[f64],
        heights: &[f64],
        reserve: &[f64],
    ) -> Vec<Rect> {
        (0..sizes.len())
            .map(|v| {
                let (w, h) = sizes[v];
                let l = layer[v];
                Rect {
                    x: self.x[l] + (self.w[l] - w) / 2.0,
                    y: centre[v] - heights[v] / 2.0 + reserve[v],
                    w,
                    h,
                }
            })
            .collect()
    }

    /// The left side of column `l`.
    pub(super) fn left(&self, l: usize) -> f64 {
        self.x[l]
    }

    /// The right side of column `l`.
    pub(super) fn right(&self, l: usize) -> f64 {
        self.x[l] + self.w[l]
    }

    /// The middle of the gap right of column `l`.
    pub(super) fn gap_middle(&self, l: usize) -> f64 {
        self.x[l] + self.w[l] + self.gap[l] / 2.0
    }
}
