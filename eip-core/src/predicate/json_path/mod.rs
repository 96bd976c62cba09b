//! JSONPath (RFC 9535): eip's own parser and evaluator, used by predicates and templates.
//!
//! A path is parsed once, when the predicate or template is built, into a tree of [`Step`]s
//! (names decoded, integers checked, regular expressions compiled), and evaluated on each
//! message by a streaming [`walk`] that hands every selected node to a visitor and stops when
//! the visitor has what it needs. The whole RFC is covered: names, indices, slices, wildcards,
//! descendants, selector lists, filters with comparisons, existence tests, `&&`, `||`, `!` and
//! parentheses, nested filters, and the five functions `length`, `count`, `value`, `match` and
//! `search`, with the type checks of RFC 9535 §2.4.3 done at parse time ([`parse`]). `match()`
//! and `search()` take I-Regexp (RFC 9485, [`iregexp`]); a literal pattern is compiled once,
//! with the path. The official JSONPath Compliance Test Suite runs with
//! `cargo run -p eip-core --example jsonpath_cts -- cts.json`.

mod demand;
mod filter;
mod iregexp;
mod parse;
mod syntax;
#[cfg(test)]
mod tests;
mod walk;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::error::PredicateError;
use crate::message::JsonNode;
use syntax::Step;

/// A parsed JSONPath, as predicates and templates hold it.
#[derive(Debug, Clone)]
pub(crate) struct JsonPathQuery {
    steps: Box<[Step]>,
}

impl JsonPathQuery {
    /// Parses `path`, which starts at byte `offset` of the whole expression.
    pub(crate) fn parse(path: &str, offset: usize) -> Result<Self, PredicateError> {
        Ok(JsonPathQuery {
            steps: parse::path(path, offset)?,
        })
    }

    /// What the path reads of a payload: evaluated on a payload read that far, it selects
    /// what it selects in the whole.
    pub(crate) fn demand(&self) -> crate::message::Demand {
        demand::of(&self.steps)
    }

    /// The first value the path selects in `root`, if any.
    pub(crate) fn first<'a, N: JsonNode<'a>>(&self, root: N) -> Option<N> {
        let mut found = None;
        self.any(root, |v| {
            found = Some(v);
            true
        });
        found
    }

    /// Whether any value the path selects in `root` passes `test`; false when it selects none.
    pub(crate) fn any<'a, N: JsonNode<'a>>(
        &self,
        root: N,
        mut test: impl FnMut(N) -> bool,
    ) -> bool {
        walk::any(root, root, &self.steps, &mut test)
    }
}

/// A JSONPath (RFC 9535) parsed once, to select values from JSON documents.
///
/// ```
/// use eip_core::predicate::JsonPath;
/// use serde_json::json;
///
/// let cheap = JsonPath::parse("$.items[?@.price < 10 && match(@.sku, 'A[0-9]+')].sku").unwrap();
/// let doc = json!({"items": [
///     {"sku": "A1", "price": 5},
///     {"sku": "B2", "price": 3},
///     {"sku": "A3", "price": 50},
/// ]});
/// assert_eq!(cheap.select(&doc), [&json!("A1")]);
/// ```
#[derive(Debug, Clone)]
pub struct JsonPath {
    query: JsonPathQuery,
    source: Box<str>,
}

impl JsonPath {
    /// Parses a path; the error's offset counts bytes from its start.
    pub fn parse(path: &str) -> Result<JsonPath, PredicateError> {
        Ok(JsonPath {
            query: JsonPathQuery::parse(path, 0)?,
            source: path.into(),
        })
    }

    /// Every value the path selects in `document`, in RFC 9535's order.
    pub fn select<'a>(&self, document: &'a Value) -> Vec<&'a Value> {
        let mut found = Vec::new();
        self.query.any(document, |v| {
            found.push(v);
            false
        });
        found
    }

    /// The first value the path selects in `document`, if any.
    pub fn first<'a>(&self, document: &'a Value) -> Option<&'a Value> {
        self.query.first(document)
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl FromStr for JsonPath {
    type Err = PredicateError;
    fn from_str(path: &str) -> Result<Self, Self::Err> {
        JsonPath::parse(path)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
