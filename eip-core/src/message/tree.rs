//! A projected payload: the parts of a JSON document a [`Demand`](super::Demand) reads, held
//! in two flat vectors instead of a tree of `serde_json::Value`s.
//!
//! A projection used to build `Value`s: a map with its nodes and a `String` per key, a `String`
//! per string. For a router reading a dozen fields of a 1 KiB order that was some forty
//! allocations and frees per message, a third of its cost. Here every node is a [`Slot`] in one
//! vector and every member of an object or array a [`Link`] in another; a string without
//! escapes borrows its bytes from the payload. A reading thus allocates two vectors, whatever
//! it reads.
//!
//! The tree answers the questions the predicate language asks through
//! [`JsonNode`](super::JsonNode), as a `&Value` does, with the same answers: an object's members
//! are kept in key order with the last of a duplicated key winning, as in serde_json's map.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use super::json_node::{JsonNode, Kind, same_name};

/// A projected document; see the [module](self).
#[derive(Debug)]
pub(crate) struct Tree<'p> {
    nodes: Vec<Slot<'p>>,
    /// The members of every container, each container's contiguous.
    links: Vec<Link<'p>>,
    /// Members of containers still open, in document order, moved to `links` when their
    /// container closes.
    open: Vec<Link<'p>>,
}

/// One node.
#[derive(Debug)]
enum Slot<'p> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'p, str>),
    Array(Members),
    Object(Members),
}

/// What a node out of range reads as (none is: every index comes from the tree).
static NULL: Slot<'static> = Slot::Null;

/// Where a container's members are in [`Tree::links`].
#[derive(Debug, Clone, Copy)]
struct Members {
    start: u32,
    len: u32,
}

/// A member: an object's key (empty for an array's item) and the node.
#[derive(Debug)]
struct Link<'p> {
    key: Cow<'p, str>,
    node: u32,
}

/// Where a container's members begin among the open ones ([`Tree::open_container`]).
pub(crate) struct Mark(usize);

impl Default for Tree<'_> {
    /// An empty tree with room for the nodes a router's reading of an order holds (a few
    /// dozen), so that one seldom grows.
    fn default() -> Self {
        Tree {
            nodes: Vec::with_capacity(32),
            links: Vec::with_capacity(32),
            open: Vec::with_capacity(16),
        }
    }
}

impl<'p> Tree<'p> {
    /// Adds a scalar: `null`.
    pub(crate) fn null(&mut self) -> u32 {
        self.push(Slot::Null)
    }

    /// Adds a scalar: a boolean.
    pub(crate) fn bool(&mut self, value: bool) -> u32 {
        self.push(Slot::Bool(value))
    }

    /// Adds a scalar: a number.
    pub(crate) fn number(&mut self, value: Number) -> u32 {
        self.push(Slot::Number(value))
    }

    /// Adds a scalar: a string.
    pub(crate) fn string(&mut self, value: Cow<'p, str>) -> u32 {
        self.push(Slot::Str(value))
    }

    /// Starts a container: the members added until it closes are its own.
    pub(crate) fn open_container(&self) -> Mark {
        Mark(self.open.len())
    }

    /// Adds a member to the innermost open container: `key` is empty for an array's item.
    pub(crate) fn member(&mut self, key: Cow<'p, str>, node: u32) {
        self.open.push(Link { key, node });
    }

    /// Closes the array opened at `mark`.
    pub(crate) fn close_array(&mut self, mark: Mark) -> Option<u32> {
        let members = self.settle(mark)?;
        Some(self.push(Slot::Array(members)))
    }

    /// Closes the object opened at `mark`: its members in key order, the last of a key given
    /// twice kept.
    pub(crate) fn close_object(&mut self, mark: Mark) -> Option<u32> {
        let fields = &mut self.open[mark.0..];
        // Stable: of equal keys the last written stays last, and is the one kept.
        fields.sort_by(|a, b| a.key.cmp(&b.key));
        let mut kept = mark.0;
        for at in mark.0..self.open.len() {
            let last_of_its_key = self
                .open
                .get(at + 1)
                .is_none_or(|next| next.key != self.open[at].key);
            if last_of_its_key {
                self.open.swap(kept, at);
                kept += 1;
            }
        }
        self.open.truncate(kept);
        let members = self.settle(mark)?;
        Some(self.push(Slot::Object(members)))
    }

    /// Moves the members open since `mark` to `links`; `None` past `u32` (left to serde_json).
    fn settle(&mut self, mark: Mark) -> Option<Members> {
        let start = u32::try_from(self.links.len()).ok()?;
        let len = u32::try_from(self.open.len() - mark.0).ok()?;
        self.links.extend(self.open.drain(mark.0..));
        Some(Members { start, len })
    }

    fn push(&mut self, slot: Slot<'p>) -> u32 {
        self.nodes.push(slot);
        // A payload has fewer nodes than bytes, and is far below 4 GiB.
        u32::try_from(self.nodes.len() - 1).unwrap_or(u32::MAX)
    }

    /// The node added last: the document once the whole payload is read.
    pub(crate) fn root(&self) -> TreeNode<'_> {
        TreeNode {
            tree: self,
            at: u32::try_from(self.nodes.len().saturating_sub(1)).unwrap_or(u32::MAX),
        }
    }

    fn links_of(&self, members: Members) -> &[Link<'p>] {
        let start = members.start as usize;
        self.links
            .get(start..start + members.len as usize)
            .unwrap_or_default()
    }
}

/// A node of a [`Tree`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeNode<'a> {
    tree: &'a Tree<'a>,
    at: u32,
}

impl<'a> TreeNode<'a> {
    fn slot(self) -> &'a Slot<'a> {
        self.tree.nodes.get(self.at as usize).unwrap_or(&NULL)
    }

    fn at(self, node: u32) -> TreeNode<'a> {
        TreeNode {
            tree: self.tree,
            at: node,
        }
    }

    fn links(self) -> &'a [Link<'a>] {
        match self.slot() {
            Slot::Array(members) | Slot::Object(members) => self.tree.links_of(*members),
            _ => &[],
        }
    }
}

impl<'a> JsonNode<'a> for TreeNode<'a> {
    fn kind(self) -> Kind<'a> {
        match self.slot() {
            Slot::Null => Kind::Null,
            Slot::Bool(b) => Kind::Bool(*b),
            Slot::Number(n) => Kind::Number(n),
            Slot::Str(s) => Kind::Str(s),
            Slot::Array(members) => Kind::Array(members.len as usize),
            Slot::Object(members) => Kind::Object(members.len as usize),
        }
    }

    fn field(self, name: &str) -> Option<Self> {
        let Slot::Object(members) = self.slot() else {
            return None;
        };
        // Linear: a projected object holds the few fields read of it, and an equal length
        // is rare among them, so most keys are passed over without comparing their bytes.
        let links = self.tree.links_of(*members);
        let link = links
            .iter()
            .find(|link| same_name(link.key.as_bytes(), name.as_bytes()))?;
        Some(self.at(link.node))
    }

    fn item(self, index: usize) -> Option<Self> {
        let Slot::Array(members) = self.slot() else {
            return None;
        };
        let link = self.tree.links_of(*members).get(index)?;
        Some(self.at(link.node))
    }

    fn children(self) -> impl Iterator<Item = Self> {
        self.links().iter().map(move |link| self.at(link.node))
    }

    fn members(self) -> impl Iterator<Item = (&'a str, Self)> {
        self.links()
            .iter()
            .map(move |link| (&*link.key, self.at(link.node)))
    }

    fn to_value(self) -> Value {
        match self.slot() {
            Slot::Null => Value::Null,
            Slot::Bool(b) => Value::Bool(*b),
            Slot::Number(n) => Value::Number(n.clone()),
            Slot::Str(s) => Value::String(s.clone().into_owned()),
            Slot::Array(_) => Value::Array(self.children().map(Self::to_value).collect()),
            Slot::Object(_) => Value::Object(
                self.members()
                    .map(|(key, node)| (key.to_owned(), node.to_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `{"b": 1, "a": 2, "b": 3, "c": [true, null], "b": "last"}` built by hand.
    fn object_with_repeated_keys() -> Tree<'static> {
        let mut tree = Tree::default();
        let outer = tree.open_container();
        for (key, value) in [("b", 1u64), ("a", 2), ("b", 3)] {
            let node = tree.number(value.into());
            tree.member(key.into(), node);
        }
        let inner = tree.open_container();
        let yes = tree.bool(true);
        tree.member("".into(), yes);
        let null = tree.null();
        tree.member("".into(), null);
        let array = tree.close_array(inner).unwrap();
        tree.member("c".into(), array);
        let last = tree.string("last".into());
        tree.member("b".into(), last);
        tree.close_object(outer).unwrap();
        tree
    }

    #[test]
    fn an_object_keeps_its_keys_in_order_and_the_last_of_a_repeated_one() {
        let tree = object_with_repeated_keys();
        let root = tree.root();
        assert_eq!(
            root.to_value(),
            json!({"a": 2, "b": "last", "c": [true, null]})
        );
        let keys: Vec<&str> = root.members().map(|(key, _)| key).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert!(matches!(root.kind(), Kind::Object(3)));
        assert!(matches!(
            root.field("b").map(JsonNode::kind),
            Some(Kind::Str("last"))
        ));
        assert!(root.field("d").is_none());
        let array = root.field("c").unwrap();
        assert!(matches!(
            array.item(0).map(JsonNode::kind),
            Some(Kind::Bool(true))
        ));
        assert!(array.item(2).is_none());
        assert!(root.item(0).is_none(), "an object has no items");
    }
}
