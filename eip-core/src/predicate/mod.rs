//! Predicates: a yes or no about a message, from its payload (JSONPath), headers and subject.
//!
//! A [`Predicate`] is written as a small expression — `$.price > 100 and header("desk") ==
//! "fx"`, `exists($.order.id)`, `subject matches "stock.*.nyse"`, `not ($.kind == "test")` —
//! or built in code ([`Predicate::header_equals`], [`and`](Predicate::and), ...). Everything
//! is compiled when the predicate is built: JSONPaths are parsed once by eip's own RFC 9535
//! implementation, regular expressions and topic patterns compiled once, and a predicate that does
//! not parse is a [`PredicateError`] giving the byte where it went wrong. Evaluating never
//! fails and never panics: a payload that is not JSON, a path that selects nothing or a missing
//! header makes the test on it false; a path that selects several values passes when any of
//! them does. The grammar and the full semantics are in the book's *Predicates* chapter.
//!
//! The payload is read lazily and only in part. When a predicate is built, its JSONPaths say
//! what they can reach (a demand: `$.customer.tier` reaches one field of one object,
//! `$.items[?@.sku == 'A'].qty` two fields of every item). The payload is read at most once per
//! message and component (a router reads it once for all its clauses), only when a path is
//! evaluated (a test on headers alone never reads it), in one pass over its bytes that builds
//! the reachable parts and checks the rest: a payload that is not JSON still makes every path
//! test false. A full parse the message already holds ([`Message::json_value`], kept by a
//! Datatype Channel) is used instead.
//!
//! ```
//! use eip_core::{Message, predicate::Predicate};
//!
//! let big_buy = Predicate::parse(r#"$.price > 100 and $.side == "buy""#).unwrap();
//! let msg = Message::new(r#"{"side": "buy", "price": 120}"#);
//! assert!(big_buy.matches(&msg));
//! assert!(!big_buy.not().matches(&msg));
//!
//! let err = Predicate::parse("$.price >> 100").unwrap_err();
//! assert_eq!(err.offset, 9);
//! ```

mod error;
mod eval;
pub(crate) mod json_path;
mod lexer;
mod parser;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use error::{PredicateError, PredicateErrorKind};
pub use json_path::JsonPath;

use crate::channel::Selector;
use crate::message::{Demand, HeaderValue, Message, Reading, names};
use crate::topic::TopicPattern;
use eval::{CmpOp, Literal, Node, Number, Operand, quote, quote_raw};

/// A compiled test over a message. Cheap to clone (shared).
#[derive(Clone)]
pub struct Predicate {
    node: Arc<Node>,
    /// What its paths read of a payload, computed once.
    demand: Arc<Demand>,
    source: Arc<str>,
}

impl Predicate {
    /// Parses and compiles a predicate expression.
    ///
    /// ```
    /// use eip_core::predicate::{Predicate, PredicateErrorKind};
    ///
    /// assert!(Predicate::parse(r#"header("type") =~ "^order\." or exists($.order)"#).is_ok());
    /// assert!(Predicate::parse(r#"exists($.items[?match(@.sku, "A[0-9]+")])"#).is_ok());
    /// // `@.*` may select several nodes; `length()` takes one value.
    /// let err = Predicate::parse(r#"exists($.items[?length(@.*) < 3])"#).unwrap_err();
    /// assert!(matches!(err.kind, PredicateErrorKind::FunctionType { .. }));
    /// assert_eq!(err.offset, 16);
    /// ```
    pub fn parse(expression: &str) -> Result<Predicate, PredicateError> {
        Ok(Predicate::from_node(parser::parse(expression)?, expression))
    }

    fn from_node(node: Node, source: impl Into<Arc<str>>) -> Self {
        Predicate {
            demand: Arc::new(node.demand()),
            node: Arc::new(node),
            source: source.into(),
        }
    }

    /// True when the JSONPath selects at least one value in the payload.
    pub fn json_path_exists(path: &str) -> Result<Predicate, PredicateError> {
        let query = json_path::JsonPathQuery::parse(path, 0)?;
        Ok(Predicate::from_node(
            Node::Exists(Operand::Path(query)),
            format!("exists({path})"),
        ))
    }

    /// True when header `name` holds `value` (numbers compare by value: `Int(1)` equals
    /// `Float(1.0)`).
    pub fn header_equals(name: &str, value: impl Into<HeaderValue>) -> Predicate {
        let literal = match value.into() {
            HeaderValue::Str(s) => Literal::Str(s),
            HeaderValue::Int(i) => Literal::Num(Number::Int(i)),
            HeaderValue::Float(f) => Literal::Num(Number::Float(f)),
            HeaderValue::Bool(b) => Literal::Bool(b),
            // A bytes header equals a string literal holding the same bytes.
            HeaderValue::Bytes(b) => Literal::Str(String::from_utf8_lossy(&b).into_owned()),
        };
        let source = format!("header({}) == {literal}", quote(name));
        Predicate::from_node(
            Node::Compare(Operand::Header(name.into()), CmpOp::Eq, literal),
            source,
        )
    }

    /// True when the message has header `name`.
    pub fn header_exists(name: &str) -> Predicate {
        Predicate::from_node(
            Node::Exists(Operand::Header(name.into())),
            format!("exists(header({}))", quote(name)),
        )
    }

    /// True when header `name` is a string the regular expression matches (anywhere in it;
    /// anchor with `^` and `$`).
    ///
    /// An error's offset counts from the start of `regex`.
    pub fn header_matches(name: &str, regex: &str) -> Result<Predicate, PredicateError> {
        let compiled = regex::Regex::new(regex)
            .map_err(|e| PredicateError::new(0, PredicateErrorKind::Regex(e.to_string())))?;
        Ok(Predicate::from_node(
            Node::Regex(Operand::Header(name.into()), compiled),
            format!("header({}) =~ {}", quote(name), quote_raw(regex)),
        ))
    }

    /// True when the subject matches the topic pattern (`*` one word, `#` zero or more).
    pub fn subject_matches(pattern: &str) -> Result<Predicate, PredicateError> {
        let compiled = TopicPattern::parse(pattern)
            .map_err(|e| PredicateError::new(0, PredicateErrorKind::TopicPattern(e)))?;
        Ok(Predicate::from_node(
            Node::Topic(Operand::Header(names::SUBJECT.into()), compiled),
            format!("subject matches {}", quote(pattern)),
        ))
    }

    /// True when both are.
    pub fn and(self, other: Predicate) -> Predicate {
        let source = format!("({}) and ({})", self.source, other.source);
        let mut nodes = Vec::with_capacity(2);
        for p in [self, other] {
            match Arc::unwrap_or_clone(p.node) {
                Node::And(inner) => nodes.extend(inner),
                node => nodes.push(node),
            }
        }
        Predicate::from_node(Node::And(nodes), source)
    }

    /// True when either is.
    pub fn or(self, other: Predicate) -> Predicate {
        let source = format!("({}) or ({})", self.source, other.source);
        let mut nodes = Vec::with_capacity(2);
        for p in [self, other] {
            match Arc::unwrap_or_clone(p.node) {
                Node::Or(inner) => nodes.extend(inner),
                node => nodes.push(node),
            }
        }
        Predicate::from_node(Node::Or(nodes), source)
    }

    /// True when this one is false.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Predicate {
        let source = format!("not ({})", self.source);
        let node = match Arc::unwrap_or_clone(self.node) {
            Node::Not(inner) => *inner,
            node => Node::Not(Box::new(node)),
        };
        Predicate::from_node(node, source)
    }

    /// Whether `msg` passes. Never fails: what can not be read counts as false (see the module
    /// documentation).
    pub fn matches(&self, msg: &Message) -> bool {
        self.node.eval(&Reading::new(msg, &self.demand))
    }

    /// Whether the message `reading` reads passes. `reading` must demand at least what
    /// [`demand`](Self::demand) says: a router reads each message once for all its clauses
    /// with the union of their demands.
    pub(crate) fn matches_in(&self, reading: &Reading<'_>) -> bool {
        self.node.eval(reading)
    }

    /// What the predicate reads of a payload.
    pub(crate) fn demand(&self) -> &Demand {
        &self.demand
    }

    /// The expression (for predicates built in code, an equivalent one that parses back).
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl fmt::Debug for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Predicate({:?})", self.source)
    }
}

impl FromStr for Predicate {
    type Err = PredicateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Predicate::parse(s)
    }
}

impl TryFrom<&str> for Predicate {
    type Error = PredicateError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Predicate::parse(s)
    }
}

/// A predicate as a [Selective Consumer](crate::channel::selector)'s selector or a purge filter.
impl From<Predicate> for Selector {
    fn from(p: Predicate) -> Selector {
        let description = p.source.to_string();
        Selector::new(description, move |m| p.matches(m))
    }
}

#[cfg(test)]
mod tests;
