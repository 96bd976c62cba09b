//! The literal edges of the whole trie, in one table keyed by (parent node, word id).
//!
//! A step down a literal word is one probe here: the slot a (node, word) pair hashes to, and
//! usually the same cache line for the few slots after it. The slot carries the child's number
//! and a summary of the child ([`Meta`]: the words its patterns still need and what kind of
//! children it has), so a search can go on from a child that has only literal children without
//! reading the child itself.

use super::words::WordId;

/// A node's number: its place in the trie's arena.
pub(super) type NodeId = u32;

/// The node number that marks an empty slot, and "no such child" elsewhere.
pub(super) const NONE: NodeId = NodeId::MAX;

/// What a search needs to know of a child before reading it, packed into 32 bits: the fewest
/// and the most further words its patterns need (9 bits each; [`Meta::UNBOUNDED`] for "any
/// number"), whether it has values or a `*` or `#` child, and a 12-bit filter of the words of
/// its literal children (bit [`Meta::word_bit`] set for each). A word whose bit is clear is not
/// a child, so most failing steps from a node with few children need no probe of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Meta(pub(super) u32);

impl Meta {
    /// The most further words of a node with a `#` below it, as stored.
    const UNBOUNDED: u32 = 0x1ff;
    /// The bits of the bounds.
    pub(super) const BOUNDS: u32 = (1 << 18) - 1;
    pub(super) const VALUES: u32 = 1 << 18;
    /// The node has a `*` or a `#` child: it must be read to follow them.
    pub(super) const WILD: u32 = 1 << 19;
    /// The filter's bits.
    const FILTER_AT: u32 = 20;
    const FILTER_BITS: u64 = 12;

    /// Packs bounds (as the nodes keep them, `u16::MAX` for unbounded) and flags.
    pub(super) fn new(min_rest: u16, max_rest: u16, flags: u32) -> Self {
        // A bounded count is at most 257 (a pattern has at most 256 words); larger means
        // unbounded, which is also what an empty node's `min_rest` says (it fits nothing).
        let clamp = |n: u16| u32::from(n).min(Self::UNBOUNDED);
        Meta(clamp(min_rest) | clamp(max_rest) << 9 | flags & !Self::BOUNDS)
    }

    /// The filter bit of word `id`.
    #[inline(always)]
    pub(super) fn word_bit(id: WordId) -> u32 {
        let spread = u64::from(id.wrapping_mul(0x9e37_79b9));
        1 << (Self::FILTER_AT + ((spread * Self::FILTER_BITS) >> 32) as u32)
    }

    /// Whether word `id` may label a literal child (if not, it certainly does not).
    #[inline(always)]
    pub(super) fn may_lead(self, id: WordId) -> bool {
        self.0 & Self::word_bit(id) != 0
    }

    /// Whether patterns through the node can match the `rest` words left.
    #[inline(always)]
    pub(super) fn fits(self, rest: usize) -> bool {
        let rest = rest.min(Self::UNBOUNDED as usize - 1) as u32;
        let min = self.0 & Self::UNBOUNDED;
        let max = self.0 >> 9 & Self::UNBOUNDED;
        min <= rest && rest <= max
    }

    /// The fewest further words, as the nodes keep it (`u16::MAX` for none fit).
    pub(super) fn min_rest(self) -> u16 {
        Self::unpack(self.0 & Self::UNBOUNDED)
    }

    /// The most further words, as the nodes keep it (`u16::MAX` for unbounded).
    pub(super) fn max_rest(self) -> u16 {
        Self::unpack(self.0 >> 9 & Self::UNBOUNDED)
    }

    fn unpack(n: u32) -> u16 {
        match n {
            Self::UNBOUNDED => u16::MAX,
            n => n as u16,
        }
    }

    /// The same bounds with other flags and filter.
    pub(super) fn with_flags(self, flags: u32) -> Self {
        Meta(self.0 & Self::BOUNDS | flags & !Self::BOUNDS)
    }

    #[inline(always)]
    pub(super) fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Edge {
    parent: NodeId,
    word: WordId,
    child: NodeId,
    meta: Meta,
}

const EMPTY: Edge = Edge {
    parent: NONE,
    word: 0,
    child: NONE,
    meta: Meta(0),
};

/// Open addressing, probed linearly from a pair's home slot, at most half full, four slots to
/// a cache line.
#[derive(Clone)]
pub(super) struct Edges {
    slots: Box<[Edge]>,
    len: usize,
    /// Random per trie, mixed into the hash.
    seed: u64,
}

impl Edges {
    pub(super) fn new(seed: u64) -> Self {
        Edges {
            slots: vec![EMPTY; 16].into_boxed_slice(),
            len: 0,
            seed,
        }
    }

    #[inline(always)]
    fn home(&self, parent: NodeId, word: WordId) -> usize {
        let key = (u64::from(parent) << 32 | u64::from(word)) ^ self.seed;
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 32) as usize & (self.slots.len() - 1)
    }

    /// The slot of the edge from `parent` labelled `word`.
    #[inline(always)]
    fn find(&self, parent: NodeId, word: WordId) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(parent, word);
        // At most half full, so an empty slot ends every probe; the bound is a safeguard.
        for _ in 0..self.slots.len() {
            let edge = self.slots.get(i)?;
            if edge.parent == parent && edge.word == word {
                return Some(i);
            }
            if edge.parent == NONE {
                return None;
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The child of `parent` labelled `word`, with its summary.
    #[inline(always)]
    pub(super) fn get(&self, parent: NodeId, word: WordId) -> Option<(NodeId, Meta)> {
        let edge = self.slots.get(self.find(parent, word)?)?;
        Some((edge.child, edge.meta))
    }

    /// Sets the summary of an existing edge.
    pub(super) fn set_meta(&mut self, parent: NodeId, word: WordId, meta: Meta) {
        if let Some(edge) = self.find(parent, word).and_then(|i| self.slots.get_mut(i)) {
            edge.meta = meta;
        }
    }

    /// Adds an edge that is not in the table; grows the table first if it would be more than
    /// half full.
    pub(super) fn insert(&mut self, parent: NodeId, word: WordId, child: NodeId, meta: Meta) {
        if (self.len + 1) * 2 > self.slots.len() {
            let grown = vec![EMPTY; self.slots.len() * 2].into_boxed_slice();
            let old = std::mem::replace(&mut self.slots, grown);
            self.len = 0;
            for e in old.iter().filter(|e| e.parent != NONE) {
                self.insert(e.parent, e.word, e.child, e.meta);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(parent, word);
        while self.slots[i].parent != NONE {
            i = (i + 1) & mask;
        }
        self.slots[i] = Edge {
            parent,
            word,
            child,
            meta,
        };
        self.len += 1;
    }

    /// Removes the edge from `parent` labelled `word`, shifting later entries of its probe run
    /// back so no probe stops early.
    pub(super) fn remove(&mut self, parent: NodeId, word: WordId) {
        let Some(mut hole) = self.find(parent, word) else {
            return;
        };
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let edge = self.slots[j];
            if edge.parent == NONE {
                break;
            }
            // The entry at `j` may fill the hole unless its home lies after the hole (up to j).
            let home = self.home(edge.parent, edge.word);
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = edge;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
    }

    /// How many edges there are.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn meta_packs_bounds_and_flags() {
        let m = Meta::new(2, u16::MAX, Meta::VALUES);
        assert!(!m.fits(1));
        assert!(m.fits(2) && m.fits(5000));
        assert!(m.has(Meta::VALUES) && !m.has(Meta::WILD));
        let m = Meta::new(0, 257, Meta::word_bit(7) | Meta::WILD);
        assert!(m.fits(0) && m.fits(257) && !m.fits(258) && !m.fits(usize::MAX));
        assert!(m.has(Meta::WILD) && !m.has(Meta::VALUES));
        assert!(m.may_lead(7));
        let other = (0..100).find(|w| Meta::word_bit(*w) != Meta::word_bit(7));
        assert!(other.is_some_and(|w| !m.may_lead(w)), "another bit is clear");
        assert_eq!(m.with_flags(0).max_rest(), 257);
        assert!(!Meta::new(u16::MAX, 0, 0).fits(0), "an empty node fits nothing");
    }

    proptest! {
        /// Random inserts and removals (a few parents and words, sharing probe runs) against a
        /// map: every edge is found exactly while it is in, with its child and summary.
        #[test]
        fn edges_agree_with_a_map(ops in proptest::collection::vec((any::<bool>(), 0..6u32, 0..12u32), 0..300)) {
            let mut edges = Edges::new(0x1234_5678);
            let mut model = std::collections::BTreeMap::new();
            for (n, (insert, parent, word)) in ops.into_iter().enumerate() {
                let n = n as u32;
                if insert {
                    if model.contains_key(&(parent, word)) {
                        edges.set_meta(parent, word, Meta(n));
                        model.entry((parent, word)).and_modify(|e: &mut (u32, u32)| e.1 = n);
                    } else {
                        edges.insert(parent, word, n, Meta(n));
                        model.insert((parent, word), (n, n));
                    }
                } else {
                    edges.remove(parent, word);
                    model.remove(&(parent, word));
                }
                for p in 0..6 {
                    for w in 0..12 {
                        let want = model.get(&(p, w)).map(|&(c, m)| (c, Meta(m)));
                        prop_assert_eq!(edges.get(p, w), want);
                    }
                }
                prop_assert_eq!(edges.len(), model.len());
            }
        }
    }
}
