//! Adding and removing patterns: the arena's nodes, the edge table and the summaries kept in
//! step.

use super::edges::{Meta, NONE, NodeId};
use super::node::{Node, UNBOUNDED, plus_one};
use super::words::WordId;
use super::{ROOT, TopicTrie};
use crate::topic::Word;

/// How a node was reached from its parent.
#[derive(Clone, Copy)]
enum Label {
    Literal(WordId),
    Star,
    Hash,
}

/// One step of a pattern's path: parent, label, child.
type Step = (NodeId, Label, NodeId);

impl<T> TopicTrie<T> {
    fn node(&self, id: NodeId) -> Option<&Node<T>> {
        self.nodes.get(id as usize)
    }

    fn node_mut(&mut self, id: NodeId) -> Option<&mut Node<T>> {
        self.nodes.get_mut(id as usize)
    }

    /// A new empty node's number.
    fn alloc(&mut self) -> NodeId {
        match self.free.pop() {
            Some(id) => id,
            None => {
                self.nodes.push(Node::new());
                self.children.push(Vec::new());
                (self.nodes.len() - 1) as NodeId
            }
        }
    }

    /// Returns an emptied node's number for reuse.
    fn release(&mut self, id: NodeId) {
        if let Some(node) = self.node_mut(id) {
            *node = Node::new();
        }
        if let Some(children) = self.children.get_mut(id as usize) {
            *children = Vec::new();
        }
        self.free.push(id);
    }

    /// Puts `value` at the end of the path of `words`, making the nodes missing.
    pub(super) fn insert_at(&mut self, words: &[Word], value: T) {
        // The bounds of each suffix of the pattern: the fewest and most words it takes.
        let mut bounds = vec![(0, 0); words.len() + 1];
        for (d, word) in words.iter().enumerate().rev() {
            let (lo, hi) = bounds.get(d + 1).copied().unwrap_or_default();
            if let Some(b) = bounds.get_mut(d) {
                *b = match word {
                    Word::Any => (lo, UNBOUNDED),
                    _ => (plus_one(lo), plus_one(hi)),
                };
            }
        }
        let mut path: Vec<Step> = Vec::with_capacity(words.len());
        let mut id = ROOT;
        for (word, bounds) in words.iter().zip(&bounds) {
            self.widen(id, *bounds);
            let (label, child) = match word {
                Word::Literal(w) => {
                    let word = self.words.id(w);
                    let child = match self.edges.get(id, word) {
                        Some((child, _)) => child,
                        None => {
                            let child = self.alloc();
                            self.edges.insert(id, word, child, Meta::default());
                            if let Some(children) = self.children.get_mut(id as usize) {
                                children.push((word, child));
                            }
                            self.words.retain(word);
                            child
                        }
                    };
                    (Label::Literal(word), child)
                }
                Word::One => (Label::Star, self.wild_child(id, Label::Star)),
                Word::Any => (Label::Hash, self.wild_child(id, Label::Hash)),
            };
            path.push((id, label, child));
            id = child;
        }
        self.widen(id, (0, 0));
        if let Some(node) = self.node_mut(id) {
            node.values.push(value);
        }
        for &(_, _, child) in path.iter().rev() {
            self.refresh(child);
        }
        self.refresh(ROOT);
        self.publish(&path);
    }

    /// The `*` or `#` child of `id`, made if missing.
    fn wild_child(&mut self, id: NodeId, label: Label) -> NodeId {
        let existing = match (self.node(id), label) {
            (Some(node), Label::Star) => node.star,
            (Some(node), _) => node.hash,
            (None, _) => NONE,
        };
        if existing != NONE {
            return existing;
        }
        let child = self.alloc();
        if matches!(label, Label::Hash) {
            let memo = self.hash_ids.take();
            if let Some(node) = self.node_mut(child) {
                node.memo = memo;
            }
        }
        if let Some(node) = self.node_mut(id) {
            match label {
                Label::Star => node.star = child,
                _ => node.hash = child,
            }
        }
        child
    }

    fn widen(&mut self, id: NodeId, (min_rest, max_rest): (u16, u16)) {
        if let Some(node) = self.node_mut(id) {
            let (lo, hi) = (node.min_rest().min(min_rest), node.max_rest().max(max_rest));
            node.meta = Meta::new(lo, hi, node.meta.0);
        }
    }

    /// Sets the flags of node `id`'s summary from what it holds.
    fn refresh(&mut self, id: NodeId) {
        // The filter of the children's words; a wide node's is soon all ones.
        let mut flags = 0;
        for (word, _) in self.children.get(id as usize).map_or(&[][..], Vec::as_slice) {
            flags |= Meta::word_bit(*word);
            if flags & !Meta::BOUNDS == !Meta::BOUNDS & !Meta::VALUES & !Meta::WILD {
                break;
            }
        }
        if let Some(node) = self.node_mut(id) {
            if !node.values.is_empty() {
                flags |= Meta::VALUES;
            }
            if node.star != NONE || node.hash != NONE {
                flags |= Meta::WILD;
            }
            node.meta = node.meta.with_flags(flags);
        }
    }

    /// Copies the summaries of the literal children on `path` into their edges.
    fn publish(&mut self, path: &[Step]) {
        for &(parent, label, child) in path {
            if let (Label::Literal(word), Some(node)) = (label, self.node(child)) {
                let meta = node.meta;
                self.edges.set_meta(parent, word, meta);
            }
        }
    }

    /// Removes one copy of `value` from the end of the path of `words`, pruning the nodes left
    /// empty; whether there was one.
    pub(super) fn remove_at(&mut self, words: &[Word], value: &T) -> bool
    where
        T: PartialEq,
    {
        let mut path: Vec<Step> = Vec::with_capacity(words.len());
        let mut id = ROOT;
        for word in words {
            let step = match word {
                Word::Literal(w) => self.words.get(w).and_then(|word| {
                    let (child, _) = self.edges.get(id, word)?;
                    Some((Label::Literal(word), child))
                }),
                Word::One => self.node(id).map(|n| (Label::Star, n.star)),
                Word::Any => self.node(id).map(|n| (Label::Hash, n.hash)),
            };
            let Some((label, child)) = step.filter(|(_, child)| *child != NONE) else {
                return false;
            };
            path.push((id, label, child));
            id = child;
        }
        if !self.node_mut(id).is_some_and(|n| n.values.remove(value)) {
            return false;
        }
        let mut kept = path.len();
        for (k, &(parent, label, child)) in path.iter().enumerate().rev() {
            if self.is_bare(child) {
                self.unlink(parent, label, child);
                kept = k;
            } else {
                self.recompute(child);
            }
        }
        self.recompute(ROOT);
        self.publish(path.get(..kept).unwrap_or_default());
        true
    }

    /// Whether node `id` holds nothing.
    pub(super) fn is_bare(&self, id: NodeId) -> bool {
        self.node(id)
            .is_some_and(|n| n.values.is_empty() && n.star == NONE && n.hash == NONE)
            && self.children.get(id as usize).is_some_and(Vec::is_empty)
    }

    /// Cuts the empty node `child` from its parent and frees it.
    fn unlink(&mut self, parent: NodeId, label: Label, child: NodeId) {
        match label {
            Label::Literal(word) => {
                self.edges.remove(parent, word);
                if let Some(children) = self.children.get_mut(parent as usize)
                    && let Some(i) = children.iter().position(|(w, _)| *w == word)
                {
                    children.swap_remove(i);
                }
                self.words.release(word);
            }
            Label::Star => {
                if let Some(node) = self.node_mut(parent) {
                    node.star = NONE;
                }
            }
            Label::Hash => {
                if let Some(memo) = self.node(child).map(|n| n.memo) {
                    self.hash_ids.release(memo);
                }
                if let Some(node) = self.node_mut(parent) {
                    node.hash = NONE;
                }
            }
        }
        self.release(child);
    }

    /// Recomputes node `id`'s summary from its values and children, after a removal.
    fn recompute(&mut self, id: NodeId) {
        let Some(node) = self.node(id) else {
            return;
        };
        let (mut lo, mut hi) = match node.values.is_empty() {
            true => (UNBOUNDED, 0),
            false => (0, 0),
        };
        let literals = self.children.get(id as usize).map(Vec::as_slice);
        let below = literals
            .unwrap_or_default()
            .iter()
            .map(|&(_, child)| child)
            .chain(Some(node.star));
        for child in below.filter_map(|c| self.node(c)) {
            lo = lo.min(plus_one(child.min_rest()));
            hi = hi.max(plus_one(child.max_rest()));
        }
        if let Some(hash) = self.node(node.hash) {
            lo = lo.min(hash.min_rest());
            hi = UNBOUNDED;
        }
        if let Some(node) = self.node_mut(id) {
            node.meta = Meta::new(lo, hi, node.meta.0);
        }
        self.refresh(id);
    }
}
