//! Self-loops: an edge from a node back to itself sits above its box, each loop higher than
//! the last, its label on top. The room they take is reserved above the box.

use super::{EdgeIn, Rect, Route};

/// The height of a self-loop above its box.
const LOOP_H: f64 = 22.0;

/// The self-loops of every node and the room they take.
pub(super) struct SelfLoops {
    /// Per real node, the indices of its self-loops, in edge order.
    pub of: Vec<Vec<usize>>,
    /// Per virtual node, the height reserved above its box for its loops and their labels.
    pub reserve: Vec<f64>,
    /// Per real node, the width of its widest loop label.
    pub width: Vec<f64>,
}

impl SelfLoops {
    /// The self-loops among `edges` of `n` real nodes, with room reserved for `total` virtual
    /// nodes.
    pub(super) fn new(n: usize, total: usize, edges: &[EdgeIn]) -> SelfLoops {
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
        SelfLoops {
            of: loops,
            reserve,
            width: loop_width,
        }
    }

    /// The route of the self-loop `edges[i]` over `boxes`.
    pub(super) fn route(&self, i: usize, edges: &[EdgeIn], boxes: &[Rect]) -> Route {
        let e = &edges[i];
        let loops = &self.of[e.from];
        let k = loops.iter().position(|&j| j == i).unwrap_or(0);
        self_loop(boxes[e.from], loop_height(k, loops, edges), e)
    }
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

/// A loop `height` above box `b`, leaving and entering its top side.
fn self_loop(b: Rect, height: f64, e: &EdgeIn) -> Route {
    let top = b.y - height;
    let (x1, x2) = (b.x + b.w * 0.65, b.x + b.w * 0.35);
    Route {
        points: vec![(x1, b.y), (x1, top), (x2, top), (x2, b.y)],
        label: e.label.map(|(_, h)| (b.x + b.w / 2.0, top - h / 2.0 - 2.0)),
    }
}
