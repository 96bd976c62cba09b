//! A node's literal children, labelled with word ids.

use super::Node;
#[cfg(any(doc, test))]
use super::words::UNKNOWN;
use super::words::WordId;

/// The children of a node reached through literal words.
///
/// Most nodes have one or two. Up to [`FEW`] are kept in a slice, with their word ids inline in
/// the parent: looking for a word that is not there reads nothing beyond the parent, and
/// finding one reads just that child. Beyond that, [`Many`]: a hash table of [`Group`]s, the
/// ids of fifteen children in one cache line and their nodes after it.
///
/// A lookup compares all the ids of a slice or group at once, so the one branch it takes that
/// depends on the words is whether the word is there. (A search meets words it can not
/// predict: when a table was probed id by id behind a filter of bits, the branches on the
/// filter, on each id compared and on each empty slot met were mispredicted several times a
/// subject.)
#[derive(Clone)]
pub(super) enum Children<T> {
    Few {
        /// The ids of `nodes`, in order; unused places hold [`NO_WORD`].
        ids: [WordId; FEW],
        nodes: Box<[Node<T>]>,
    },
    Many(Many<T>),
}

/// A multiplicative hash of a word's id: its low bits pick the home group ([`Many::home`]).
/// Ids are dense, and multiplying by an odd number maps ids that differ in their low bits to
/// different groups.
#[inline(always)]
fn spread(id: WordId) -> u32 {
    id.wrapping_mul(0x9e37_79b9)
}

/// Children kept in a slice at most.
const FEW: usize = 4;

/// Fills the unused places of [`Children::Few`] and the empty lanes of a [`Group`]: never a
/// word's id (ids are dense from 0).
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
            Children::Many(table) => table.len == 0,
        }
    }

    /// The child for word `id`.
    #[inline]
    pub(super) fn get(&self, id: WordId) -> Option<&Node<T>> {
        match self {
            Children::Few { ids, nodes } => nodes.get(few_position(ids, id)?),
            Children::Many(table) => table.node(table.find(id)?),
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
            Children::Many(table) => {
                for (k, &id) in words.iter().enumerate() {
                    if let Some(child) = table.find(id).and_then(|at| table.node(at)) {
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
            Children::Many(table) => {
                let at = table.find(id)?;
                Some(table.node_mut(at))
            }
        }
    }

    /// The child for word `id`, and whether it was made now (empty).
    pub(super) fn get_or_insert(&mut self, id: WordId) -> (&mut Node<T>, bool) {
        if let Children::Few { ids, nodes } = self
            && nodes.len() == FEW
            && !ids.contains(&id)
        {
            let mut many = Many::with_groups(1);
            for (word, node) in ids.iter().zip(std::mem::take(nodes).into_vec()) {
                many.insert_new(*word, node);
            }
            *self = Children::Many(many);
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
            Children::Many(table) => match table.find(id) {
                Some(at) => (table.node_mut(at), false),
                None => (table.insert_new(id, Node::new()), true),
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
            Children::Many(table) => table.remove(id),
        }
    }

    /// Every child.
    pub(super) fn nodes(&self) -> Box<dyn Iterator<Item = &Node<T>> + '_> {
        match self {
            Children::Few { nodes, .. } => Box::new(nodes.iter()),
            Children::Many(many) => Box::new(many.groups.iter().flat_map(|g| {
                g.ids
                    .ids()
                    .iter()
                    .zip(g.nodes.iter())
                    .filter(|(id, _)| **id != NO_WORD)
                    .map(|(_, node)| node)
            })),
        }
    }
}

/// Where `id` is in `ids`: all four compared at once, so that the one branch taken is on
/// whether the word is there, not on where.
#[inline]
fn few_position(ids: &[WordId; FEW], id: WordId) -> Option<usize> {
    let found = equal_four(*ids, id);
    (found != 0).then(|| found.trailing_zeros() as usize)
}

/// The children a [`Group`] holds.
const LANES: usize = 15;

/// The ids of a [`Group`]'s children, one cache line: [`NO_WORD`] in an empty lane, and in the
/// last place how many words whose home is this group live in a later one because this one
/// was full when they came. A lookup goes on to the next group only while that count is not
/// zero, so a word that is not there is ruled out in its home group, almost always.
#[derive(Clone)]
#[repr(C, align(64))]
struct Lanes([WordId; LANES + 1]);

impl Lanes {
    const EMPTY: Lanes = {
        let mut ids = [NO_WORD; LANES + 1];
        ids[LANES] = 0;
        Lanes(ids)
    };

    /// A bit for each lane holding `id`: the sixteen places are compared at once, without a
    /// branch (the count's place is compared too, and its bit dropped).
    #[inline(always)]
    fn of(&self, id: WordId) -> u32 {
        let w = &self.0;
        let mut all = 0;
        for c in 0..4 {
            let four = [w[4 * c], w[4 * c + 1], w[4 * c + 2], w[4 * c + 3]];
            all |= equal_four(four, id) << (4 * c);
        }
        all & ((1 << LANES) - 1)
    }

    fn ids(&self) -> &[WordId] {
        &self.0[..LANES]
    }

    fn ids_mut(&mut self) -> &mut [WordId] {
        &mut self.0[..LANES]
    }

    fn overflow(&self) -> u32 {
        self.0[LANES]
    }

    fn overflow_mut(&mut self) -> &mut u32 {
        &mut self.0[LANES]
    }
}

/// A bit for each of `four` equal to `id`: one comparison of four lanes, its results' top bits
/// gathered (the compiler's own vectorising of the portable form below gathers them one by
/// one).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn equal_four(four: [WordId; 4], id: WordId) -> u32 {
    use std::arch::x86_64::{
        _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_movemask_ps, _mm_set_epi32, _mm_set1_epi32,
    };
    // The ids as the intrinsics take them: the same bits, signed.
    let [a, b, c, d] = four.map(|w| w as i32);
    // SAFETY: these read and write registers only, and need SSE2, which this is compiled
    // for (the `cfg` above).
    unsafe {
        let equal = _mm_cmpeq_epi32(_mm_set_epi32(d, c, b, a), _mm_set1_epi32(id as i32));
        _mm_movemask_ps(_mm_castsi128_ps(equal)) as u32
    }
}

/// A bit for each of `four` equal to `id`.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn equal_four(four: [WordId; 4], id: WordId) -> u32 {
    four.iter()
        .enumerate()
        .fold(0, |found, (i, w)| found | u32::from(*w == id) << i)
}

/// A bucket of a [`Many`]'s hash table: the ids, then the nodes, so that a node is found at a
/// fixed distance from the line of ids that names it, without a table header to read first.
#[derive(Clone)]
#[repr(C)]
struct Group<T> {
    ids: Lanes,
    /// The node of each lane (an empty node where the lane is empty).
    nodes: [Node<T>; LANES],
}

impl<T> Group<T> {
    fn empty() -> Self {
        Group {
            ids: Lanes::EMPTY,
            nodes: std::array::from_fn(|_| Node::new()),
        }
    }
}

/// Many children: an open-addressing table of [`Group`]s probed from a word's home group, at
/// most half full, so a group holds 7 or 8 children on average and spills into the next one
/// rarely. Held inline in the parent node: a lookup reads the home group's ids, then (for a
/// word that is there) its node.
#[derive(Clone)]
pub(super) struct Many<T> {
    /// A power of two of them.
    groups: Box<[Group<T>]>,
    len: u32,
}

impl<T> Many<T> {
    fn with_groups(groups: usize) -> Self {
        let groups = groups.next_power_of_two();
        Many {
            groups: (0..groups).map(|_| Group::empty()).collect(),
            len: 0,
        }
    }

    /// The group where a word's probe starts.
    #[inline(always)]
    fn home(&self, id: WordId) -> usize {
        spread(id) as usize & (self.groups.len() - 1)
    }

    #[inline(always)]
    fn node(&self, (g, lane): (usize, usize)) -> Option<&Node<T>> {
        self.groups.get(g)?.nodes.get(lane)
    }

    /// The node at a place [`find`](Self::find) gave.
    fn node_mut(&mut self, (g, lane): (usize, usize)) -> &mut Node<T> {
        &mut self.groups[g].nodes[lane]
    }

    /// The group and lane holding `id`.
    #[inline(always)]
    fn find(&self, id: WordId) -> Option<(usize, usize)> {
        if id == NO_WORD {
            return None;
        }
        let mask = self.groups.len() - 1;
        let mut g = self.home(id);
        // The count of spilled words ends every probe; the bound is a safeguard.
        for _ in 0..self.groups.len() {
            let lanes = &self.groups.get(g)?.ids;
            let found = lanes.of(id);
            if found != 0 {
                return Some((g, found.trailing_zeros() as usize));
            }
            if lanes.overflow() == 0 {
                return None;
            }
            g = (g + 1) & mask;
        }
        None
    }

    /// Puts `node` under `id`, which is not in the table; grows the table first if it would
    /// be more than half full.
    fn insert_new(&mut self, id: WordId, node: Node<T>) -> &mut Node<T> {
        if (self.len as usize + 1) * 2 > self.groups.len() * LANES {
            let old = std::mem::replace(self, Many::with_groups(self.groups.len() * 2));
            for group in old.groups.into_vec() {
                for (word, node) in group.ids.ids().iter().copied().zip(group.nodes) {
                    if word != NO_WORD {
                        self.insert_new(word, node);
                    }
                }
            }
        }
        let mask = self.groups.len() - 1;
        let mut g = self.home(id);
        loop {
            let group = &mut self.groups[g];
            if let Some(lane) = group.ids.ids().iter().position(|w| *w == NO_WORD) {
                group.ids.ids_mut()[lane] = id;
                group.nodes[lane] = node;
                self.len += 1;
                return &mut self.groups[g].nodes[lane];
            }
            // At most half full: some group has room.
            *group.ids.overflow_mut() += 1;
            g = (g + 1) & mask;
        }
    }

    /// Removes `id`, and its count from the groups its probe passed.
    fn remove(&mut self, id: WordId) {
        let Some((g, lane)) = self.find(id) else {
            return;
        };
        let group = &mut self.groups[g];
        group.ids.ids_mut()[lane] = NO_WORD;
        group.nodes[lane] = Node::new();
        self.len -= 1;
        let mask = self.groups.len() - 1;
        let mut passed = self.home(id);
        while passed != g {
            *self.groups[passed].ids.overflow_mut() -= 1;
            passed = (passed + 1) & mask;
        }
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
        let n = 1024;
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
        /// Random inserts and removals against a map: every id is found exactly when it was
        /// inserted and not removed since, with its own node. Ids a multiple of 8 or 64 apart
        /// share their home bucket, so full buckets spill into the next ones.
        #[test]
        fn children_agree_with_a_map(
            ops in proptest::collection::vec((any::<bool>(), 0..48u32), 0..200),
            stride in prop_oneof![Just(1u32), Just(8), Just(64)],
        ) {
            let mut c: Children<u32> = Children::new();
            let mut model = std::collections::BTreeMap::new();
            let ops = ops.into_iter().map(|(insert, k)| (insert, k * stride));
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
                let absent = (0..48).map(|k| k * stride + stride / 2 + 1);
                for probe in (0..48).map(|k| k * stride).chain(absent) {
                    prop_assert_eq!(values(&c, probe), model.get(&probe).map(|v| vec![*v]));
                }
                // Looked up as a run of subject words, unknown ones among them, the same.
                let words: Vec<WordId> =
                    (0..48).map(|k| k * stride).chain([UNKNOWN, 3 * stride, UNKNOWN]).collect();
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
                // Each bucket counts the words that passed it, full, on the way to theirs.
                if let Children::Many(table) = &c {
                    let mask = table.groups.len() - 1;
                    let mut want = vec![0u32; table.groups.len()];
                    for (b, group) in table.groups.iter().enumerate() {
                        for id in group.ids.ids().iter().filter(|w| **w != NO_WORD) {
                            let mut passed = table.home(*id);
                            while passed != b {
                                want[passed] += 1;
                                passed = (passed + 1) & mask;
                            }
                        }
                    }
                    let counts: Vec<u32> = table.groups.iter().map(|g| g.ids.overflow()).collect();
                    prop_assert_eq!(counts, want);
                    prop_assert_eq!(table.len as usize, model.len());
                }
            }
        }
    }
}
