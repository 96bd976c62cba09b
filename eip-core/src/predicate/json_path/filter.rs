//! Evaluating a filter's expression for one candidate node (RFC 9535 §2.3.5).
//!
//! Comparisons follow the RFC: a side that selects nothing is Nothing, and Nothing equals only
//! Nothing; numbers compare by value (`1 == 1.0`), strings by code point, arrays and objects
//! structurally; `<` holds only between two numbers or two strings, so `<=` and `>=` are `<`
//! or `==`. A function's arguments were typed by the parser; here they are only computed.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Number, Value};

use super::iregexp::Pattern;
use super::syntax::{
    CmpOp, Comparable, DynamicPattern, Logical, Query, RegexArg, RegexCall, ValueFunction,
};
use super::walk;
use crate::message::{JsonNode, Kind};

/// Whether `expr` holds with `current` as `@` in the document `root`.
pub(super) fn holds<'a, N: JsonNode<'a>>(expr: &Logical, current: N, root: N) -> bool {
    match expr {
        Logical::Or(any) => any.iter().any(|e| holds(e, current, root)),
        Logical::And(all) => all.iter().all(|e| holds(e, current, root)),
        Logical::Not(e) => !holds(e, current, root),
        Logical::Exists(query) => select(query, current, root, &mut |_| true),
        Logical::Compare(left, op, right) => compare(
            &evaluate(left, current, root),
            *op,
            &evaluate(right, current, root),
        ),
        Logical::Regex(call) => regex(call, current, root),
    }
}

/// A ValueType's value: a node of the document, a literal of the filter, a computed number,
/// or Nothing.
enum Val<'f, N> {
    Nothing,
    Node(N),
    Literal(&'f Value),
    Count(usize),
}

/// What `v` is, if it is a node or a literal.
fn kind<'x, 'a: 'x, 'f: 'x, N: JsonNode<'a>>(v: &Val<'f, N>) -> Option<Kind<'x>> {
    match v {
        Val::Node(node) => Some(node.kind()),
        Val::Literal(value) => Some(value.kind()),
        _ => None,
    }
}

fn select<'a, N: JsonNode<'a>>(
    query: &Query,
    current: N,
    root: N,
    f: &mut dyn FnMut(N) -> bool,
) -> bool {
    let start = if query.relative { current } else { root };
    walk::any(start, root, &query.steps, f)
}

fn evaluate<'a, 'f, N: JsonNode<'a>>(c: &'f Comparable, current: N, root: N) -> Val<'f, N> {
    match c {
        Comparable::Literal(value) => Val::Literal(value),
        Comparable::Query(query) => {
            let mut found = Val::Nothing;
            select(query, current, root, &mut |v| {
                found = Val::Node(v);
                true
            });
            found
        }
        Comparable::Function(function) => match &**function {
            ValueFunction::Length(arg) => match kind(&evaluate(arg, current, root)) {
                Some(Kind::Str(s)) => Val::Count(s.chars().count()),
                Some(Kind::Array(len) | Kind::Object(len)) => Val::Count(len),
                _ => Val::Nothing,
            },
            ValueFunction::Count(query) => {
                let mut n = 0;
                select(query, current, root, &mut |_| {
                    n += 1;
                    false
                });
                Val::Count(n)
            }
            ValueFunction::Value(query) => {
                let mut found = Val::Nothing;
                let mut seen = 0;
                select(query, current, root, &mut |v| {
                    seen += 1;
                    found = Val::Node(v);
                    seen > 1
                });
                if seen == 1 { found } else { Val::Nothing }
            }
        },
    }
}

fn regex<'a, N: JsonNode<'a>>(call: &RegexCall, current: N, root: N) -> bool {
    let subject = evaluate(&call.subject, current, root);
    let Some(Kind::Str(subject)) = kind(&subject) else {
        return false;
    };
    match &call.pattern {
        RegexArg::Compiled(pattern) => pattern.is_match(subject),
        RegexArg::Dynamic(dynamic) => match kind(&evaluate(&dynamic.source, current, root)) {
            Some(Kind::Str(source)) => {
                compiled(dynamic, source, call.whole).is_some_and(|p| p.is_match(subject))
            }
            _ => false,
        },
    }
}

/// The pattern `source` compiled, from the one-entry cache when it was the last one seen.
/// A pattern that is not valid I-Regexp is `None`: the function is then false.
fn compiled(dynamic: &DynamicPattern, source: &str, whole: bool) -> Option<Arc<Pattern>> {
    // A poisoned or busy cache is bypassed, not waited for.
    let Ok(mut last) = dynamic.last.try_lock() else {
        return Pattern::new(source, whole).ok().map(Arc::new);
    };
    if let Some((cached, pattern)) = &*last
        && **cached == *source
    {
        return pattern.clone();
    }
    let pattern = Pattern::new(source, whole).ok().map(Arc::new);
    *last = Some((source.into(), pattern.clone()));
    pattern
}

fn compare<'a, N: JsonNode<'a>>(left: &Val<'_, N>, op: CmpOp, right: &Val<'_, N>) -> bool {
    match op {
        CmpOp::Eq => equal(left, right),
        CmpOp::Ne => !equal(left, right),
        CmpOp::Lt => less(left, right),
        CmpOp::Le => less(left, right) || equal(left, right),
        CmpOp::Gt => less(right, left),
        CmpOp::Ge => less(right, left) || equal(left, right),
    }
}

/// A number as the comparisons see it.
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

/// `v` as a number, if it is one.
fn number<'a, N: JsonNode<'a>>(v: &Val<'_, N>) -> Option<Num> {
    match (v, kind(v)) {
        (Val::Count(n), _) => Some(Num::Int(*n as i128)),
        (_, Some(Kind::Number(n))) => Some(num(n)),
        _ => None,
    }
}

fn num(n: &Number) -> Num {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => Num::Int(i128::from(i)),
        (_, Some(u)) => Num::Int(i128::from(u)),
        _ => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

fn order(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
        // An integer beyond 2^53 loses precision as a float: compare the float to the integer
        // rounded, which is what the float's own precision allows.
        (Num::Int(a), Num::Float(b)) => (a as f64).partial_cmp(&b),
        (Num::Float(a), Num::Int(b)) => a.partial_cmp(&(b as f64)),
        (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b),
    }
}

fn equal<'a, N: JsonNode<'a>>(a: &Val<'_, N>, b: &Val<'_, N>) -> bool {
    match (a, b) {
        (Val::Nothing, Val::Nothing) => true,
        (Val::Nothing, _) | (_, Val::Nothing) => false,
        (Val::Node(a), Val::Node(b)) => json_equal(*a, *b),
        (Val::Node(a), Val::Literal(b)) => json_equal(*a, *b),
        (Val::Literal(a), Val::Node(b)) => json_equal(*a, *b),
        (Val::Literal(a), Val::Literal(b)) => json_equal(*a, *b),
        _ => match (number(a), number(b)) {
            (Some(a), Some(b)) => order(a, b) == Some(Ordering::Equal),
            _ => false,
        },
    }
}

/// Structural equality with numbers compared by value, between nodes of either document kind.
fn json_equal<'a, 'b>(a: impl JsonNode<'a>, b: impl JsonNode<'b>) -> bool {
    match (a.kind(), b.kind()) {
        (Kind::Null, Kind::Null) => true,
        (Kind::Bool(a), Kind::Bool(b)) => a == b,
        (Kind::Number(a), Kind::Number(b)) => order(num(a), num(b)) == Some(Ordering::Equal),
        (Kind::Str(a), Kind::Str(b)) => a == b,
        (Kind::Array(m), Kind::Array(n)) => {
            m == n
                && a.children()
                    .zip(b.children())
                    .all(|(a, b)| json_equal(a, b))
        }
        (Kind::Object(m), Kind::Object(n)) => {
            m == n
                && a.members()
                    .all(|(k, v)| b.field(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => false,
    }
}

fn less<'a, N: JsonNode<'a>>(a: &Val<'_, N>, b: &Val<'_, N>) -> bool {
    if let (Some(Kind::Str(a)), Some(Kind::Str(b))) = (kind(a), kind(b)) {
        // UTF-8 byte order is code point order.
        return a < b;
    }
    match (number(a), number(b)) {
        (Some(a), Some(b)) => order(a, b) == Some(Ordering::Less),
        _ => false,
    }
}
