//! The direct walk: evaluating a filter-free JSONPath without jsonpath-rust's bookkeeping.
//!
//! jsonpath-rust builds the normalized path of every node it visits as a string (`$['a'][0]`),
//! which costs far more than the lookups: about 200 ns for `$.kind` and 2.3 µs for
//! `$.items[*].qty` over six items, against 30 ns and 60 ns walking the parsed segments here.
//! A predicate only asks whether *any* selected value passes a test, so the walk also stops at
//! the first one that does. It covers every segment but filters (names, indices, wildcards,
//! slices, selector lists, descendants) with RFC 9535's rules; a path with a filter anywhere is
//! left to `jsonpath_rust::query::js_path_process`. A property test checks that both select the
//! same values.

use jsonpath_rust::parser::model::{JpQuery, Segment, Selector};
use serde_json::Value;

/// One segment of a filter-free path.
#[derive(Debug, Clone)]
pub(super) enum Step {
    Name(Box<str>),
    Index(i64),
    Wildcard,
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// A bracketed list of selectors (`[0, 'a', 1:3]`).
    Union(Box<[Step]>),
    /// `..` before a selector: the selector applied to a node and all its descendants.
    Descendant(Box<Step>),
}

/// The steps of `query`, or `None` if it has a filter.
pub(super) fn plan(query: &JpQuery) -> Option<Box<[Step]>> {
    query.segments.iter().map(segment).collect()
}

fn segment(segment: &Segment) -> Option<Step> {
    match segment {
        Segment::Selector(s) => selector(s),
        Segment::Selectors(all) => Some(Step::Union(
            all.iter().map(selector).collect::<Option<_>>()?,
        )),
        Segment::Descendant(inner) => Some(Step::Descendant(Box::new(self::segment(inner)?))),
    }
}

fn selector(selector: &Selector) -> Option<Step> {
    Some(match selector {
        Selector::Name(name) => Step::Name(name.as_str().into()),
        Selector::Index(i) => Step::Index(*i),
        Selector::Wildcard => Step::Wildcard,
        Selector::Slice(start, end, step) => Step::Slice {
            start: *start,
            end: *end,
            step: *step,
        },
        Selector::Filter(_) => return None,
    })
}

/// Whether `test` holds for any value the steps select from `value`. Stops at the first.
pub(super) fn any<'a>(
    value: &'a Value,
    steps: &[Step],
    test: &mut dyn FnMut(&'a Value) -> bool,
) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return test(value);
    };
    apply(step, value, &mut |selected| any(selected, rest, test))
}

/// Calls `f` on each value `step` selects from `value` until it returns true.
fn apply<'a>(step: &Step, value: &'a Value, f: &mut dyn FnMut(&'a Value) -> bool) -> bool {
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
        Step::Union(steps) => steps.iter().any(|s| apply(s, value, f)),
        Step::Descendant(step) => descend(step, value, f),
    }
}

/// `step` applied to `value`, then to each of its descendants, depth first in document order.
/// The depth is the document's, which serde_json bounds (128 by default).
fn descend<'a>(step: &Step, value: &'a Value, f: &mut dyn FnMut(&'a Value) -> bool) -> bool {
    apply(step, value, f) || children(value).any(|child| descend(step, child, f))
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

#[cfg(test)]
mod tests {
    use jsonpath_rust::parser::parse_json_path;
    use jsonpath_rust::query::js_path_process;
    use proptest::prelude::*;
    use serde_json::json;

    use super::any as walk_any;
    use super::*;

    fn selected(path: &str, doc: &Value) -> Vec<Value> {
        let steps = plan(&parse_json_path(path).unwrap()).unwrap();
        let mut out = Vec::new();
        walk_any(doc, &steps, &mut |v| {
            out.push(v.clone());
            false
        });
        out
    }

    #[test]
    fn the_walk_follows_rfc_9535() {
        let doc = json!({"a": [10, 11, 12, 13], "b": {"a": 1, "c": {"a": 2}}});
        assert_eq!(selected("$.a[-1]", &doc), vec![json!(13)]);
        assert_eq!(selected("$.a[1:3]", &doc), vec![json!(11), json!(12)]);
        assert_eq!(selected("$.a[::-2]", &doc), vec![json!(13), json!(11)]);
        assert_eq!(selected("$.a[0:4:0]", &doc), Vec::<Value>::new());
        assert_eq!(selected("$.a[0, -1, 9]", &doc), vec![json!(10), json!(13)]);
        assert_eq!(selected("$.b.*", &doc).len(), 2);
        assert_eq!(selected("$..a", &doc).len(), 3);
        assert_eq!(selected("$.a.x", &doc), Vec::<Value>::new());
    }

    #[test]
    fn a_filter_anywhere_leaves_the_path_to_jsonpath_rust() {
        for path in ["$[?@.a]", "$..[?@ > 1]", "$.a[0, ?@.b]"] {
            assert!(plan(&parse_json_path(path).unwrap()).is_none(), "{path}");
        }
    }

    #[test]
    fn the_walk_stops_at_the_first_match() {
        let doc = json!([1, 2, 3, 4]);
        let steps = plan(&parse_json_path("$[*]").unwrap()).unwrap();
        let mut seen = 0;
        assert!(walk_any(&doc, &steps, &mut |v| {
            seen += 1;
            v == &json!(2)
        }));
        assert_eq!(seen, 2);
    }

    fn doc() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            proptest::bool::ANY.prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                proptest::collection::btree_map("[ab]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn selector() -> impl Strategy<Value = String> {
        let int = || prop_oneof![Just(String::new()), (-6i64..6).prop_map(|i| i.to_string())];
        prop_oneof![
            Just("'a'".to_owned()),
            Just("'b'".to_owned()),
            Just("*".to_owned()),
            (-6i64..6).prop_map(|i| i.to_string()),
            (int(), int(), int()).prop_map(|(a, b, c)| format!("{a}:{b}:{c}")),
        ]
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(".a".to_owned()),
            Just(".*".to_owned()),
            Just("..b".to_owned()),
            Just("..*".to_owned()),
            proptest::collection::vec(selector(), 1..3).prop_map(|s| format!("[{}]", s.join(","))),
            proptest::collection::vec(selector(), 1..3)
                .prop_map(|s| format!("..[{}]", s.join(","))),
        ]
    }

    proptest! {
        #[test]
        fn the_walk_selects_what_jsonpath_rust_selects(
            doc in doc(),
            segments in proptest::collection::vec(segment(), 0..4),
        ) {
            let path = format!("${}", segments.concat());
            let query = parse_json_path(&path).unwrap();
            let steps = plan(&query).unwrap();
            let mut walked: Vec<*const Value> = Vec::new();
            walk_any(&doc, &steps, &mut |v| {
                walked.push(v);
                false
            });
            let mut general: Vec<*const Value> = js_path_process(&query, &doc)
                .unwrap()
                .into_iter()
                .map(|r| r.val as *const Value)
                .collect();
            walked.sort();
            general.sort();
            prop_assert_eq!(walked, general, "{}", path);
        }
    }
}
