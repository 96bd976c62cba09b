//! A named parameter and where its value comes from: a JSONPath into the payload (walked
//! without the JSONPath engine when it is names and indexes only), a header, or a top-level
//! field.

use jsonpath_rust::parser::model::{JpQuery, Segment, Selector};
use serde_json::Value;

/// Where a parameter's value comes from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A path of names and indexes only (`$.order.lines[0].qty`), walked without the JSONPath
    /// engine.
    Steps(Vec<Step>),
    Path(Box<JpQuery>),
    Header(String),
    Field(String),
}

/// One step of a path: into an object's field, or an array's element.
#[derive(Debug, Clone)]
pub(super) enum Step {
    Name(String),
    Index(i64),
}

impl Source {
    /// `query` as steps when it selects at most one value by names and indexes.
    pub(super) fn of_path(query: JpQuery) -> Source {
        let step = |segment: &Segment| match segment {
            Segment::Selector(Selector::Name(name)) => Some(Step::Name(name.clone())),
            Segment::Selector(Selector::Index(i)) => Some(Step::Index(*i)),
            Segment::Selectors(one) if one.len() == 1 => match &one[0] {
                Selector::Name(name) => Some(Step::Name(name.clone())),
                Selector::Index(i) => Some(Step::Index(*i)),
                _ => None,
            },
            _ => None,
        };
        match query.segments.iter().map(step).collect() {
            Some(steps) => Source::Steps(steps),
            None => Source::Path(Box::new(query)),
        }
    }
}

/// The value `steps` lead to from `root`, as JSONPath selects it (a negative index counts
/// from the end).
pub(super) fn walk<'v>(root: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    steps.iter().try_fold(root, |value, step| match step {
        Step::Name(name) => value.as_object()?.get(name),
        Step::Index(i) => {
            let array = value.as_array()?;
            let at = if *i < 0 {
                array
                    .len()
                    .checked_sub(usize::try_from(i.unsigned_abs()).ok()?)?
            } else {
                usize::try_from(*i).ok()?
            };
            array.get(at)
        }
    })
}

/// A named parameter of a statement.
#[derive(Debug, Clone)]
pub(super) struct Parameter {
    /// As written, for errors: `:$.symbol`.
    pub(super) written: String,
    /// Where its value comes from.
    pub(super) source: Source,
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonpath_rust::parser::parse_json_path;
    use jsonpath_rust::query::js_path_process;
    use serde_json::json;

    #[test]
    fn name_and_index_paths_select_what_the_jsonpath_engine_selects() {
        let root = json!({"a": {"b": [10, 20, {"c d": "x"}]}, "n": null});
        for path in [
            "$.a.b[0]",
            "$.a.b[-1]['c d']",
            "$.a.b[-4]",
            "$.a.b[3]",
            "$['a'].b[1]",
            "$.n",
            "$.missing",
            "$.a.b.c",
            "$.a[0]",
        ] {
            let query = parse_json_path(path).unwrap();
            let engine = js_path_process(&query, &root).unwrap_or_default();
            let Source::Steps(steps) = Source::of_path(query) else {
                panic!("{path}: not walked as steps");
            };
            let expected = match engine.as_slice() {
                [] => None,
                [one] => Some(one.val),
                more => panic!("{path}: {} values", more.len()),
            };
            assert_eq!(walk(&root, &steps), expected, "{path}");
        }
        let wildcard = parse_json_path("$.a.b[*]").unwrap();
        assert!(matches!(Source::of_path(wildcard), Source::Path(_)));
    }
}
