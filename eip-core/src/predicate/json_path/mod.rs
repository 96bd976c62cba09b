//! A JSONPath operand: parsed once by jsonpath-rust when the predicate is built.
//!
//! A path without filters is evaluated by a direct [walk] over the parsed segments, which is
//! several times cheaper; a path with a filter goes through
//! `jsonpath_rust::query::js_path_process`.
//!
//! The RFC 9535 functions `match()` and `search()` are refused: jsonpath-rust compiles their
//! regular expression again on every evaluation, which would put a regex compilation on every
//! message. eip's own `=~` operator compiles its regex once, at build time.

use jsonpath_rust::parser::errors::JsonPathError;
use jsonpath_rust::parser::model::{
    Comparable, Comparison, Filter, FilterAtom, FnArg, JpQuery, Segment, Selector, Test,
    TestFunction,
};
use jsonpath_rust::parser::parse_json_path;
use jsonpath_rust::query::js_path_process;
use serde_json::Value;

use super::error::{PredicateError, PredicateErrorKind};

mod demand;
mod walk;

/// A parsed JSONPath.
#[derive(Debug, Clone)]
pub(crate) struct JsonPathQuery {
    query: JpQuery,
    /// The steps of a path without filters, for the direct walk; `None` for any other.
    walk: Option<Box<[walk::Step]>>,
}

impl JsonPathQuery {
    /// Parses `path`, which starts at byte `offset` of the whole expression.
    pub(crate) fn parse(path: &str, offset: usize) -> Result<Self, PredicateError> {
        let query = parse_json_path(path).map_err(|e| {
            let (at, reason) = describe(&e);
            PredicateError::new(
                offset + at.min(path.len()),
                PredicateErrorKind::JsonPath {
                    path: path.to_owned(),
                    reason,
                },
            )
        })?;
        if let Some(function) = regex_function(&query) {
            return Err(PredicateError::new(
                offset + function_offset(path, function),
                PredicateErrorKind::RegexFunction(function),
            ));
        }
        Ok(JsonPathQuery {
            walk: walk::plan(&query),
            query,
        })
    }

    /// What the path reads of a payload: evaluated on a payload read that far, it selects
    /// what it selects in the whole.
    pub(crate) fn demand(&self) -> crate::message::Demand {
        demand::of(&self.query)
    }

    /// The first value the path selects in `root`, if any.
    pub(crate) fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        let mut found = None;
        self.any(root, |v| {
            found = Some(v);
            true
        });
        found
    }

    /// Whether any value the path selects in `root` passes `test`; false when it selects none.
    pub(crate) fn any<'a>(&self, root: &'a Value, mut test: impl FnMut(&'a Value) -> bool) -> bool {
        if let Some(steps) = &self.walk {
            return walk::any(root, steps, &mut test);
        }
        match js_path_process(&self.query, root) {
            Ok(found) => found.into_iter().any(|r| test(r.val)),
            // Only a path that yields a computed value instead of nodes errs; none is selected.
            Err(_) => false,
        }
    }
}

/// Where in the path the parser failed (bytes from its start), and its message.
fn describe(e: &JsonPathError) -> (usize, String) {
    match e {
        JsonPathError::PestError(pest) => {
            // `location` is pest's `InputLocation::Pos(p)` or `Span((start, end))`; pest is not
            // a direct dependency, so its start is read from the debug form.
            let location = format!("{:?}", pest.location);
            let at = location
                .split(|c: char| !c.is_ascii_digit())
                .find(|s| !s.is_empty())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            (at, pest.variant.message().into_owned())
        }
        other => (0, other.to_string()),
    }
}

/// The first `match` or `search` function anywhere in the query's filters.
fn regex_function(query: &JpQuery) -> Option<&'static str> {
    segments(&query.segments)
}

fn segments(segments: &[Segment]) -> Option<&'static str> {
    segments.iter().find_map(segment)
}

fn segment(segment: &Segment) -> Option<&'static str> {
    match segment {
        Segment::Descendant(inner) => self::segment(inner),
        Segment::Selector(s) => selector(s),
        Segment::Selectors(all) => all.iter().find_map(selector),
    }
}

fn selector(selector: &Selector) -> Option<&'static str> {
    match selector {
        Selector::Filter(f) => filter(f),
        _ => None,
    }
}

fn filter(filter: &Filter) -> Option<&'static str> {
    match filter {
        Filter::Or(all) | Filter::And(all) => all.iter().find_map(self::filter),
        Filter::Atom(FilterAtom::Filter { expr, .. }) => self::filter(expr),
        Filter::Atom(FilterAtom::Test { expr, .. }) => test(expr),
        Filter::Atom(FilterAtom::Comparison(c)) => {
            let (a, b) = match c.as_ref() {
                Comparison::Eq(a, b)
                | Comparison::Ne(a, b)
                | Comparison::Gt(a, b)
                | Comparison::Gte(a, b)
                | Comparison::Lt(a, b)
                | Comparison::Lte(a, b) => (a, b),
            };
            comparable(a).or_else(|| comparable(b))
        }
    }
}

fn comparable(c: &Comparable) -> Option<&'static str> {
    match c {
        Comparable::Function(f) => function(f),
        Comparable::Literal(_) | Comparable::SingularQuery(_) => None,
    }
}

fn test(test: &Test) -> Option<&'static str> {
    match test {
        Test::RelQuery(s) => segments(s),
        Test::AbsQuery(q) => segments(&q.segments),
        Test::Function(f) => function(f),
    }
}

fn function(f: &TestFunction) -> Option<&'static str> {
    match f {
        TestFunction::Match(..) => Some("match"),
        TestFunction::Search(..) => Some("search"),
        TestFunction::Length(a) => arg(a),
        TestFunction::Value(a) | TestFunction::Count(a) => arg(a),
        TestFunction::Custom(_, args) => args.iter().find_map(arg),
    }
}

fn arg(a: &FnArg) -> Option<&'static str> {
    match a {
        FnArg::Literal(_) => None,
        FnArg::Test(t) => test(t),
        FnArg::Filter(f) => filter(f),
    }
}

/// The byte offset of the first `name(` outside string literals in `path` (0 if not found).
fn function_offset(path: &str, name: &str) -> usize {
    let b = path.as_bytes();
    let mut quote = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if path[i..].starts_with(name)
                && path[i + name.len()..].starts_with('(')
                && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) =>
            {
                return i;
            }
            None => {}
        }
        i += 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(path: &str, doc: &Value) -> Vec<Value> {
        let q = JsonPathQuery::parse(path, 0).unwrap();
        let mut out = Vec::new();
        q.any(doc, |v| {
            out.push(v.clone());
            false
        });
        out
    }

    #[test]
    fn a_path_selects_every_matching_value() {
        let doc = json!({"items": [{"p": 5}, {"p": 50}, {"q": 1}]});
        assert_eq!(values("$.items[*].p", &doc), vec![json!(5), json!(50)]);
        assert_eq!(values("$.items[?@.p > 10].p", &doc), vec![json!(50)]);
        assert!(values("$.nothing", &doc).is_empty());
    }

    #[test]
    fn parse_errors_point_into_the_path() {
        let err = JsonPathQuery::parse("$.a[?@.b ==]", 10).unwrap_err();
        assert!(err.offset > 10, "{err}");
        assert!(
            matches!(err.kind, PredicateErrorKind::JsonPath { ref path, .. } if path == "$.a[?@.b ==]")
        );
    }

    #[test]
    fn regex_functions_are_refused_where_they_are_written() {
        let path = "$.items[?@.n == 'match(' && match(@.sku, 'A.*')]";
        let err = JsonPathQuery::parse(path, 3).unwrap_err();
        assert_eq!(err.kind, PredicateErrorKind::RegexFunction("match"));
        assert_eq!(err.offset, 3 + path.find("match(@").unwrap());
        let err = JsonPathQuery::parse("$[?count(@[?search(@.a, 'x')]) > 0]", 0).unwrap_err();
        assert_eq!(err.kind, PredicateErrorKind::RegexFunction("search"));
        assert!(JsonPathQuery::parse("$[?length(@.a) > 1]", 0).is_ok());
    }
}
