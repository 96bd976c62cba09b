//! Selecting nodes: the segments of a path applied to a document, streaming.
//!
//! Every selected node is handed to a visitor as soon as it is found, and the walk stops at
//! the first one the visitor accepts: a predicate only asks whether *any* selected value passes
//! its test, so `$.items[*].qty > 10` looks no further than the first large quantity. Nothing
//! is collected and no normalized path is built; a filter-free path such as `$.kind` is a
//! handful of lookups (about 30 ns, see the predicate bench). Order follows RFC 9535: array
//! elements in index order, object members in the map's order, a descendant segment visiting a
//! node before its descendants.

use serde_json::Value;

use super::filter;
use super::syntax::Step;

/// Whether `test` holds for any value the steps select from `value`; stops at the first.
/// `root` is the document, for the `$` queries of filters.
pub(super) fn any<'a>(
    value: &'a Value,
    root: &'a Value,
    steps: &[Step],
    test: &mut dyn FnMut(&'a Value) -> bool,
) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return test(value);
    };
    apply(step, value, root, &mut |selected| {
        any(selected, root, rest, test)
    })
}

/// Calls `f` on each value `step` selects from `value` until it returns true.
fn apply<'a>(
    step: &Step,
    value: &'a Value,
    root: &'a Value,
    f: &mut dyn FnMut(&'a Value) -> bool,
) -> bool {
    match step {
        Step::Name(name) => value
            .as_object()
            .and_then(|o| o.get(&**name))
            .is_some_and(f),
        Step::Index(i) => value
            .as_array()
            .and_then(|a| a.get(index(*i, a.len())?))
            .is_some_and(f),
        Step::Wildcard => children(value).any(f),
        Step::Slice { start, end, step } => value.as_array().is_some_and(|a| {
            slice(a.len(), *start, *end, *step).any(|i| a.get(i).is_some_and(&mut *f))
        }),
        Step::Filter(test) => {
            children(value).any(|child| filter::holds(test, child, root) && f(child))
        }
        Step::Union(steps) => steps.iter().any(|s| apply(s, value, root, f)),
        Step::Descendant(step) => descend(step, value, root, f),
    }
}

/// `step` applied to `value`, then to each of its descendants, depth first in document order.
/// The depth is the document's, which serde_json bounds (128 by default).
fn descend<'a>(
    step: &Step,
    value: &'a Value,
    root: &'a Value,
    f: &mut dyn FnMut(&'a Value) -> bool,
) -> bool {
    apply(step, value, root, f) || children(value).any(|child| descend(step, child, root, f))
}

/// An array's elements or an object's member values; nothing for a scalar.
fn children(value: &Value) -> Children<'_> {
    match value {
        Value::Array(a) => Children::Array(a.iter()),
        Value::Object(o) => Children::Object(o.values()),
        _ => Children::None,
    }
}

/// The iterator of [`children`], without a box per node.
enum Children<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(serde_json::map::Values<'a>),
    None,
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Value;
    fn next(&mut self) -> Option<&'a Value> {
        match self {
            Children::Array(it) => it.next(),
            Children::Object(it) => it.next(),
            Children::None => None,
        }
    }
}

/// The position of index `i` (negative counts from the end) in an array of `len`, if inside.
fn index(i: i64, len: usize) -> Option<usize> {
    if i >= 0 {
        usize::try_from(i).ok().filter(|&i| i < len)
    } else {
        len.checked_sub(usize::try_from(i.unsigned_abs()).ok()?)
    }
}

/// The indices an array slice selects, in order (RFC 9535 §2.3.4.2.2).
fn slice(
    len: usize,
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
) -> impl Iterator<Item = usize> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let step = step.unwrap_or(1);
    let normalize = |i: i64| if i >= 0 { i } else { len.saturating_add(i) };
    let (mut i, bound) = if step > 0 {
        let lower = normalize(start.unwrap_or(0)).clamp(0, len);
        let upper = normalize(end.unwrap_or(len)).clamp(0, len);
        (lower, upper)
    } else {
        let upper = normalize(start.unwrap_or(len - 1)).clamp(-1, len - 1);
        let lower = normalize(end.unwrap_or(-len - 1)).clamp(-1, len - 1);
        (upper, lower)
    };
    std::iter::from_fn(move || {
        let inside = match step {
            s if s > 0 => i < bound,
            s if s < 0 => bound < i,
            _ => false,
        };
        if !inside {
            return None;
        }
        let current = usize::try_from(i).ok();
        i = i.saturating_add(step);
        current
    })
}
