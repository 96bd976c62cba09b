//! Why a predicate could not be built, and where.

use crate::topic::TopicError;

/// A predicate that could not be built: what was wrong, at which byte of the expression.
///
/// `offset` counts bytes from the start of the whole expression, also for a problem found by
/// the JSONPath parser deep inside a path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid predicate at byte {offset}: {kind}")]
pub struct PredicateError {
    /// Where the problem is: a byte offset into the expression.
    pub offset: usize,
    /// What the problem is.
    pub kind: PredicateErrorKind,
}

impl PredicateError {
    pub(crate) fn new(offset: usize, kind: PredicateErrorKind) -> Self {
        PredicateError { offset, kind }
    }

    pub(crate) fn unexpected(offset: usize, expected: impl Into<String>, found: &str) -> Self {
        PredicateError::new(
            offset,
            PredicateErrorKind::Unexpected {
                expected: expected.into(),
                found: found.to_owned(),
            },
        )
    }
}

/// The ways a predicate can be wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PredicateErrorKind {
    /// A token that does not fit the grammar there.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What would have fitted.
        expected: String,
        /// What was there (`end of input` at the end).
        found: String,
    },
    /// A string literal without its closing quote.
    #[error("string is never closed")]
    UnterminatedString,
    /// An escape sequence the string syntax does not know.
    #[error("invalid escape `{0}` in string")]
    InvalidEscape(String),
    /// A number that is not a finite 64-bit float.
    #[error("`{0}` is not a finite number")]
    InvalidNumber(String),
    /// A `[` or `(` of a JSONPath that is never closed.
    #[error("`{0}` in JSONPath is never closed")]
    Unclosed(char),
    /// A JSONPath that does not follow RFC 9535's grammar.
    #[error("invalid JSONPath `{path}`: {reason}")]
    JsonPath {
        /// The path as written.
        path: String,
        /// What was wrong, and what would have fitted.
        reason: String,
    },
    /// A JSONPath function called with arguments of the wrong type, or used where its result
    /// does not fit (RFC 9535 §2.4.3): `length(@.*)`, `count(@..*)` alone as a test.
    #[error("JSONPath function `{function}()` is not well-typed: {reason}")]
    FunctionType {
        /// The function's name.
        function: String,
        /// Which rule the call breaks.
        reason: String,
    },
    /// The pattern of `match()` or `search()` is not an I-Regexp (RFC 9485).
    #[error("`{pattern}` is not an I-Regexp: {reason}")]
    IRegexp {
        /// The pattern as written (escapes decoded).
        pattern: String,
        /// What was wrong, and where in the pattern.
        reason: String,
    },
    /// A regular expression (right of `=~`) that does not compile.
    #[error("invalid regular expression: {0}")]
    Regex(String),
    /// A topic pattern (right of `matches`) that can not be used.
    #[error("{0}")]
    TopicPattern(TopicError),
    /// An ordering operator (`<`, `<=`, `>`, `>=`) with a literal that has no order.
    #[error(
        "`{op}` orders numbers and strings; `{literal}` can only be compared with `==` or `!=`"
    )]
    Unordered {
        /// The operator.
        op: &'static str,
        /// The literal (`true`, `false` or `null`).
        literal: &'static str,
    },
    /// Parentheses or `not`s nested deeper than the parser allows.
    #[error("nested more than {0} levels deep")]
    TooDeep(usize),
}
