//! The compiled predicate and how it is evaluated against a message.
//!
//! Semantics, in one place:
//! - An operand with no value (a JSONPath with an empty result, a payload that is not JSON, a
//!   missing header or subject) makes every test on it false, `!=` included.
//! - An operand with several values (a JSONPath through `*`, `..` or a filter) passes a test
//!   when any one of its values does.
//! - `==` and `!=` compare values of the same type (numbers by value, `1 == 1.0`); values of
//!   different types are unequal. `<`, `<=`, `>`, `>=` order two numbers or two strings (by
//!   code point); anything else is false.
//! - `=~` and `matches` apply to strings only.

use std::cmp::Ordering;
use std::fmt;

use regex::Regex;

use super::json_path::JsonPathQuery;
use crate::message::{Demand, Doc, HeaderValue, JsonNode, Kind, Reading};
use crate::topic::TopicPattern;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord == Ordering::Equal,
            CmpOp::Ne => ord != Ordering::Equal,
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::Le => ord != Ordering::Greater,
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::Ge => ord != Ordering::Less,
        }
    }
}

/// A number literal: an integer when written without fraction or exponent and it fits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Number {
    Int(i64),
    Float(f64),
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    Num(Number),
    Str(String),
}

/// What a predicate reads from the message.
#[derive(Debug, Clone)]
pub(super) enum Operand {
    Path(JsonPathQuery),
    /// A header by name (`subject` is the `subject` header).
    Header(Box<str>),
}

/// A compiled predicate.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Const(bool),
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    /// The operand has at least one value.
    Exists(Operand),
    Compare(Operand, CmpOp, Literal),
    Regex(Operand, Regex),
    Topic(Operand, TopicPattern),
}

impl Node {
    /// Whether the message passes. The payload is read through `reading`, which must demand
    /// at least [`Node::demand`].
    pub(super) fn eval(&self, reading: &Reading<'_>) -> bool {
        match self {
            Node::Const(b) => *b,
            Node::Or(nodes) => nodes.iter().any(|n| n.eval(reading)),
            Node::And(nodes) => nodes.iter().all(|n| n.eval(reading)),
            Node::Not(node) => !node.eval(reading),
            Node::Exists(operand) => operand.any(reading, |_| true),
            Node::Compare(operand, op, literal) => {
                operand.any(reading, |v| compare(v, *op, literal))
            }
            Node::Regex(operand, regex) => {
                operand.any(reading, |v| v.as_str().is_some_and(|s| regex.is_match(s)))
            }
            Node::Topic(operand, pattern) => {
                operand.any(reading, |v| v.as_str().is_some_and(|s| pattern.matches(s)))
            }
        }
    }

    /// What the predicate reads of the payload: the union of its paths' demands.
    pub(super) fn demand(&self) -> Demand {
        match self {
            Node::Const(_) => Demand::nothing(),
            Node::Or(nodes) | Node::And(nodes) => nodes
                .iter()
                .fold(Demand::nothing(), |demand, n| demand.union(&n.demand())),
            Node::Not(node) => node.demand(),
            Node::Exists(operand)
            | Node::Compare(operand, ..)
            | Node::Regex(operand, _)
            | Node::Topic(operand, _) => match operand {
                Operand::Path(path) => path.demand(),
                Operand::Header(_) => Demand::nothing(),
            },
        }
    }
}

/// One value an operand produced, seen the same way whether it came from JSON or a header.
#[derive(Debug, Clone, Copy)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    /// An array or object: equal to no literal, ordered with none.
    Composite,
}

impl<'a> Scalar<'a> {
    fn from_json(v: impl JsonNode<'a>) -> Self {
        match v.kind() {
            Kind::Null => Scalar::Null,
            Kind::Bool(b) => Scalar::Bool(b),
            Kind::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Scalar::Int(i),
                (_, Some(u), _) => Scalar::Uint(u),
                (_, _, Some(f)) => Scalar::Float(f),
                _ => Scalar::Composite,
            },
            Kind::Str(s) => Scalar::Str(s),
            Kind::Array(_) | Kind::Object(_) => Scalar::Composite,
        }
    }

    fn from_header(v: &'a HeaderValue) -> Self {
        match v {
            HeaderValue::Str(s) => Scalar::Str(s),
            HeaderValue::Int(i) => Scalar::Int(*i),
            HeaderValue::Float(f) => Scalar::Float(*f),
            HeaderValue::Bool(b) => Scalar::Bool(*b),
            HeaderValue::Bytes(b) => Scalar::Bytes(b),
        }
    }

    fn as_str(&self) -> Option<&'a str> {
        match *self {
            Scalar::Str(s) => Some(s),
            Scalar::Bytes(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }
}

impl Operand {
    /// Whether any value of the operand passes `test`; false when it has none.
    fn any(&self, reading: &Reading<'_>, mut test: impl FnMut(Scalar<'_>) -> bool) -> bool {
        match self {
            Operand::Header(name) => reading
                .message()
                .headers()
                .get(name)
                .is_some_and(|v| test(Scalar::from_header(v))),
            Operand::Path(path) => match reading.json() {
                Ok(Doc::Value(root)) => path.any(root, |v| test(Scalar::from_json(v))),
                Ok(Doc::Tree(root)) => path.any(root, |v| test(Scalar::from_json(v))),
                Err(_) => false,
            },
        }
    }
}

fn compare(value: Scalar<'_>, op: CmpOp, literal: &Literal) -> bool {
    let ord = match (value, literal) {
        (Scalar::Null, Literal::Null) => Some(Ordering::Equal),
        (Scalar::Bool(a), Literal::Bool(b)) => Some(if a == *b {
            Ordering::Equal
        } else {
            // Unequal booleans: `!=` holds, and no ordering operator reaches here (refused at
            // build time), so any non-Equal answer will do.
            Ordering::Less
        }),
        (Scalar::Str(a), Literal::Str(b)) => Some(a.cmp(b.as_str())),
        (Scalar::Bytes(a), Literal::Str(b)) => Some(a.cmp(b.as_bytes())),
        (Scalar::Int(a), Literal::Num(b)) => compare_numbers(Num::I(a), *b),
        (Scalar::Uint(a), Literal::Num(b)) => compare_numbers(Num::U(a), *b),
        (Scalar::Float(a), Literal::Num(b)) => compare_numbers(Num::F(a), *b),
        _ => None,
    };
    match ord {
        Some(ord) => op.holds(ord),
        // Different types: unequal, unordered.
        None => op == CmpOp::Ne,
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    F(f64),
}

/// Exact for integers (of either sign), by `f64` when a float is involved; `None` for NaN.
fn compare_numbers(a: Num, b: Number) -> Option<Ordering> {
    match (a, b) {
        (Num::I(a), Number::Int(b)) => Some(a.cmp(&b)),
        // A u64 only arrives here above i64::MAX, so above every integer literal.
        (Num::U(_), Number::Int(_)) => Some(Ordering::Greater),
        (Num::I(a), Number::Float(b)) => (a as f64).partial_cmp(&b),
        (Num::U(a), Number::Float(b)) => (a as f64).partial_cmp(&b),
        (Num::F(a), Number::Int(b)) => a.partial_cmp(&(b as f64)),
        (Num::F(a), Number::Float(b)) => a.partial_cmp(&b),
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("null"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Num(Number::Int(i)) => write!(f, "{i}"),
            Literal::Num(Number::Float(x)) => write!(f, "{x:?}"),
            Literal::Str(s) => f.write_str(&quote(s)),
        }
    }
}

/// `s` as a double-quoted string literal the tokenizer reads back unchanged.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A regex as a string literal the parser hands back to the regex compiler unchanged: only
/// an unescaped `"` needs a backslash (the regex reads `\"` as `"`).
pub(super) fn quote_raw(regex: &str) -> String {
    let mut out = String::with_capacity(regex.len() + 2);
    out.push('"');
    let mut chars = regex.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::predicate::Predicate;

    fn cmp(value: Scalar<'_>, op: CmpOp, literal: Literal) -> bool {
        compare(value, op, &literal)
    }

    #[test]
    fn numbers_compare_by_value_across_integer_and_float() {
        assert!(cmp(
            Scalar::Int(1),
            CmpOp::Eq,
            Literal::Num(Number::Float(1.0))
        ));
        assert!(cmp(
            Scalar::Float(100.5),
            CmpOp::Gt,
            Literal::Num(Number::Int(100))
        ));
        assert!(cmp(
            Scalar::Uint(u64::MAX),
            CmpOp::Gt,
            Literal::Num(Number::Int(i64::MAX))
        ));
        assert!(cmp(
            Scalar::Int(-3),
            CmpOp::Le,
            Literal::Num(Number::Int(-3))
        ));
        assert!(!cmp(
            Scalar::Float(f64::NAN),
            CmpOp::Eq,
            Literal::Num(Number::Float(f64::NAN))
        ));
    }

    #[test]
    fn different_types_are_unequal_and_unordered() {
        let s = || Literal::Str("1".into());
        assert!(!cmp(Scalar::Int(1), CmpOp::Eq, s()));
        assert!(cmp(Scalar::Int(1), CmpOp::Ne, s()));
        assert!(!cmp(Scalar::Int(1), CmpOp::Lt, s()));
        assert!(!cmp(Scalar::Int(1), CmpOp::Ge, s()));
        assert!(!cmp(Scalar::Composite, CmpOp::Eq, Literal::Null));
        assert!(cmp(Scalar::Null, CmpOp::Eq, Literal::Null));
        assert!(cmp(Scalar::Bool(true), CmpOp::Ne, Literal::Bool(false)));
    }

    #[test]
    fn strings_order_by_code_point() {
        assert!(cmp(
            Scalar::Str("abc"),
            CmpOp::Lt,
            Literal::Str("abd".into())
        ));
        assert!(cmp(Scalar::Str("é"), CmpOp::Gt, Literal::Str("z".into())));
        assert!(cmp(
            Scalar::Bytes(b"x"),
            CmpOp::Eq,
            Literal::Str("x".into())
        ));
    }

    #[test]
    fn quoted_strings_escape_what_the_tokenizer_unescapes() {
        assert_eq!(quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        assert_eq!(quote_raw(r#"^a\.b"c\"d"#), r#""^a\.b\"c\"d""#);
    }

    #[test]
    fn a_test_on_headers_alone_never_reads_the_payload() {
        let by_header =
            Predicate::parse(r#"header("type") == "order" or subject matches "a.*""#).unwrap();
        let msg = Message::builder("{ not json")
            .header("type", "order")
            .build();
        let reading = Reading::new(&msg, by_header.demand());
        assert!(by_header.matches_in(&reading));
        assert!(!reading.has_read() && !msg.is_json_parsed());

        let by_path = Predicate::parse(r#"header("type") == "order" and $.a == 1"#).unwrap();
        let reading = Reading::new(&msg, by_path.demand());
        assert!(
            !by_path.matches_in(&reading),
            "not JSON: the path test is false"
        );
        assert!(reading.has_read());
    }

    #[test]
    fn a_partial_read_is_not_kept_on_the_message_but_a_full_parse_is_used() {
        let msg = Message::new(r#"{"a": 1, "b": {"c": [1, 2, 3]}}"#);
        let p = Predicate::parse("$.a == 1 and $.b.c[2] == 3").unwrap();
        assert!(p.matches(&msg));
        assert!(
            !msg.is_json_parsed(),
            "the projection stays with the reading"
        );
        let full: *const serde_json::Value = msg.json_value().unwrap();
        let reading = Reading::new(&msg, p.demand());
        assert!(p.matches_in(&reading));
        assert!(matches!(reading.json(), Ok(Doc::Value(v)) if std::ptr::eq(full, v)));
    }
}
