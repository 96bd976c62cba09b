//! A node of the trie, and what it holds.

use super::edges::{Meta, NONE, NodeId};

/// A node: where the patterns with one prefix continue. With a value of up to 8 bytes it is
/// 32 bytes, aligned so that it never straddles a cache line. Its literal children are in the
/// trie's edge table; its `*` and `#` children are numbered here.
#[derive(Clone)]
#[repr(align(32))]
pub(super) struct Node<T> {
    /// The words the patterns through here still need, and what the node has: the same summary
    /// the edge into it carries.
    pub(super) meta: Meta,
    /// The `*` child, or [`NONE`].
    pub(super) star: NodeId,
    /// The `#` child, or [`NONE`].
    pub(super) hash: NodeId,
    /// For a node reached through `#`: its slot in a search's memo.
    pub(super) memo: u32,
    /// The values of the patterns that end here.
    pub(super) values: Values<T>,
}

/// The values stored at a node: one inline (the usual case, read with the node itself), or
/// several behind a pointer.
#[derive(Clone)]
pub(super) enum Values<T> {
    None,
    One(T),
    // A thin pointer keeps the node within its cache line; more than one value is rare.
    #[allow(clippy::box_collection)]
    Many(Box<Vec<T>>),
}

impl<T> Values<T> {
    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Values::None)
    }

    pub(super) fn as_slice(&self) -> &[T] {
        match self {
            Values::None => &[],
            Values::One(v) => std::slice::from_ref(v),
            Values::Many(vs) => vs.as_slice(),
        }
    }

    pub(super) fn push(&mut self, value: T) {
        *self = match std::mem::replace(self, Values::None) {
            Values::None => Values::One(value),
            Values::One(first) => Values::Many(Box::new(vec![first, value])),
            Values::Many(mut vs) => {
                vs.push(value);
                Values::Many(vs)
            }
        };
    }

    /// Removes one copy of `value`; whether there was one.
    pub(super) fn remove(&mut self, value: &T) -> bool
    where
        T: PartialEq,
    {
        let Some(i) = self.as_slice().iter().position(|v| v == value) else {
            return false;
        };
        *self = match std::mem::replace(self, Values::None) {
            Values::Many(mut vs) => {
                vs.remove(i);
                match vs.len() {
                    1 => vs.pop().map_or(Values::None, Values::One),
                    _ => Values::Many(vs),
                }
            }
            Values::None | Values::One(_) => Values::None,
        };
        true
    }
}

/// `max_rest` of a node with a `#` below it.
pub(super) const UNBOUNDED: u16 = u16::MAX;

/// One more word than `n` (a pattern is at most 256 words, so only `UNBOUNDED` saturates).
pub(super) fn plus_one(n: u16) -> u16 {
    n.saturating_add(1)
}

/// Dense ids for `#` nodes; a pruned node's id is reused, so the memo stays as small as the
/// number of `#` nodes that exist.
#[derive(Clone, Default)]
pub(super) struct IdPool {
    pub(super) next: u32,
    pub(super) free: Vec<u32>,
}

impl IdPool {
    pub(super) fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        })
    }

    pub(super) fn release(&mut self, id: u32) {
        self.free.push(id);
    }
}

impl<T> Node<T> {
    pub(super) fn new() -> Self {
        Node {
            meta: Meta::new(UNBOUNDED, 0, 0),
            star: NONE,
            hash: NONE,
            memo: 0,
            values: Values::None,
        }
    }

    /// The fewest further words the patterns through here need.
    pub(super) fn min_rest(&self) -> u16 {
        self.meta.min_rest()
    }

    /// The most further words ([`UNBOUNDED`] with a `#` below).
    pub(super) fn max_rest(&self) -> u16 {
        self.meta.max_rest()
    }

    /// The positions `j` (words consumed) of a subject of `len` words at which a pattern
    /// through here can match the words left.
    pub(super) fn fitting_positions(&self, len: usize) -> std::ops::Range<usize> {
        let first = match self.max_rest() {
            UNBOUNDED => 0,
            max => len.saturating_sub(usize::from(max)),
        };
        let end = (len + 1).saturating_sub(usize::from(self.min_rest()));
        first..end
    }
}
