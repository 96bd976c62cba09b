//! Matching a subject against the trie: one walk, each (node, position) pair at most once.

use std::cell::RefCell;
use std::ops::Range;

use super::edges::{Edges, Meta, NONE, NodeId};
use super::node::Node;
use super::words::{UNKNOWN, WordId};

thread_local! {
    /// The memo of the searches on this thread: reused, so a search allocates nothing.
    pub(super) static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// For each `#` node, the lowest subject position it has been expanded from in the current
/// search. Slots from earlier searches carry an older generation and count as unset, so
/// starting a search costs nothing however many `#` nodes there are.
#[derive(Default)]
pub(super) struct Memo {
    generation: u32,
    /// (generation, lowest position expanded from); 8 bytes a slot, 8 to a cache line.
    slots: Vec<(u32, u32)>,
}

impl Memo {
    /// Starts a search over a trie with `hash_nodes` `#` nodes.
    pub(super) fn begin(&mut self, hash_nodes: usize) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.clear();
            self.generation = 1;
        }
        if self.slots.len() < hash_nodes {
            self.slots.resize(hash_nodes, (0, 0));
        }
    }

    /// The positions, out of `from..=last`, that `#` node `id` has not been expanded from yet;
    /// they count as expanded from now on.
    fn claim(&mut self, id: u32, from: usize, last: usize) -> Range<usize> {
        let (Some(slot), Ok(at)) = (self.slots.get_mut(id as usize), u32::try_from(from)) else {
            // Not sized for this node (can not happen), or a position past `u32::MAX` (a
            // subject given as words may be that long): without the memo a position may be
            // expanded twice, which repeats work but never loses a match.
            return from..last + 1;
        };
        if slot.0 != self.generation {
            *slot = (self.generation, at);
            return from..last + 1;
        }
        let expanded_from = slot.1 as usize;
        if from >= expanded_from {
            return from..from;
        }
        slot.1 = at;
        from..expanded_from
    }
}

/// One search: the trie's nodes and edges, the ids of the subject's words ([`UNKNOWN`] for a
/// word no pattern has), the memo, and what to do with a match.
pub(super) struct Search<'t, 'w, 'm, T, F> {
    nodes: &'t [Node<T>],
    edges: &'t Edges,
    words: &'w [WordId],
    memo: &'m mut Memo,
    emit: F,
    /// Nodes entered, for the tests that check a search stays bounded.
    #[cfg(test)]
    pub(super) visits: usize,
}

impl<'t, 'w, 'm, T, F> Search<'t, 'w, 'm, T, F>
where
    F: FnMut(&'t T),
{
    pub(super) fn new(
        nodes: &'t [Node<T>],
        edges: &'t Edges,
        words: &'w [WordId],
        memo: &'m mut Memo,
        emit: F,
    ) -> Self {
        Search {
            nodes,
            edges,
            words,
            memo,
            emit,
            #[cfg(test)]
            visits: 0,
        }
    }

    /// Visits node `id` with the first `i` words consumed, unless its patterns can not fit the
    /// words left.
    pub(super) fn visit(&mut self, id: NodeId, i: usize) {
        if let Some(node) = self.nodes.get(id as usize)
            && node.meta.fits(self.words.len().saturating_sub(i))
        {
            self.step(id, node.meta, i);
        }
    }

    /// Visits a node that fits, whose summary is `meta`, and the literal children after it:
    /// the walk down literal words is a loop, and only `*` and `#` edges recurse, so the
    /// recursion's depth is bounded by the wildcards of the longest pattern (at most 256
    /// words). A node is read only when its summary says it has a `*` or `#` child, or values
    /// at the end of the subject; a step down a literal word reads the edge table alone. The
    /// order in which nodes are visited does not matter: each `#` node's memo holds the
    /// positions it has been expanded from, always a suffix of the subject.
    fn step(&mut self, mut id: NodeId, mut meta: Meta, mut i: usize) {
        let (nodes, len) = (self.nodes, self.words.len());
        loop {
            #[cfg(test)]
            {
                self.visits += 1;
            }
            let word = self.words.get(i).copied();
            // The literal child is found before any branch is walked: the load of its slot
            // (usually a miss at 100k patterns) then overlaps the branches' work.
            let next = match word {
                Some(w) if w != UNKNOWN && meta.may_lead(w) => self.edges.get(id, w),
                _ => None,
            };
            if meta.has(Meta::WILD)
                && let Some(node) = nodes.get(id as usize)
            {
                if node.hash != NONE {
                    self.expand_hash(node.hash, i);
                }
                if word.is_some()
                    && let Some(star) = nodes.get(node.star as usize)
                    && star.meta.fits(len - i - 1)
                {
                    self.step(node.star, star.meta, i + 1);
                }
            }
            if word.is_none() {
                if meta.has(Meta::VALUES)
                    && let Some(node) = nodes.get(id as usize)
                {
                    node.values.as_slice().iter().for_each(&mut self.emit);
                }
                return;
            }
            match next {
                Some((child, m)) if m.fits(len - i - 1) => {
                    (id, meta) = (child, m);
                    i += 1;
                }
                _ => return,
            }
        }
    }

    /// Visits the `#` node `id`, child of a node reached at position `i`: at every position
    /// from `i` on where it fits and that it has not been expanded from yet in this search.
    fn expand_hash(&mut self, id: NodeId, i: usize) {
        let Some(node) = self.nodes.get(id as usize) else {
            return;
        };
        let len = self.words.len();
        let claimed = self.memo.claim(node.memo, i, len);
        let fitting = node.fitting_positions(len);
        let positions = claimed.start.max(fitting.start)..claimed.end.min(fitting.end);
        // Patterns keep their wildcard runs in canonical order (stars, then one `#`), so a `#`
        // node has no wildcard child and takes the loop below; the general walk stays for safety.
        if node.meta.has(Meta::WILD) {
            for j in positions {
                self.step(id, node.meta, j);
            }
        } else {
            self.literals_after_hash(id, node, positions);
        }
    }

    /// The visits of a `#` node without wildcard children (the usual `#.a.b`) at `positions`,
    /// done in one loop: at each, only its values (at the end) or one literal child can match.
    fn literals_after_hash(&mut self, id: NodeId, node: &'t Node<T>, positions: Range<usize>) {
        let len = self.words.len();
        for j in positions {
            #[cfg(test)]
            {
                self.visits += 1;
            }
            match self.words.get(j) {
                None => node.values.as_slice().iter().for_each(&mut self.emit),
                Some(&word) => {
                    if word != UNKNOWN
                        && node.meta.may_lead(word)
                        && let Some((child, meta)) = self.edges.get(id, word)
                        && meta.fits(len - j - 1)
                    {
                        self.step(child, meta, j + 1);
                    }
                }
            }
        }
    }
}
