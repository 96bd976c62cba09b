//! Matching a subject against the trie: one walk, each (node, position) pair at most once.

use std::cell::RefCell;
use std::ops::Range;

use super::node::{NO_MEMO, Node};
use super::words::{UNKNOWN, WordId};

thread_local! {
    /// The memo of the searches on this thread: reused, so a search allocates nothing.
    pub(super) static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// For each `#` node below another `#`, the lowest subject position it has been expanded from in the current
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

/// One search: the ids of the subject's words ([`UNKNOWN`] for a word no pattern has), the
/// memo, and what to do with a match.
pub(super) struct Search<'w, 'm, F> {
    words: &'w [WordId],
    memo: &'m mut Memo,
    emit: F,
    /// Nodes entered, for the tests that check a search stays bounded.
    #[cfg(test)]
    pub(super) visits: usize,
}

impl<'w, 'm, F> Search<'w, 'm, F> {
    pub(super) fn new(words: &'w [WordId], memo: &'m mut Memo, emit: F) -> Self {
        Search {
            words,
            memo,
            emit,
            #[cfg(test)]
            visits: 0,
        }
    }

    /// Visits `node` with the first `i` words consumed, unless its patterns can not fit the
    /// words left.
    pub(super) fn visit<'a, T>(&mut self, node: &'a Node<T>, i: usize)
    where
        F: FnMut(&'a T),
    {
        if node.fits(self.words.len().saturating_sub(i)) {
            self.step(node, i);
        }
    }

    /// Visits a node that fits, and the literal children after it: the walk down literal
    /// words is a loop, and only `*` and `#` edges recurse, so the recursion's depth is bounded
    /// by the wildcards of the longest pattern (at most 256 words). Children are checked for
    /// fit before they are entered, and a `#` child is visited only at the positions where it
    /// fits. The order in which nodes are visited does not matter: each `#` node's memo holds
    /// the positions it has been expanded from, always a suffix of the subject.
    fn step<'a, T>(&mut self, mut node: &'a Node<T>, mut i: usize)
    where
        F: FnMut(&'a T),
    {
        let len = self.words.len();
        loop {
            #[cfg(test)]
            {
                self.visits += 1;
            }
            let word = self.words.get(i).copied();
            // The children this visit may go on to are found, and whether they fit read,
            // before any branch is walked: the loads of their cache lines (usually misses at
            // 100k patterns) then overlap the work of the branches walked first instead of
            // each waiting after it.
            let wild = node.wild.as_deref();
            let star = match (word, wild) {
                (Some(_), Some(wild)) => wild.star.as_ref().filter(|s| s.fits(len - i - 1)),
                _ => None,
            };
            let next = match word {
                Some(w) if w != UNKNOWN => node
                    .words
                    .get(w)
                    .map(|child| (child, child.fits(len - i - 1))),
                _ => None,
            };
            if let Some(hash) = wild.and_then(|w| w.hash.as_ref()) {
                self.expand_hash(hash, i);
            }
            if let Some(star) = star {
                self.step(star, i + 1);
            }
            if word.is_none() {
                node.values.as_slice().iter().for_each(&mut self.emit);
                return;
            }
            match next {
                Some((child, true)) => {
                    node = child;
                    i += 1;
                }
                _ => return,
            }
        }
    }

    /// Visits the `#` child of a node reached at position `i`: at every position from `i` on
    /// where it fits and that it has not been expanded from yet in this search.
    fn expand_hash<'a, T>(&mut self, hash: &'a Node<T>, i: usize)
    where
        F: FnMut(&'a T),
    {
        let len = self.words.len();
        let claimed = match hash.hash_id {
            NO_MEMO => i..len + 1,
            id => self.memo.claim(id, i, len),
        };
        let fitting = hash.fitting_positions(len);
        let positions = claimed.start.max(fitting.start)..claimed.end.min(fitting.end);
        // Patterns keep their wildcard runs in canonical order (stars, then one `#`), so a `#`
        // node has no wildcard child and takes the loop below; the general walk stays for safety.
        if hash.wild.is_some() {
            for j in positions {
                self.step(hash, j);
            }
        } else {
            self.literals_after_hash(hash, positions);
        }
    }

    /// The visits of a `#` node without wildcard children (the usual `#.a.b`) at `positions`,
    /// done in one loop: at each, only its values (at the end) or one literal child can match.
    fn literals_after_hash<'a, T>(&mut self, node: &'a Node<T>, positions: Range<usize>)
    where
        F: FnMut(&'a T),
    {
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
                        && let Some(child) = node.words.get(word)
                        && child.fits(len - j - 1)
                    {
                        self.step(child, j + 1);
                    }
                }
            }
        }
    }
}
