//! The parse tree of a JSONPath, shaped for evaluation: every name decoded, every integer
//! checked, every function's arguments typed and every literal regular expression compiled.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::iregexp::Pattern;

/// One segment of a path, or one selector of a bracketed list.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// `.name`, `['name']`.
    Name(Box<str>),
    /// `[3]`, `[-1]`.
    Index(i64),
    /// `.*`, `[*]`.
    Wildcard,
    /// `[start:end:step]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// `[?filter]`: the children for which the expression holds.
    Filter(Arc<Logical>),
    /// A bracketed list of selectors (`[0, 'a', 1:3]`).
    Union(Box<[Step]>),
    /// `..` before a selector: the selector applied to a node and all its descendants.
    Descendant(Box<Step>),
}

/// A query inside a filter: from the current node (`@`) or from the root (`$`).
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub(crate) relative: bool,
    pub(crate) steps: Box<[Step]>,
}

impl Query {
    /// Whether the query selects at most one node whatever the document (RFC 9535 §2.3.5.1):
    /// only names and indices, no descendants.
    pub(crate) fn is_singular(&self) -> bool {
        self.steps
            .iter()
            .all(|s| matches!(s, Step::Name(_) | Step::Index(_)))
    }
}

/// A filter's logical expression (RFC 9535 LogicalType).
#[derive(Debug, Clone)]
pub(crate) enum Logical {
    Or(Box<[Logical]>),
    And(Box<[Logical]>),
    Not(Box<Logical>),
    /// A query as a test: true when it selects a node.
    Exists(Query),
    Compare(Comparable, CmpOp, Comparable),
    /// `match()` or `search()`: a function whose result is a LogicalType.
    Regex(RegexCall),
}

/// One side of a comparison (RFC 9535 ValueType).
#[derive(Debug, Clone)]
pub(crate) enum Comparable {
    Literal(Value),
    /// A singular query: its node's value, or Nothing.
    Query(Query),
    Function(Box<ValueFunction>),
}

/// A function whose result is a ValueType.
#[derive(Debug, Clone)]
pub(crate) enum ValueFunction {
    /// `length(value)`: characters of a string, elements of an array, members of an object.
    Length(Comparable),
    /// `count(nodes)`: how many nodes the query selects.
    Count(Query),
    /// `value(nodes)`: the only node's value, or Nothing when there are none or several.
    Value(Query),
}

/// A call of `match()` (`whole` true) or `search()`.
#[derive(Debug, Clone)]
pub(crate) struct RegexCall {
    pub(crate) whole: bool,
    pub(crate) subject: Comparable,
    pub(crate) pattern: RegexArg,
}

/// The pattern of a [`RegexCall`].
#[derive(Debug, Clone)]
pub(crate) enum RegexArg {
    /// A literal pattern, checked and compiled when the path was parsed.
    Compiled(Arc<Pattern>),
    /// A pattern read from the document, compiled when the filter runs.
    Dynamic(Arc<DynamicPattern>),
}

/// A pattern that is not a literal, with the last one compiled from it: documents of one
/// kind tend to carry the same pattern, which then compiles once.
#[derive(Debug)]
pub(crate) struct DynamicPattern {
    pub(crate) source: Comparable,
    /// The last pattern text seen and what it compiled to (`None`: not valid I-Regexp).
    pub(crate) last: Mutex<Option<LastCompiled>>,
}

/// A pattern's text and what it compiled to.
pub(crate) type LastCompiled = (Box<str>, Option<Arc<Pattern>>);

impl DynamicPattern {
    pub(crate) fn new(source: Comparable) -> Self {
        DynamicPattern {
            source,
            last: Mutex::new(None),
        }
    }
}

/// A comparison operator: the predicate language's own, which has the same six.
pub(super) use crate::predicate::eval::CmpOp;
