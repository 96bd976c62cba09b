//! The order of the nodes within each column: a first order following the edges, then
//! barycenter sweeps against edge crossings.

/// Barycenter sweeps (down and up count one each).
const SWEEPS: usize = 8;

/// Reorders each column by barycenter sweeps, keeping the order with the fewest crossings.
pub(super) fn minimise_crossings(
    mut order: Vec<Vec<usize>>,
    up: &[Vec<usize>],
    down: &[Vec<usize>],
) -> Vec<Vec<usize>> {
    let mut pos = vec![0usize; up.len()];
    let index = |order: &[Vec<usize>], pos: &mut [usize]| {
        for column in order {
            for (i, &v) in column.iter().enumerate() {
                pos[v] = i;
            }
        }
    };
    index(&order, &mut pos);
    let mut best = order.clone();
    let mut best_crossings = crossings(&order, down, &pos);
    let mut bary = vec![0.0f64; up.len()];
    for sweep in 0..SWEEPS {
        if best_crossings == 0 {
            break;
        }
        let downward = sweep % 2 == 0;
        let columns: Vec<usize> = if downward {
            (1..order.len()).collect()
        } else {
            (0..order.len().saturating_sub(1)).rev().collect()
        };
        for l in columns {
            let neighbours = if downward { up } else { down };
            for &v in &order[l] {
                let ns = &neighbours[v];
                bary[v] = if ns.is_empty() {
                    pos[v] as f64
                } else {
                    ns.iter().map(|&u| pos[u] as f64).sum::<f64>() / ns.len() as f64
                };
            }
            order[l].sort_by(|&a, &b| bary[a].total_cmp(&bary[b]).then(pos[a].cmp(&pos[b])));
            for (i, &v) in order[l].iter().enumerate() {
                pos[v] = i;
            }
        }
        let c = crossings(&order, down, &pos);
        if c < best_crossings {
            best_crossings = c;
            best = order.clone();
        }
    }
    best
}

/// Edge crossings between adjacent columns, counted as inversions with a Fenwick tree.
fn crossings(order: &[Vec<usize>], down: &[Vec<usize>], pos: &[usize]) -> u64 {
    let mut total = 0u64;
    for pair in order.windows(2) {
        let size = pair[1].len();
        let mut ends: Vec<(usize, usize)> = pair[0]
            .iter()
            .flat_map(|&u| down[u].iter().map(move |&v| (pos[u], pos[v])))
            .filter(|&(_, b)| b < size)
            .collect();
        ends.sort_unstable();
        let mut tree = vec![0u64; size + 1];
        for (seen, &(_, b)) in ends.iter().enumerate() {
            // Earlier edges ending at or above `b` do not cross this one.
            let mut at_most = 0;
            let mut i = b + 1;
            while i > 0 {
                at_most += tree[i];
                i &= i - 1;
            }
            total += seen as u64 - at_most;
            let mut i = b + 1;
            while i <= size {
                tree[i] += 1;
                i += i & i.wrapping_neg();
            }
        }
    }
    total
}

/// The first order of each column: the nodes reached from the column before, in the order of
/// its nodes and their edges (so a router's clauses start out top to bottom as declared), then
/// the rest in index order.
pub(super) fn initial_order(
    v_layer: &[usize],
    columns: usize,
    down: &[Vec<usize>],
) -> Vec<Vec<usize>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossings_are_counted() {
        // 0 -> 3 and 1 -> 2 with 2 above 3: one crossing.
        let order = vec![vec![0, 1], vec![2, 3]];
        let down = vec![vec![3], vec![2], vec![], vec![]];
        let pos = vec![0, 1, 0, 1];
        assert_eq!(crossings(&order, &down, &pos), 1);
    }

    #[test]
    fn sweeps_keep_an_order_without_crossings() {
        // 0 -> 3 and 1 -> 2: swapping 2 and 3 removes the crossing.
        let order = vec![vec![0, 1], vec![2, 3]];
        let up = vec![vec![], vec![], vec![1], vec![0]];
        let down = vec![vec![3], vec![2], vec![], vec![]];
        let best = minimise_crossings(order, &up, &down);
        assert_eq!(best, vec![vec![0, 1], vec![3, 2]]);
    }
}
