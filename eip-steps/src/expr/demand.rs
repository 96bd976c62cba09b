//! Which parts of the payload a jq program can ever read: its [`Demand`], found when the
//! program is compiled, so that the payload parser builds only those parts as jq values.
//!
//! The analysis walks jaq's syntax tree backwards: given what is read of a term's *output*, it
//! says what the term reads of its *input* (`.a | .b` reads `{a: {b}}`; `.items | map(.price)`
//! reads `{items: [{price}]}`). It knows paths with literal keys and numbers (`.a`, `."a b"`,
//! `.[0]`, `.[]`, `.[1:]`), object and array construction, `|`, `,`, `as` bindings and
//! destructuring, `reduce` and `foreach` (to a fixed point), `if`, `//`, `and`, `or`, `try`,
//! `label`, string interpolation, and definitions, the user's and the standard library's
//! written in jq (`map`, `select`, `add`, `first`, ...), by following them into their bodies
//! with their arguments. Everything else reads the whole of the value it is given: a native
//! filter (`length`, `keys`, `has`, `tojson`, `path`, `getpath` through it, `@base64`, ...), an
//! operator (`+`, `==`, unary `-`), `..`, an assignment or update (`=`, `|=`, `del`), an index
//! that is not a literal (`.[$k]`), a recursive definition called from inside itself, and
//! anything past the analysis' step budget.
//!
//! What a demand keeps of a value (see [`Demand`]): an object keeps only the keys read (all of
//! them, in their order, when it is iterated), an array keeps all its items (each as read);
//! numbers, strings, booleans and null are kept whole, so that a value a jq error quotes is the
//! value read. Where an access would fail on a value and the error would quote it (`.a` on an
//! array, `.[0]` on an object), the value is kept whole. Shapes only the type and truthiness of
//! which are read (`if .a then`, `.a // 1`) keep their kind: an object becomes `{}`, an array
//! `[]`.

mod analysis;

/// How much of a value a program reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Demand {
    /// Nothing: the value is never looked at (its parent's shape may be).
    #[default]
    Nothing,
    /// Some of it (see [`Parts`]).
    Parts(Box<Parts>),
    /// All of it.
    All,
}

/// What is read inside a value that is not read whole. Its kind (object, array, string, ...) is
/// always kept; a scalar is always kept whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Parts {
    /// Object fields read by name, by their unescaped key. After [`Demand::finish`], each also
    /// holds what `iter` reads.
    pub(crate) fields: Named,
    /// What is read of every item of an array or value of an object it iterates (`.[]`).
    pub(crate) iter: Option<Demand>,
    /// What is read of an array's items by number or slice (`.[0]`, `.[1:]`): an object indexed
    /// so fails, quoting itself, and is kept whole.
    pub(crate) index: Option<Demand>,
    /// What is read of an array's items either way (set by [`Demand::finish`]); `None`: the
    /// array's items are not read, not even counted.
    pub(crate) items: Option<Demand>,
}

impl Demand {
    fn parts(parts: Parts) -> Demand {
        Demand::Parts(Box::new(parts))
    }

    /// Only the kind and truthiness of the value.
    fn shape() -> Demand {
        Demand::parts(Parts::default())
    }

    fn field(key: Vec<u8>, then: Demand) -> Demand {
        Demand::parts(Parts {
            fields: Named::one(key.into_boxed_slice(), then),
            ..Parts::default()
        })
    }

    fn iter(then: Demand) -> Demand {
        Demand::parts(Parts {
            iter: Some(then),
            ..Parts::default()
        })
    }

    fn index(then: Demand) -> Demand {
        Demand::parts(Parts {
            index: Some(then),
            ..Parts::default()
        })
    }

    /// What any of `programs` reads (for one parse shared by several programs).
    pub(crate) fn of_all<'a>(programs: impl IntoIterator<Item = &'a Demand>) -> Demand {
        let read = programs
            .into_iter()
            .fold(Demand::Nothing, |read, d| read.union(d.clone()));
        read.finish(MAX_DEMAND_DEPTH)
    }

    /// Whether the whole value is read.
    pub(crate) fn is_all(&self) -> bool {
        matches!(self, Demand::All)
    }

    /// What is read of one or the other.
    pub(crate) fn union(self, other: Demand) -> Demand {
        match (self, other) {
            (Demand::All, _) | (_, Demand::All) => Demand::All,
            (Demand::Nothing, d) | (d, Demand::Nothing) => d,
            (Demand::Parts(mut a), Demand::Parts(b)) => {
                let b = *b;
                for (key, d) in b.fields.list {
                    a.fields.add(key, d);
                }
                a.iter = union_opt(a.iter.take(), b.iter);
                a.index = union_opt(a.index.take(), b.index);
                Demand::Parts(a)
            }
        }
    }

    /// What is read of an item of an array whose demand is `self` (the array built by `[f]`,
    /// or sliced out of another): an array read by key fails quoting its items, so they are
    /// read whole.
    fn items(&self) -> Demand {
        match self {
            Demand::Nothing => Demand::Nothing,
            Demand::All => Demand::All,
            Demand::Parts(p) if !p.fields.is_empty() => Demand::All,
            Demand::Parts(p) => union_opt(p.iter.clone(), p.index.clone()).unwrap_or_default(),
        }
    }

    /// What is read of field `key` (any field when `None`) of an object whose demand is `self`.
    fn field_of(&self, key: Option<&[u8]>) -> Demand {
        match (self, key) {
            (Demand::Nothing, _) => Demand::Nothing,
            (Demand::All, _) | (_, None) => Demand::All,
            (Demand::Parts(p), _) if p.index.is_some() => Demand::All,
            (Demand::Parts(p), Some(key)) => {
                let named = p.fields.get(key).cloned().unwrap_or_default();
                named.union(p.iter.clone().unwrap_or_default())
            }
        }
    }

    /// Puts what an iteration reads into each field read by name too, so that a field's
    /// demand is one lookup when the payload is read. Too deep a demand becomes `All`.
    fn finish(self, depth: usize) -> Demand {
        match self {
            Demand::Parts(_) if depth == 0 => Demand::All,
            Demand::Parts(mut p) => {
                let iter = p.iter.take().map(|d| d.finish(depth - 1));
                let index = p.index.take().map(|d| d.finish(depth - 1));
                for (_, d) in &mut p.fields.list {
                    let named = std::mem::take(d).union(iter.clone().unwrap_or_default());
                    *d = named.finish(depth - 1);
                }
                p.items = union_opt(iter.clone(), index.clone());
                p.iter = iter;
                p.index = index;
                Demand::Parts(p)
            }
            other => other,
        }
    }
}

/// Object fields read by name, by their unescaped key, in key order. A program names few
/// fields of an object: a list compared one by one (length first) finds one quicker than a
/// tree when the payload is read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Named {
    list: Vec<(Box<[u8]>, Demand)>,
    /// Whether every name is plain: written in JSON as it is, without escapes (no quote,
    /// backslash or control character).
    plain: bool,
}

impl Default for Named {
    fn default() -> Self {
        Named {
            list: Vec::new(),
            plain: true,
        }
    }
}

impl Named {
    fn one(key: Box<[u8]>, demand: Demand) -> Named {
        let mut named = Named::default();
        named.add(key, demand);
        named
    }

    /// What is read of field `key`, if the program names it.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&Demand> {
        let same =
            |name: &[u8]| name.len() == key.len() && name.iter().zip(key).all(|(a, b)| a == b);
        self.list
            .iter()
            .find(|(name, _)| same(name))
            .map(|(_, d)| d)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The fields named and what is read of each, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &Demand)> {
        self.list.iter().map(|(name, d)| (&**name, d))
    }

    /// Whether every name is written in JSON as it is (a key with an escape is none of them).
    pub(crate) fn plain(&self) -> bool {
        self.plain
    }

    /// Adds `demand` to what is read of field `key`.
    fn add(&mut self, key: Box<[u8]>, demand: Demand) {
        match self.list.binary_search_by(|(name, _)| name.cmp(&key)) {
            Ok(i) => {
                let read = std::mem::take(&mut self.list[i].1);
                self.list[i].1 = read.union(demand);
            }
            Err(i) => {
                self.plain &= key.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
                self.list.insert(i, (key, demand));
            }
        }
    }
}

fn union_opt(a: Option<Demand>, b: Option<Demand>) -> Option<Demand> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.union(b)),
        (a, b) => a.or(b),
    }
}

/// Deepest demand kept; a payload deeper than serde_json's 128 is not JSON anyway.
const MAX_DEMAND_DEPTH: usize = 130;

/// What the program `source` (one that compiled) reads of its input; `All` when it can not
/// say for sure.
pub(crate) fn of_program(source: &str) -> Demand {
    // The main module as jaq parses it, without imports (`import` and `include` are refused
    // when loading; a program this parser does not take reads everything).
    match jaq_core::load::parse(source, |p| p.term()) {
        Some(term) => analysis::reads(&term).finish(MAX_DEMAND_DEPTH),
        None => Demand::All,
    }
}

#[cfg(test)]
mod tests;
