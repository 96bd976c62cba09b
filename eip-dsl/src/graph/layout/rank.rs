//! Columns: which edges close a cycle, and how far right each node goes.

use super::EdgeIn;

/// Marks the edges a depth-first search finds closing a cycle. Sources are searched first, so
/// the edges reversed are the ones going back towards where the flow starts.
pub(super) fn back_edges(
    n: usize,
    edges: &[EdgeIn],
    is_link: &impl Fn(&EdgeIn) -> bool,
) -> Vec<bool> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut has_in = vec![false; n];
    for (i, e) in edges.iter().enumerate() {
        if is_link(e) {
            out[e.from].push(i);
            has_in[e.to] = true;
        }
    }
    const NEW: u8 = 0;
    const ACTIVE: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; n];
    let mut back = vec![false; edges.len()];
    let roots = (0..n).filter(|&v| !has_in[v]).chain(0..n);
    for root in roots {
        if state[root] != NEW {
            continue;
        }
        state[root] = ACTIVE;
        let mut stack = vec![(root, 0usize)];
        while let Some((v, next)) = stack.last_mut() {
            let v = *v;
            if let Some(&i) = out[v].get(*next) {
                *next += 1;
                let w = edges[i].to;
                match state[w] {
                    NEW => {
                        state[w] = ACTIVE;
                        stack.push((w, 0));
                    }
                    ACTIVE => back[i] = true,
                    _ => {}
                }
            } else {
                state[v] = DONE;
                stack.pop();
            }
        }
    }
    back
}

/// The column of each node: the longest path to it from a source, back edges reversed; then
/// each source moves right to just before its nearest successor, so a channel feeding only the
/// end of a flow is drawn there rather than at the far left with one long edge.
pub(super) fn layers(
    n: usize,
    edges: &[EdgeIn],
    back: &[bool],
    is_link: &impl Fn(&EdgeIn) -> bool,
) -> Vec<usize> {
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    for (i, e) in edges.iter().enumerate() {
        if is_link(e) {
            let (a, b) = if back[i] {
                (e.to, e.from)
            } else {
                (e.from, e.to)
            };
            succ[a].push(b);
            indegree[b] += 1;
        }
    }
    let sources: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut layer = vec![0usize; n];
    let mut ready: std::collections::VecDeque<usize> =
        (0..n).filter(|&v| indegree[v] == 0).collect();
    while let Some(v) = ready.pop_front() {
        for &w in &succ[v] {
            layer[w] = layer[w].max(layer[v] + 1);
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push_back(w);
            }
        }
    }
    for v in sources {
        if let Some(nearest) = succ[v].iter().map(|&w| layer[w]).min() {
            layer[v] = nearest.saturating_sub(1);
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::super::tests::edge;
    use super::*;

    fn link(e: &EdgeIn) -> bool {
        e.from != e.to
    }

    #[test]
    fn the_edge_closing_a_cycle_is_the_one_reversed() {
        let edges = [edge(0, 1), edge(1, 2), edge(2, 0)];
        assert_eq!(back_edges(3, &edges, &link), vec![false, false, true]);
    }

    #[test]
    fn the_search_starts_from_sources() {
        // 2 is the only source: the cycle 0 <-> 1 is entered at 0, so 1 -> 0 is the back edge.
        let edges = [edge(1, 0), edge(0, 1), edge(2, 0)];
        assert_eq!(back_edges(3, &edges, &link), vec![true, false, false]);
    }

    #[test]
    fn a_node_goes_right_of_its_furthest_predecessor() {
        let edges = [edge(0, 1), edge(1, 2), edge(0, 2)];
        let back = back_edges(3, &edges, &link);
        assert_eq!(layers(3, &edges, &back, &link), vec![0, 1, 2]);
    }

    #[test]
    fn a_source_sits_just_before_its_nearest_successor() {
        // 3 feeds only 2, the end of the chain 0 -> 1 -> 2.
        let edges = [edge(0, 1), edge(1, 2), edge(3, 2)];
        let back = back_edges(4, &edges, &link);
        assert_eq!(layers(4, &edges, &back, &link), vec![0, 1, 2, 1]);
    }
}
