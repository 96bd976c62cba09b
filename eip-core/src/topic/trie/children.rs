//! A node's literal children, labelled with word ids.

use super::Node;
use super::words::{UNKNOWN, WordId};

/// The children of a node reached through literal words.
///
/// Most nodes have one or two. Up to [`FEW`] are kept in a slice, with their word ids inline in
/// the parent: looking for a word that is not there reads nothing beyond the parent, and
/// finding one reads just that child. Beyond that, [`Many`], with a filter inline: a bit per
/// group of words, set where a child's word is, so most words that are not there are ruled out
/// without reading the table (at a `#` node, looked up at every position of the subject, most
/// words are not there).
#[derive(Clone)]
pub(super) enum Children<T> {
    Few {
        /// The ids of `nodes`, in order; unused places hold [`NO_WORD`].
        ids: [WordId; FEW],
        nodes: Box<[Node<T>]>,
    },
    Many {
        table: Box<Many<T>>,
        /// [`filter_bit`] of each child's word, or-ed together.
        filter: u64,
    },
}

/// The slots of the widest table whose filter a removal recomputes (see [`Children::remove`]).
const EXACT_FILTER: usize = 256;

/// A multiplicative hash of a word's id, computed once for a lookup in a [`Children::Many`]:
/// its top 6 bits pick the word's filter bit ([`filter_bit`]) and its low bits the home slot
/// ([`Many::home`]). Ids are dense: multiplying by an odd number maps ids that differ in their
/// low bits to different home slots, and spreads the top bits over the 64.
#[inline(always)]
fn spread(id: WordId) -> u32 {
    id.wrapping_mul(0x9e37_79b9)
}

/// The bit of a word in a [`Children::Many`]'s filter, from its [`spread`].
#[inline(always)]
fn bit(spread: u32) -> u64 {
    1 << (spread >> 26)
}

/// The bit of word `id` in a [`Children::Many`]'s filter.
#[inline]
fn filter_bit(id: WordId) -> u64 {
    bit(spread(id))
}

/// Children kept in a slice at most.
const FEW: usize = 4;

/// Fills the unused places of [`Children::Few`] and the empty slots of [`Many`]: never a word's
/// id (ids are dense from 0).
const NO_WORD: WordId = WordId::MAX;

impl<T> Children<T> {
    pub(super) fn new() -> Self {
        Children::Few {
            ids: [NO_WORD; FEW],
            nodes: Box::new([]),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Children::Few { nodes, .. } => nodes.is_empty(),
            Children::Many { table, .. } => table.len == 0,
        }
    }

    /// The child for word `id`.
    #[inline]
    pub(super) fn get(&self, id: WordId) -> Option<&Node<T>> {
        match self {
            Children::Few { ids, nodes } => nodes.get(few_position(ids, id)?),
            Children::Many { table, filter } => {
                let s = spread(id);
                match filter & bit(s) {
                    0 => None,
                    _ => table.nodes.get(table.find_spread(id, s)?),
                }
            }
        }
    }

    /// Calls `found` with the place in `words` and the child of each word that has one
    /// ([`UNKNOWN`] words have none): a `#` node looks up each position of the subject
    /// where it can end, so the loop is here, inside one match on the kind of children.
    #[inline(always)]
    pub(super) fn find_each<'a>(
        &'a self,
        words: &[WordId],
        mut found: impl FnMut(usize, &'a Node<T>),
    ) {
        match self {
            Children::Few { ids, nodes } => {
                for (k, &id) in words.iter().enumerate() {
                    if let Some(child) = few_position(ids, id).and_then(|i| nodes.get(i)) {
                        found(k, child);
                    }
                }
            }
            Children::Many { table, filter } => {
                // Read once, not at each word.
                let (table, filter): (&Many<T>, u64) = (table, *filter);
                for (k, &id) in words.iter().enumerate() {
                    let s = spread(id);
                    if id != UNKNOWN
                        && filter & bit(s) != 0
                        && let Some(child) =
                            table.find_spread(id, s).and_then(|i| table.nodes.get(i))
                    {
                        found(k, child);
                    }
                }
            }
        }
    }

    /// The child for word `id`, for change.
    pub(super) fn get_mut(&mut self, id: WordId) -> Option<&mut Node<T>> {
        match self {
            Children::Few { ids, nodes } => nodes.get_mut(ids.iter().position(|w| *w == id)?),
            Children::Many { table, .. } => {
                let i = table.find(id)?;
                table.nodes.get_mut(i)
            }
        }
    }

    /// The child for word `id`, and whether it was made now (empty).
    pub(super) fn get_or_insert(&mut self, id: WordId) -> (&mut Node<T>, bool) {
        if let Children::Few { ids, nodes } = self
            && nodes.len() == FEW
            && !ids.contains(&id)
        {
            let mut many = Many::with_capacity(4 * FEW);
            let mut filter = 0;
            for (word, node) in ids.iter().zip(std::mem::take(nodes).into_vec()) {
                many.insert_new(*word, node);
                filter |= filter_bit(*word);
            }
            *self = Children::Many {
                table: Box::new(many),
                filter,
            };
        }
        match self {
            Children::Few { ids, nodes } => {
                let (i, made) = match ids.iter().position(|w| *w == id) {
                    Some(i) => (i, false),
                    None => {
                        let i = nodes.len();
                        let mut grown = std::mem::take(nodes).into_vec();
                        grown.push(Node::new());
                        *nodes = grown.into_boxed_slice();
                        ids[i] = id;
                        (i, true)
                    }
                };
                // `ids` and `nodes` stay in step: position `i` is a node.
                (&mut nodes[i], made)
            }
            Children::Many { table, filter } => match table.find(id) {
                Some(i) => (&mut table.nodes[i], false),
                None => {
                    *filter |= filter_bit(id);
                    (table.insert_new(id, Node::new()), true)
                }
            },
        }
    }

    /// Removes the child for word `id`, if there is one.
    pub(super) fn remove(&mut self, id: WordId) {
        match self {
            Children::Few { ids, nodes } => {
                let Some(i) = ids.iter().position(|w| *w == id) else {
                    return;
                };
                let mut kept = std::mem::take(nodes).into_vec();
                if i < kept.len() {
                    kept.remove(i);
                }
                *nodes = kept.into_boxed_slice();
                ids.copy_within(i + 1.., i);
                ids[FEW - 1] = NO_WORD;
            }
            Children::Many { table, filter } => {
                table.remove(id);
                // A bit left set only costs a lookup, so the filter is made exact again only
                // where that is cheap: a wide table's filter has (nearly) every bit set anyway,
                // and a removal stays constant time.
                if table.ids.len() <= EXACT_FILTER {
                    *filter = table
                        .ids
                        .iter()
                        .filter(|w| **w != NO_WORD)
                        .fold(0, |f, w| f | filter_bit(*w));
                }
            }
        }
    }

    /// Every child.
    pub(super) fn nodes(&self) -> Box<dyn Iterator<Item = &Node<T>> + '_> {
        match self {
            Children::Few { nodes, .. } => Box::new(nodes.iter()),
            Children::Many { table: many, .. } => Box::new(
                many.ids
                    .iter()
                    .zip(many.nodes.iter())
                    .filter(|(id, _)| **id != NO_WORD)
                    .map(|(_, node)| node),
            ),
        }
    }
}

/// Where `id` is in `ids`: all four compared at once, so that the one branch taken is on
/// whether the word is there, not on where.
#[inline]
fn few_position(ids: &[WordId; FEW], id: WordId) -> Option<usize> {
    let found = ids
        .iter()
        .enumerate()
        .fold(0_u32, |found, (i, w)| found | u32::from(*w == id) << i);
    (found != 0).then(|| found.trailing_zeros() as usize)
}

/// Many children: an open-addressing table, probed linearly from a word's home slot, at most
/// half full. The ids are an array of their own, 16 to a cache line, so a probe for a word
/// that is not there reads about one line; the nodes sit in a parallel array, and a word that
/// is there costs one more line, its node.
#[derive(Clone)]
pub(super) struct Many<T> {
    /// The word in each slot, [`NO_WORD`] where empty. The length is a power of two.
    ids: Box<[WordId]>,
    /// The node in each slot (an empty node where the slot is empty).
    nodes: Box<[Node<T>]>,
    /// `ids.len() - 1`.
    mask: usize,
    len: usize,
}

impl<T> Many<T> {
    fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.next_power_of_two().max(8);
        Many {
            ids: vec![NO_WORD; capacity].into_boxed_slice(),
            nodes: (0..capacity).map(|_| Node::new()).collect(),
            mask: capacity - 1,
            len: 0,
        }
    }

    fn mask(&self) -> usize {
        self.mask
    }

    /// The slot a word's probe starts at: the low bits of its [`spread`].
    fn home(&self, id: WordId) -> usize {
        spread(id) as usize & self.mask
    }

    /// The slot holding `id`.
    #[inline]
    fn find(&self, id: WordId) -> Option<usize> {
        self.find_spread(id, spread(id))
    }

    /// The slot holding `id`, whose [`spread`] is `s`.
    #[inline(always)]
    fn find_spread(&self, id: WordId, s: u32) -> Option<usize> {
        let mask = self.mask;
        let mut i = s as usize & mask;
        // At most half full, so an empty slot ends every probe; the bound is a safeguard.
        for _ in 0..self.ids.len() {
            let word = *self.ids.get(i)?;
            if word == id {
                return Some(i);
            }
            if word == NO_WORD {
                return None;
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Puts `node` under `id`, which is not in the table; grows the table first if it would
    /// be more than half full.
    fn insert_new(&mut self, id: WordId, node: Node<T>) -> &mut Node<T> {
        if (self.len + 1) * 2 > self.ids.len() {
            let old = std::mem::replace(self, Many::with_capacity(self.ids.len() * 2));
            for (word, node) in old.ids.iter().zip(old.nodes.into_vec()) {
                if *word != NO_WORD {
                    self.insert_new(*word, node);
                }
            }
        }
        let mask = self.mask();
        let mut i = self.home(id);
        while self.ids[i] != NO_WORD {
            i = (i + 1) & mask;
        }
        self.ids[i] = id;
        self.nodes[i] = node;
        self.len += 1;
        &mut self.nodes[i]
    }

    /// Removes `id`, shifting later entries of its probe run back so no probe stops early.
    fn remove(&mut self, id: WordId) {
        let Some(mut hole) = self.find(id) else {
            return;
        };
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let word = self.ids[j];
            if word == NO_WORD {
                break;
            }
            // The entry at `j` may fill the hole unless its home lies after the hole (up to j).
            let home = self.home(word);
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.ids[hole] = word;
                self.nodes.swap(hole, j);
                hole = j;
            }
        }
        self.ids[hole] = NO_WORD;
        self.nodes[hole] = Node::new();
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(c: &Children<u32>, id: WordId) -> Option<Vec<u32>> {
        c.get(id).map(|n| n.values.as_slice().to_vec())
    }

    #[test]
    fn children_move_from_the_slice_to_the_table_and_stay_reachable() {
        let mut c: Children<u32> = Children::new();
        for id in 0..10 {
            let (node, made) = c.get_or_insert(id);
            assert!(made);
            node.values.push(id * 10);
            assert!(!c.get_or_insert(id).1, "made once");
            if id < 4 {
                assert!(matches!(c, Children::Few { .. }));
            } else {
                assert!(matches!(c, Children::Many { .. }));
            }
        }
        for id in 0..10 {
            assert_eq!(values(&c, id), Some(vec![id * 10]));
        }
        assert_eq!(values(&c, 10), None);
        assert_eq!(c.nodes().count(), 10);
        for id in [3, 0, 9, 5] {
            c.remove(id);
            assert_eq!(values(&c, id), None);
        }
        for id in [1, 2, 4, 6, 7, 8] {
            assert_eq!(values(&c, id), Some(vec![id * 10]), "moved, still found");
        }
        for id in 0..10 {
            c.remove(id);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn removing_from_the_slice_keeps_ids_and_nodes_in_step() {
        let mut c: Children<u32> = Children::new();
        for id in [5, 6, 7] {
            c.get_or_insert(id).0.values.push(id);
        }
        c.remove(6);
        c.remove(9);
        assert_eq!(values(&c, 5), Some(vec![5]));
        assert_eq!(values(&c, 6), None);
        assert_eq!(values(&c, 7), Some(vec![7]));
        assert_eq!(values(&c, NO_WORD), None);
        c.get_or_insert(8).0.values.push(8);
        assert_eq!(values(&c, 8), Some(vec![8]));
        assert_eq!(c.nodes().count(), 3);
    }

    #[test]
    fn a_wide_table_finds_every_child_after_removals() {
        let mut c: Children<u32> = Children::new();
        let n = 4 * EXACT_FILTER as u32;
        for id in 0..n {
            c.get_or_insert(id).0.values.push(id);
        }
        for id in (0..n).filter(|id| id % 3 == 0) {
            c.remove(id);
        }
        for id in 0..n + 10 {
            let want = (id < n && id % 3 != 0).then(|| vec![id]);
            assert_eq!(values(&c, id), want, "{id}");
        }
    }

    proptest! {
        /// Random inserts and removals (many ids sharing probe runs) against a map: every id
        /// is found exactly when it was inserted and not removed since, with its own node.
        #[test]
        fn children_agree_with_a_map(ops in proptest::collection::vec((any::<bool>(), 0..48u32), 0..200)) {
            let mut c: Children<u32> = Children::new();
            let mut model = std::collections::BTreeMap::new();
            for (insert, id) in ops {
                if insert {
                    let (node, made) = c.get_or_insert(id);
                    prop_assert_eq!(made, !model.contains_key(&id));
                    if made {
                        node.values.push(id);
                        model.insert(id, id);
                    }
                } else {
                    c.remove(id);
                    model.remove(&id);
                }
                for probe in 0..48 {
                    prop_assert_eq!(values(&c, probe), model.get(&probe).map(|v| vec![*v]));
                }
                // Looked up as a run of subject words, unknown ones among them, the same.
                let words: Vec<WordId> = (0..48).chain([UNKNOWN, 3, UNKNOWN]).collect();
                let mut each = Vec::new();
                c.find_each(&words, |k, node| each.push((k, node.values.as_slice().to_vec())));
                let want: Vec<(usize, Vec<u32>)> = words
                    .iter()
                    .enumerate()
                    .filter_map(|(k, id)| model.get(id).map(|v| (k, vec![*v])))
                    .collect();
                prop_assert_eq!(each, want);
                prop_assert_eq!(c.nodes().count(), model.len());
                prop_assert_eq!(c.is_empty(), model.is_empty());
                // The filter holds the bits of the children there are, and (the table being
                // narrow) no others.
                if let Children::Many { filter, table } = &c {
                    let want = model.keys().fold(0, |f, id| f | filter_bit(*id));
                    prop_assert!(table.ids.len() <= EXACT_FILTER);
                    prop_assert_eq!(*filter, want);
                }
            }
        }
    }
}
