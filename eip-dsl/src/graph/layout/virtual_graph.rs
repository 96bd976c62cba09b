//! The virtual graph: the real nodes, then a dummy node in each column an edge crosses, so
//! that a long edge is routed around the boxes of those columns instead of through them.

use super::EdgeIn;

/// The graph the ordering and the vertical positions work on. Virtual node `v` is the real
/// node `v` when `v` is less than the number of nodes, otherwise a dummy.
pub(super) struct VirtualGraph {
    /// The column of every virtual node.
    pub layer: Vec<usize>,
    /// Per edge, the virtual nodes it passes, from its left end to its right end (a reversed
    /// edge from its destination); empty for an edge that is not a link between two nodes.
    pub chains: Vec<Vec<usize>>,
    /// Per virtual node, its neighbours in the column before.
    pub up: Vec<Vec<usize>>,
    /// Per virtual node, its neighbours in the column after.
    pub down: Vec<Vec<usize>>,
    /// How many columns there are.
    pub columns: usize,
}

impl VirtualGraph {
    /// The virtual graph of `edges` between nodes in columns `layer`, the edges marked in
    /// `back` laid out reversed.
    pub(super) fn new(
        layer: &[usize],
        edges: &[EdgeIn],
        back: &[bool],
        is_link: &impl Fn(&EdgeIn) -> bool,
    ) -> VirtualGraph {
        let mut v_layer = layer.to_vec();
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
        VirtualGraph {
            layer: v_layer,
            chains,
            up,
            down,
            columns,
        }
    }

    /// How many virtual nodes there are, real and dummy.
    pub(super) fn total(&self) -> usize {
        self.layer.len()
    }
}

/// The segment of `chain` (from its `k`-th virtual node to the next) that carries the edge's
/// label: the middle one.
pub(super) fn label_segment(chain: &[usize]) -> usize {
    chain.len().saturating_sub(2) / 2
}
