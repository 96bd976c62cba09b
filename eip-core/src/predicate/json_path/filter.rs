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

/// Whether `expr` holds with `current` as `@` in the document `root`.
pub(super) fn holds(expr: &Logical, current: &Value, root: &Value) -> bool {
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

/// A ValueType's value: a node's value, a computed number, or Nothing.
enum Val<'a> {
    Nothing,
    Node(&'a Value),
    Count(usize),
}

fn select<'a>(
    query: &Query,
    current: &'a Value,
    root: &'a Value,
    f: &mut dyn FnMut(&'a Value) -> bool,
) -> bool {
    let start = if query.relative { current } else { root };
    walk::any(start, root, &query.steps, f)
}

fn evaluate<'a>(c: &'a Comparable, current: &'a Value, root: &'a Value) -> Val<'a> {
    match c {
        Comparable::Literal(value) => Val::Node(value),
        Comparable::Query(query) => {
            let mut found = Val::Nothing;
            select(query, current, root, &mut |v| {
                found = Val::Node(v);
                true
            });
            found
        }
        Comparable::Function(function) => match &**function {
            ValueFunction::Length(arg) => match evaluate(arg, current, root) {
                Val::Node(Value::String(s)) => Val::Count(s.chars().count()),
                Val::Node(Value::Array(a)) => Val::Count(a.len()),
                Val::Node(Value::Object(o)) => Val::Count(o.len()),
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

fn regex(call: &RegexCall, current: &Value, root: &Value) -> bool {
    let Val::Node(Value::String(subject)) = evaluate(&call.subject, current, root) else {
        return false;
    };
    match &call.pattern {
        RegexArg::Compiled(pattern) => pattern.is_match(subject),
        RegexArg::Dynamic(dynamic) => match evaluate(&dynamic.source, current, root) {
            Val::Node(Value::String(source)) => {
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

fn compare(left: &Val<'_>, op: CmpOp, right: &Val<'_>) -> bool {
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

impl Val<'_> {
    fn number(&self) -> Option<Num> {
        match self {
            Val::Count(n) => Some(Num::Int(*n as i128)),
            Val::Node(Value::Number(n)) => Some(num(n)),
            _ => None,
        }
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

fn equal(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (Val::Nothing, Val::Nothing) => true,
        (Val::Nothing, _) | (_, Val::Nothing) => false,
        (Val::Node(a), Val::Node(b)) => json_equal(a, b),
        _ => match (a.number(), b.number()) {
            (Some(a), Some(b)) => order(a, b) == Some(Ordering::Equal),
            _ => false,
        },
    }
}

/// Structural equality with numbers compared by value.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => order(num(a), num(b)) == Some(Ordering::Equal),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn less(a: &Val<'_>, b: &Val<'_>) -> bool {
    if let (Val::Node(Value::String(a)), Val::Node(Value::String(b))) = (a, b) {
        // UTF-8 byte order is code point order.
        return a < b;
    }
    match (a.number(), b.number()) {
        (Some(a), Some(b)) => order(a, b) == Some(Ordering::Less),
        _ => false,
    }
}
