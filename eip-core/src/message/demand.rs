//! What of a JSON payload its readers need: a tree of object fields by name, array items by
//! position and "every child", ending in *whole* values.
//!
//! A reader (a JSONPath, a predicate, a template, a router's clauses together) says once, when
//! it is built, which parts of a payload it can look at; the payload is then read from its bytes
//! building only those ([`super::projection`]). The rules a reader relies on:
//!
//! - A part marked [whole](Demand::whole) is built exactly as a full parse builds it.
//! - An object on the way to a demanded part keeps the demanded fields (a field given twice:
//!   its last value, as in a full parse); an array keeps the demanded items at their positions
//!   (`null` in place of an item before them that nobody reads). With [`each`](Demand::each),
//!   every field or item is kept.
//! - A scalar where the demand expects an object or an array is read as `null`: a name, an
//!   index or a wildcard selects nothing in either.
//!
//! So a reader that only follows its demanded names and positions, or every child where it
//! demanded each, sees the same values as on the full parse; what it reads to the end (a
//! comparison's operand, a template's value) must be demanded whole.

use super::json_node::same_name;

/// What of a JSON value is read. The default reads nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Demand {
    node: Node,
}

/// One value's demand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// All of it, as a full parse builds it.
    Whole,
    /// Some of its children (none: nothing of it).
    Parts(Parts),
}

impl Default for Node {
    fn default() -> Self {
        Node::Parts(Parts::default())
    }
}

/// The children of an object or array that are read. A named field or indexed item already
/// includes what [`each`](Parts::each) asks of every child, so a lookup is a single find.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Parts {
    fields: Vec<(Box<str>, Node)>,
    items: Vec<(usize, Node)>,
    each: Option<Box<Node>>,
}

impl Demand {
    /// Nothing of the value.
    pub(crate) fn nothing() -> Demand {
        Demand::default()
    }

    /// All of the value.
    pub(crate) fn whole() -> Demand {
        Demand { node: Node::Whole }
    }

    /// The field `name` of an object, and of it what `below` says.
    pub(crate) fn field(name: &str, below: Demand) -> Demand {
        Demand::parts(Parts {
            fields: vec![(name.into(), below.node)],
            ..Parts::default()
        })
    }

    /// The item at `index` of an array, and of it what `below` says.
    pub(crate) fn item(index: usize, below: Demand) -> Demand {
        Demand::parts(Parts {
            items: vec![(index, below.node)],
            ..Parts::default()
        })
    }

    /// Every field of an object or item of an array, and of each what `below` says.
    pub(crate) fn each(below: Demand) -> Demand {
        Demand::parts(Parts {
            each: Some(Box::new(below.node)),
            ..Parts::default()
        })
    }

    fn parts(parts: Parts) -> Demand {
        Demand {
            node: Node::Parts(parts),
        }
    }

    /// Whether all of the value is read.
    pub(crate) fn is_whole(&self) -> bool {
        matches!(self.node, Node::Whole)
    }

    /// Whether nothing of the value is read.
    #[cfg(test)]
    pub(crate) fn is_nothing(&self) -> bool {
        matches!(&self.node, Node::Parts(p) if p.is_empty())
    }

    /// What this or `other` reads.
    pub(crate) fn union(mut self, other: &Demand) -> Demand {
        self.node.add(&other.node);
        self
    }

    pub(super) fn node(&self) -> &Node {
        &self.node
    }
}

impl Node {
    /// Adds what `other` reads to what this reads.
    fn add(&mut self, other: &Node) {
        match (&mut *self, other) {
            (Node::Whole, _) => {}
            (_, Node::Whole) => *self = Node::Whole,
            (Node::Parts(mine), Node::Parts(theirs)) => mine.add(theirs),
        }
    }
}

impl Parts {
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.items.is_empty() && self.each.is_none()
    }

    fn add(&mut self, other: &Parts) {
        for (name, node) in &other.fields {
            match self.fields.iter_mut().find(|(n, _)| n == name) {
                Some((_, mine)) => mine.add(node),
                None => self.fields.push((name.clone(), node.clone())),
            }
        }
        for (index, node) in &other.items {
            match self.items.iter_mut().find(|(i, _)| i == index) {
                Some((_, mine)) => mine.add(node),
                None => self.items.push((*index, node.clone())),
            }
        }
        match (&mut self.each, &other.each) {
            (Some(mine), Some(theirs)) => mine.add(theirs),
            (None, Some(theirs)) => self.each = Some(theirs.clone()),
            (_, None) => {}
        }
        // Fold `each` into every named child, so that a lookup needs no union.
        if let Some(each) = &self.each {
            let fields = self.fields.iter_mut().map(|(_, node)| node);
            for node in fields.chain(self.items.iter_mut().map(|(_, node)| node)) {
                node.add(each);
            }
        }
    }

    /// What is read of the field `name`, if anything.
    pub(super) fn field(&self, name: &str) -> Option<&Node> {
        match self.fields.iter().find(|(n, _)| &**n == name) {
            Some((_, node)) => Some(node),
            None => self.each.as_deref(),
        }
    }

    /// [`field`](Parts::field) for a name given as its bytes, as written in a payload without
    /// escapes; with the name as this demand spells it when it names the field (so the caller
    /// need not decode the bytes), `None` in its place when only `each` reads it.
    pub(super) fn field_by_bytes(&self, name: &[u8]) -> Option<(Option<&str>, &Node)> {
        match self
            .fields
            .iter()
            .find(|(n, _)| same_name(n.as_bytes(), name))
        {
            Some((n, node)) => Some((Some(n), node)),
            None => self.each.as_deref().map(|node| (None, node)),
        }
    }

    /// What is read of the item at `index`, if anything.
    pub(super) fn item(&self, index: usize) -> Option<&Node> {
        match self.items.iter().find(|(i, _)| *i == index) {
            Some((_, node)) => Some(node),
            None => self.each.as_deref(),
        }
    }

    /// How many leading items of an array keep their place: all with `each`, else up to the
    /// last one demanded.
    pub(super) fn kept_items(&self) -> usize {
        if self.each.is_some() {
            return usize::MAX;
        }
        self.items
            .iter()
            .map(|(i, _)| i.saturating_add(1))
            .max()
            .unwrap_or(0)
    }
}

/// The demand of a path of field names ending in a whole value (for tests).
#[cfg(test)]
pub(super) fn path(names: &[&str]) -> Demand {
    names
        .iter()
        .rev()
        .fold(Demand::whole(), |below, name| Demand::field(name, below))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_keeps_what_either_reads() {
        let d = path(&["a", "b"])
            .union(&path(&["a", "c"]))
            .union(&path(&["d"]));
        let Node::Parts(root) = d.node() else {
            panic!("root is parts");
        };
        let Some(Node::Parts(a)) = root.field("a") else {
            panic!("a is parts");
        };
        assert_eq!(a.field("b"), Some(&Node::Whole));
        assert_eq!(a.field("c"), Some(&Node::Whole));
        assert_eq!(a.field("x"), None);
        assert_eq!(root.field("d"), Some(&Node::Whole));
        assert!(path(&["a"]).union(&Demand::whole()).is_whole());
        assert!(Demand::nothing().union(&Demand::nothing()).is_nothing());
    }

    #[test]
    fn each_reaches_named_children_too() {
        let d = Demand::field("x", path(&["a"])).union(&Demand::each(path(&["b"])));
        let Node::Parts(root) = d.node() else {
            panic!("root is parts");
        };
        let Some(Node::Parts(x)) = root.field("x") else {
            panic!("x is parts");
        };
        assert!(x.field("a").is_some() && x.field("b").is_some());
        let Some(Node::Parts(y)) = root.field("y") else {
            panic!("y is read through each");
        };
        assert!(y.field("a").is_none() && y.field("b").is_some());
    }

    #[test]
    fn items_keep_their_place_up_to_the_last_demanded() {
        let d = Demand::item(3, Demand::whole()).union(&Demand::item(1, Demand::whole()));
        let Node::Parts(parts) = d.node() else {
            panic!("parts");
        };
        assert_eq!(parts.kept_items(), 4);
        assert_eq!(parts.item(0), None);
        let Node::Parts(all) = Demand::each(Demand::nothing()).node else {
            panic!("parts");
        };
        assert_eq!(all.kept_items(), usize::MAX);
    }
}
