//! A node of the trie, and what it holds.

use thin_vec::{ThinVec, thin_vec};

use super::children::Children;

/// A node: where the patterns with one prefix continue. With a value of up to 8 bytes it is
/// one cache line, aligned as one, and a search reads little else: the ids of up to four
/// literal children are inline.
#[derive(Clone)]
#[repr(align(64))]
pub(super) struct Node<T> {
    /// The fewest and the most further words the patterns through here need ([`UNBOUNDED`]
    /// with a `#` below): a search skips the node when the words left are outside.
    pub(super) min_rest: u16,
    pub(super) max_rest: u16,
    pub(super) words: Children<T>,
    /// The `*` and `#` children, boxed together: most nodes have neither.
    pub(super) wild: Option<Box<Wild<T>>>,
    /// The values of the patterns that end here.
    pub(super) values: Values<T>,
    /// For a node reached through a `#` that follows another `#` in its patterns, its number
    /// in the search's memo ([`IdPool`]); [`NO_MEMO`] elsewhere. Four bytes the cache line had
    /// spare: a search reads it with the node, where a number kept beside the node took a
    /// cache line of its own.
    pub(super) hash_id: u32,
}

/// The `*` and `#` children: two cache lines. The `#` child is numbered (its
/// [`hash_id`](Node::hash_id)) so a search can keep its memo in a flat array.
#[derive(Clone)]
pub(super) struct Wild<T> {
    pub(super) star: Option<Node<T>>,
    pub(super) hash: Option<Node<T>>,
}

/// The values stored at a node: one inline (the usual case, read with the node itself), or
/// several behind a pointer, kept in ascending order: a match's values then come in sorted
/// runs, which leaves its sort less to do.
#[derive(Clone)]
pub(super) enum Values<T> {
    None,
    One(T),
    /// A thin pointer keeps the node within its cache line, and the values' count sits in
    /// front of them, so reading them waits for one line, not for a vector's header and then
    /// its buffer.
    Many(ThinVec<T>),
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

    /// Adds `value` in its place (after any equal ones).
    pub(super) fn push(&mut self, value: T)
    where
        T: Ord,
    {
        *self = match std::mem::replace(self, Values::None) {
            Values::None => Values::One(value),
            Values::One(first) if first <= value => Values::Many(thin_vec![first, value]),
            Values::One(first) => Values::Many(thin_vec![value, first]),
            Values::Many(mut vs) => {
                let at = vs.partition_point(|v| *v <= value);
                vs.insert(at, value);
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

/// The [`Node::hash_id`] of a node the search needs no memo for: one not reached through `#`,
/// or reached through a first `#`. A path from the root to such a node takes a fixed number of
/// words, so a search reaches it at most once, at one position, and expands it once.
pub(super) const NO_MEMO: u32 = u32::MAX;

/// Dense ids for the `#` nodes that need a memo (those below another `#`); a pruned node's id is reused, so the memo stays as small as the
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
            words: Children::new(),
            wild: None,
            values: Values::None,
            min_rest: UNBOUNDED,
            max_rest: 0,
            hash_id: NO_MEMO,
        }
    }

    /// An empty node reached through `#`, numbered `hash_id` ([`NO_MEMO`] if it needs no memo).
    pub(super) fn hash(hash_id: u32) -> Self {
        Node {
            hash_id,
            ..Node::new()
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty() && self.words.is_empty() && self.wild.is_none()
    }

    pub(super) fn star(&self) -> Option<&Node<T>> {
        self.wild.as_deref().and_then(|w| w.star.as_ref())
    }

    pub(super) fn hash_child(&self) -> Option<&Node<T>> {
        self.wild.as_deref().and_then(|w| w.hash.as_ref())
    }

    pub(super) fn wild_mut(&mut self) -> &mut Wild<T> {
        self.wild.get_or_insert_with(|| {
            Box::new(Wild {
                star: None,
                hash: None,
            })
        })
    }

    /// Drops the box of wildcard children once both are gone.
    pub(super) fn tidy_wild(&mut self) {
        if self
            .wild
            .as_deref()
            .is_some_and(|w| w.star.is_none() && w.hash.is_none())
        {
            self.wild = None;
        }
    }

    pub(super) fn widen(&mut self, (min_rest, max_rest): (u16, u16)) {
        self.min_rest = self.min_rest.min(min_rest);
        self.max_rest = self.max_rest.max(max_rest);
    }

    /// Recomputes the bounds from the values and children, after a removal.
    pub(super) fn recompute_bounds(&mut self) {
        let (mut lo, mut hi) = match self.values.is_empty() {
            true => (UNBOUNDED, 0),
            false => (0, 0),
        };
        for child in self.words.nodes().chain(self.star()) {
            lo = lo.min(plus_one(child.min_rest));
            hi = hi.max(plus_one(child.max_rest));
        }
        if let Some(hash) = self.hash_child() {
            lo = lo.min(hash.min_rest);
            hi = UNBOUNDED;
        }
        (self.min_rest, self.max_rest) = (lo, hi);
    }

    /// Whether a pattern through here can match the `rest` words left.
    #[inline]
    pub(super) fn fits(&self, rest: usize) -> bool {
        // Bounded counts are at most 256 (a pattern has at most 256 words), so clamping `rest` below UNBOUNDED changes no answer
        // and leaves one comparison each way.
        let rest = rest.min(usize::from(UNBOUNDED - 1)) as u16;
        self.min_rest <= rest && rest <= self.max_rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Values pushed and removed in any order against a sorted list: a node holds the same
        /// values, in ascending order, and one inline when it holds one.
        #[test]
        fn values_stay_in_order(ops in proptest::collection::vec((any::<bool>(), 0..8u32), 0..60)) {
            let mut values = Values::None;
            let mut model: Vec<u32> = Vec::new();
            for (push, v) in ops {
                if push {
                    values.push(v);
                    model.push(v);
                    model.sort_unstable();
                } else {
                    let there = model.iter().position(|m| *m == v);
                    prop_assert_eq!(values.remove(&v), there.is_some());
                    if let Some(i) = there {
                        model.remove(i);
                    }
                }
                prop_assert_eq!(values.as_slice(), model.as_slice());
                prop_assert_eq!(values.is_empty(), model.is_empty());
                prop_assert_eq!(matches!(values, Values::One(_)), model.len() == 1);
            }
        }
    }
}
