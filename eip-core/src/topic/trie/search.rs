//! Matching a subject against the trie: one walk, each (node, position) pair at most once.

use std::cell::RefCell;
use std::ops::Range;

use super::node::{NO_MEMO, Node, UNBOUNDED};
use super::words::{UNKNOWN, WordId};

thread_local! {
    /// The memo of the searches on this thread: reused, so a search allocates nothing.
    pub(super) static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// For each `#` node below another `#`, the lowest subject position it has been expanded from
/// in the current search. Slots from earlier searches carry an older generation and count as
/// unset, so starting a search costs nothing however many `#` nodes there are.
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
/// memo, and what to do with the values of each matching pattern (given a node's at once).
pub(super) struct Search<'w, 'm, F> {
    words: &'w [WordId],
    memo: &'m mut Memo,
    emit: F,
    /// Nodes entered, for the tests that check a search stays bounded.
    #[cfg(test)]
    pub(super) visits: usize,
}

/// Visits a search keeps in an array on the stack before it spills to the heap.
const INLINE_PENDING: usize = 8;

/// The visits a search has found and not made yet: a node (known to fit) and the words
/// consumed when it is reached. A stack, so the walk is one loop and never recurses: a visit
/// costs a push and a pop instead of a call, and no pattern can make the walk deep.
struct Pending<'a, T> {
    inline: [(&'a Node<T>, usize); INLINE_PENDING],
    len: usize,
    spilled: Vec<(&'a Node<T>, usize)>,
}

impl<'a, T> Pending<'a, T> {
    /// An empty stack; `filler` fills the unused places of the array.
    fn new(filler: &'a Node<T>) -> Self {
        Pending {
            inline: [(filler, 0); INLINE_PENDING],
            len: 0,
            spilled: Vec::new(),
        }
    }

    #[inline(always)]
    fn push(&mut self, node: &'a Node<T>, i: usize) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = (node, i),
            None => self.spilled.push((node, i)),
        }
        self.len += 1;
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<(&'a Node<T>, usize)> {
        self.len = self.len.checked_sub(1)?;
        match self.inline.get(self.len) {
            Some(visit) => Some(*visit),
            None => self.spilled.pop(),
        }
    }
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

    /// Visits `root` with the first `i` words consumed (unless its patterns can not fit the
    /// words left), and every node a match can go on to. The order of the visits does not
    /// matter: each `#` node's memo holds the positions it has been expanded from, always a
    /// suffix of the subject.
    pub(super) fn visit<'a, T>(&mut self, root: &'a Node<T>, i: usize)
    where
        F: FnMut(&'a [T]),
    {
        if !root.fits(self.words.len().saturating_sub(i)) {
            return;
        }
        let mut pending = Pending::new(root);
        pending.push(root, i);
        while let Some((node, i)) = pending.pop() {
            self.walk(node, i, &mut pending);
        }
    }

    /// Visits a node that fits, and the literal children after it, in a loop; the `*` and `#`
    /// children met on the way go to `pending`. Children are checked for fit before they are
    /// entered or put there, and a `#` child is expanded only at the positions where it fits.
    #[inline(always)]
    fn walk<'a, T>(&mut self, mut node: &'a Node<T>, mut i: usize, pending: &mut Pending<'a, T>)
    where
        F: FnMut(&'a [T]),
    {
        let len = self.words.len();
        loop {
            #[cfg(test)]
            {
                self.visits += 1;
            }
            let word = self.words.get(i).copied();
            // The literal child is found, and whether it fits read, before the `#` child is
            // expanded: the load of its cache line (usually a miss at 100k patterns) then
            // overlaps the expansion instead of waiting after it.
            let next = match word {
                Some(w) if w != UNKNOWN => node.words.get(w).filter(|c| c.fits(len - i - 1)),
                _ => None,
            };
            if let Some(wild) = node.wild.as_deref() {
                if let Some(hash) = &wild.hash {
                    self.expand_hash(hash, i, pending);
                }
                if word.is_some()
                    && let Some(star) = &wild.star
                    && star.fits(len - i - 1)
                {
                    pending.push(star, i + 1);
                }
            }
            if word.is_none() {
                self.emit_values(node);
                return;
            }
            match next {
                Some(child) => {
                    node = child;
                    i += 1;
                }
                None => return,
            }
        }
    }

    #[inline(always)]
    fn emit_values<'a, T>(&mut self, node: &'a Node<T>)
    where
        F: FnMut(&'a [T]),
    {
        let values = node.values.as_slice();
        if !values.is_empty() {
            (self.emit)(values);
        }
    }

    /// Expands the `#` child of a node reached at position `i`: at every position from `i` on
    /// where it fits and that it has not been expanded from yet in this search.
    #[inline(always)]
    fn expand_hash<'a, T>(&mut self, hash: &'a Node<T>, i: usize, pending: &mut Pending<'a, T>)
    where
        F: FnMut(&'a [T]),
    {
        let len = self.words.len();
        // The positions where the words left fit the patterns below: `from..to`.
        let mut from = i;
        if hash.max_rest != UNBOUNDED {
            from = from.max(len.saturating_sub(usize::from(hash.max_rest)));
        }
        let mut to = (len + 1).saturating_sub(usize::from(hash.min_rest));
        if hash.hash_id != NO_MEMO {
            let claimed = self.memo.claim(hash.hash_id, i, len);
            from = from.max(claimed.start);
            to = to.min(claimed.end);
        }
        // Patterns keep their wildcard runs in canonical order (stars, then one `#`), so a `#`
        // node has no wildcard child and takes the loop below; the general visit stays for
        // safety.
        if hash.wild.is_some() {
            for j in from..to {
                pending.push(hash, j);
            }
            return;
        }
        // At each position only one literal child can go on; at the end, the patterns that end
        // with this `#` match.
        let words = self.words.get(from..to.min(len)).unwrap_or_default();
        #[cfg(test)]
        {
            self.visits += words.len();
        }
        if !words.is_empty() {
            hash.words.find_each(words, |k, child| {
                let j = from + k;
                if child.fits(len - j - 1) {
                    pending.push(child, j + 1);
                }
            });
        }
        if from <= len && len < to {
            #[cfg(test)]
            {
                self.visits += 1;
            }
            self.emit_values(hash);
        }
    }
}
