//! Selecting nodes: the segments of a path applied to a document, streaming.
//!
//! Every selected node is handed to a visitor as soon as it is found, and the walk stops at
//! the first one the visitor accepts: a predicate only asks whether *any* selected value passes
//! its test, so `$.items[*].qty > 10` looks no further than the first large quantity. Nothing
//! is collected and no normalized path is built; a filter-free path such as `$.kind` is a
//! handful of lookups (about 30 ns, see the predicate bench). Order follows RFC 9535: array
//! elements in index order, object members in the map's order, a descendant segment visiting a
//! node before its descendants.

use super::filter;
use super::syntax::Step;
use crate::message::{JsonNode, Kind};

/// Whether `test` holds for any value the steps select from `value`; stops at the first.
/// `root` is the document, for the `$` queries of filters.
pub(super) fn any<'a, N: JsonNode<'a>>(
    value: N,
    root: N,
    steps: &[Step],
    test: &mut dyn FnMut(N) -> bool,
) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return test(value);
    };
    apply(step, value, root, &mut |selected| {
        any(selected, root, rest, test)
    })
}

/// Calls `f` on each value `step` selects from `value` until it returns true.
fn apply<'a, N: JsonNode<'a>>(
    step: &Step,
    value: N,
    root: N,
    f: &mut dyn FnMut(N) -> bool,
) -> bool {
    match step {
        Step::Name(name) => value.field(name).is_some_and(f),
        Step::Index(i) => array_len(value)
            .and_then(|len| value.item(index(*i, len)?))
            .is_some_and(f),
        Step::Wildcard => value.children().any(f),
        Step::Slice { start, end, step } => array_len(value).is_some_and(|len| {
            slice(len, *start, *end, *step).any(|i| value.item(i).is_some_and(&mut *f))
        }),
        Step::Filter(test) => value
            .children()
            .any(|child| filter::holds(test, child, root) && f(child)),
        Step::Union(steps) => steps.iter().any(|s| apply(s, value, root, f)),
        Step::Descendant(step) => descend(step, value, root, f),
    }
}

/// `step` applied to `value`, then to each of its descendants, depth first in document order.
/// The depth is the document's, which serde_json bounds (128 by default).
fn descend<'a, N: JsonNode<'a>>(
    step: &Step,
    value: N,
    root: N,
    f: &mut dyn FnMut(N) -> bool,
) -> bool {
    apply(step, value, root, f) || value.children().any(|child| descend(step, child, root, f))
}

/// How many items `value` has, if it is an array.
fn array_len<'a>(value: impl JsonNode<'a>) -> Option<usize> {
    match value.kind() {
        Kind::Array(len) => Some(len),
        _ => None,
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
