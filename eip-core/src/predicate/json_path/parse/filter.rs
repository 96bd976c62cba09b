//! Filter expressions, and the type checks of RFC 9535 §2.4.3.
//!
//! Every function has a declared type for each parameter and for its result: `length(Value)`,
//! `count(Nodes)`, `value(Nodes)` give a ValueType, `match(Value, Value)` and
//! `search(Value, Value)` a LogicalType. An argument fits a ValueType parameter when it is a
//! literal, a singular query (names and indices only, so it selects at most one node) or a
//! function returning a ValueType; it fits a NodesType parameter only when it is a query. A
//! function used as a test must return a LogicalType (or NodesType), one used in a comparison
//! a ValueType. Anything else is refused here, at the function's name, before any document is
//! seen: `length(@.*)` (several nodes where one value is needed), `count(@..*)` alone as a test.

use std::sync::Arc;

use serde_json::{Number, Value};

use crate::predicate::error::{PredicateError, PredicateErrorKind};

use super::super::iregexp::Pattern;
use super::super::syntax::{
    CmpOp, Comparable, DynamicPattern, Logical, Query, RegexArg, RegexCall, ValueFunction,
};
use super::{Parsed, Parser};

/// What a comparable or an argument turned out to be, before its context types it.
enum Operand {
    Literal(Value),
    Query(Query),
    Value(ValueFunction),
    Logical(Logical),
}

impl Operand {
    /// How the operand reads in an error message.
    fn describe(&self) -> &'static str {
        match self {
            Operand::Literal(_) => "a literal",
            Operand::Query(_) => "a query",
            Operand::Value(_) => "a function returning a value",
            Operand::Logical(_) => "a logical expression",
        }
    }
}

/// The functions RFC 9535 defines.
const FUNCTIONS: &str = "length, count, value, match and search";

impl Parser<'_> {
    /// `logical-or-expr`.
    pub(super) fn logical(&mut self) -> Parsed<Logical> {
        self.enter()?;
        let mut any = vec![self.and()?];
        while self.eat_operator("||") {
            any.push(self.and()?);
        }
        self.leave();
        Ok(if any.len() == 1 {
            any.remove(0)
        } else {
            Logical::Or(any.into())
        })
    }

    fn and(&mut self) -> Parsed<Logical> {
        let mut all = vec![self.basic()?];
        while self.eat_operator("&&") {
            all.push(self.basic()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Logical::And(all.into())
        })
    }

    /// `S op S` if `op` comes next; otherwise nothing is consumed.
    fn eat_operator(&mut self, op: &str) -> bool {
        let before = self.pos;
        self.skip_blanks();
        if self.eat_str(op) {
            self.skip_blanks();
            true
        } else {
            self.pos = before;
            false
        }
    }

    /// `basic-expr`: a parenthesized or negated expression, a comparison or a test.
    fn basic(&mut self) -> Parsed<Logical> {
        if self.eat(b'!') {
            self.skip_blanks();
            let start = self.pos;
            let negated = if self.eat(b'(') {
                self.parenthesized()?
            } else {
                let operand = self.operand()?;
                self.test(operand, start)?
            };
            return Ok(Logical::Not(Box::new(negated)));
        }
        if self.eat(b'(') {
            return self.parenthesized();
        }
        let start = self.pos;
        let left = self.operand()?;
        let before = self.pos;
        self.skip_blanks();
        let Some(op) = self.comparison_operator() else {
            self.pos = before;
            return self.test(left, start);
        };
        self.skip_blanks();
        let right_start = self.pos;
        let right = self.operand()?;
        Ok(Logical::Compare(
            self.comparable(left, start)?,
            op,
            self.comparable(right, right_start)?,
        ))
    }

    /// After `(`: an expression and its `)`.
    fn parenthesized(&mut self) -> Parsed<Logical> {
        self.skip_blanks();
        let inner = self.logical()?;
        self.skip_blanks();
        self.expect(b')', "`)`")?;
        Ok(inner)
    }

    fn comparison_operator(&mut self) -> Option<CmpOp> {
        let ops = [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ];
        ops.into_iter()
            .find(|(s, _)| self.eat_str(s))
            .map(|(_, op)| op)
    }

    /// A test-expr: a query (does it select anything?) or a function returning a logical.
    fn test(&self, operand: Operand, at: usize) -> Parsed<Logical> {
        match operand {
            Operand::Query(query) => Ok(Logical::Exists(query)),
            Operand::Logical(logical) => Ok(logical),
            Operand::Value(_) => Err(self.type_error(
                at,
                "a function returning a value is not a test; compare its result \
                 (`length(@.a) > 0`)",
            )),
            Operand::Literal(_) => Err(self.error(
                at,
                "a literal alone is not a test; compare it with something",
            )),
        }
    }

    /// A side of a comparison: it must be a single value (RFC 9535 ValueType).
    fn comparable(&self, operand: Operand, at: usize) -> Parsed<Comparable> {
        match operand {
            Operand::Literal(value) => Ok(Comparable::Literal(value)),
            Operand::Query(query) if query.is_singular() => Ok(Comparable::Query(query)),
            Operand::Query(_) => Err(self.error(
                at,
                "a comparison needs a singular query (names and indices only, such as \
                 `@.a[0]`): this one can select several nodes",
            )),
            Operand::Value(function) => Ok(Comparable::Function(Box::new(function))),
            Operand::Logical(_) => Err(self.type_error(
                at,
                "a function returning a logical value cannot be compared",
            )),
        }
    }

    /// A literal, a query or a function call.
    fn operand(&mut self) -> Parsed<Operand> {
        match self.peek() {
            Some(b'@' | b'$') => {
                let relative = self.peek() == Some(b'@');
                self.pos += 1;
                let steps = self.segments()?;
                Ok(Operand::Query(Query { relative, steps }))
            }
            Some(b'\'' | b'"') => Ok(Operand::Literal(Value::String(self.string()?))),
            Some(b'-' | b'0'..=b'9') => Ok(Operand::Literal(self.number()?)),
            Some(b'a'..=b'z') => self.word(),
            _ => Err(self.unexpected("a query (`@...`, `$...`), a literal or a function call")),
        }
    }

    /// `true`, `false`, `null` or a function call.
    fn word(&mut self) -> Parsed<Operand> {
        let start = self.pos;
        let len = self.src[start..]
            .bytes()
            .take_while(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
            .count();
        let name = &self.src[start..start + len];
        self.pos += len;
        if self.eat(b'(') {
            return self.call(name, start);
        }
        match name {
            "true" => Ok(Operand::Literal(Value::Bool(true))),
            "false" => Ok(Operand::Literal(Value::Bool(false))),
            "null" => Ok(Operand::Literal(Value::Null)),
            _ => {
                self.pos = start;
                Err(self.unexpected("`true`, `false`, `null` or a function call `name(...)`"))
            }
        }
    }

    /// `number`: `int` or `-0`, an optional fraction and an optional exponent.
    fn number(&mut self) -> Parsed<Value> {
        let start = self.pos;
        self.eat(b'-');
        let digits = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let int = &self.src[digits..self.pos];
        if int.is_empty() {
            return Err(self.unexpected("a digit"));
        }
        if int.len() > 1 && int.starts_with('0') {
            return Err(self.error(start, "a number has no leading zero"));
        }
        let mut integral = true;
        if self.eat(b'.') {
            integral = false;
            self.digits()?;
        }
        if self.eat(b'e') || self.eat(b'E') {
            integral = false;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            self.digits()?;
        }
        let text = &self.src[start..self.pos];
        if integral && let Ok(i) = text.parse::<i64>() {
            return Ok(Value::from(i));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| self.error(start, format!("`{text}` is not a finite number")))
    }

    /// One or more digits.
    fn digits(&mut self) -> Parsed<()> {
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.unexpected("a digit"));
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        Ok(())
    }

    /// After `name(`: the arguments, typed against the function's declaration.
    fn call(&mut self, name: &str, at: usize) -> Parsed<Operand> {
        self.enter()?;
        let mut args = Vec::new();
        self.skip_blanks();
        if !self.eat(b')') {
            loop {
                self.skip_blanks();
                let start = self.pos;
                args.push((self.argument()?, start));
                self.skip_blanks();
                if self.eat(b')') {
                    break;
                }
                self.expect(b',', "`,` or `)`")?;
            }
        }
        self.leave();
        let count = args.len();
        let arity = |n: usize| {
            if count == n {
                Ok(())
            } else {
                Err(self.function_error(
                    name,
                    at,
                    format!(
                        "takes {n} argument{}, not {}",
                        if n == 1 { "" } else { "s" },
                        count
                    ),
                ))
            }
        };
        let mut args = args.into_iter();
        let mut next = || {
            args.next()
                .ok_or_else(|| self.error(at, "missing argument"))
        };
        match name {
            "length" => {
                arity(1)?;
                let (arg, _) = next()?;
                Ok(Operand::Value(ValueFunction::Length(
                    self.value_argument(name, arg, at)?,
                )))
            }
            "count" | "value" => {
                arity(1)?;
                let (arg, _) = next()?;
                let Operand::Query(query) = arg else {
                    return Err(self.function_error(
                        name,
                        at,
                        format!("takes a query (NodesType), not {}", arg.describe()),
                    ));
                };
                Ok(Operand::Value(if name == "count" {
                    ValueFunction::Count(query)
                } else {
                    ValueFunction::Value(query)
                }))
            }
            "match" | "search" => {
                arity(2)?;
                let (subject, _) = next()?;
                let (pattern, pattern_at) = next()?;
                let whole = name == "match";
                let subject = self.value_argument(name, subject, at)?;
                let pattern = match self.value_argument(name, pattern, at)? {
                    Comparable::Literal(Value::String(source)) => {
                        RegexArg::Compiled(Arc::new(Pattern::new(&source, whole).map_err(|e| {
                            PredicateError::new(
                                self.offset + pattern_at,
                                PredicateErrorKind::IRegexp {
                                    pattern: source.clone(),
                                    reason: e.to_string(),
                                },
                            )
                        })?))
                    }
                    other => RegexArg::Dynamic(Arc::new(DynamicPattern::new(other))),
                };
                Ok(Operand::Logical(Logical::Regex(RegexCall {
                    whole,
                    subject,
                    pattern,
                })))
            }
            _ => Err(self.error(
                at,
                format!("unknown function `{name}()`; RFC 9535 defines {FUNCTIONS}"),
            )),
        }
    }

    /// `function-argument`: a literal, a query, a function call or a logical expression.
    fn argument(&mut self) -> Parsed<Operand> {
        let start = self.pos;
        if !matches!(self.peek(), Some(b'!' | b'(')) {
            let operand = self.operand()?;
            let before = self.pos;
            self.skip_blanks();
            if matches!(self.peek(), Some(b',' | b')')) {
                self.pos = before;
                return Ok(operand);
            }
        }
        self.pos = start;
        Ok(Operand::Logical(self.logical()?))
    }

    /// An argument for a ValueType parameter of function `name`, written at `at`.
    fn value_argument(&self, name: &str, arg: Operand, at: usize) -> Parsed<Comparable> {
        match arg {
            Operand::Query(query) if !query.is_singular() => Err(self.function_error(
                name,
                at,
                "takes a single value (ValueType): this query can select several nodes; \
                 only names and indices (`@.a[0]`) make a singular query"
                    .to_owned(),
            )),
            Operand::Logical(_) => Err(self.function_error(
                name,
                at,
                "takes a single value (ValueType), not a logical expression".to_owned(),
            )),
            other => self.comparable(other, at),
        }
    }

    fn type_error(&self, at: usize, reason: &str) -> PredicateError {
        let name = self.src[at..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        self.function_error(name, at, reason.to_owned())
    }

    fn function_error(&self, name: &str, at: usize, reason: String) -> PredicateError {
        PredicateError::new(
            self.offset + at,
            PredicateErrorKind::FunctionType {
                function: name.to_owned(),
                reason,
            },
        )
    }
}
