//! Vertical positions: the boxes of a column stacked in their order with a minimum spacing,
//! then moved a few times towards the height of their neighbours in the columns either side.

/// Vertical space between two boxes of a column.
pub(super) const V_SEP: f64 = 24.0;
/// Vertical space between two edges passing through a column.
const DUMMY_SEP: f64 = 10.0;
/// Passes moving boxes towards their neighbours' height.
const ALIGN_ROUNDS: usize = 4;

/// The vertical centre of every virtual node: stacked in column order, then moved towards
/// the mean height of its neighbours a few times, spacing kept.
pub(super) fn vertical_positions(
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
