//! Why a jq expression could not be compiled (and where), or why running it on a message failed.

use jaq_core::compile::Undefined;
use jaq_core::load::{self, lex, parse};
use jaq_json::Val;

use super::value::Json;

/// Longest message text kept from jaq: a value quoted inside an error (`cannot use {...} as
/// number`) may be the whole payload, and the text ends up in a dead letter's reason.
const MAX_MESSAGE: usize = 200;

/// A jq expression that could not be compiled: what was wrong, at which bytes of the expression.
///
/// `offset` counts bytes from the start of the expression; `len` is the length of the offending
/// token (0 at the end of the expression).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid jq expression at byte {offset}: {kind}")]
pub struct JqError {
    offset: usize,
    len: usize,
    kind: JqErrorKind,
}

impl JqError {
    fn new(source: &str, at: &str, kind: JqErrorKind) -> Self {
        let (offset, len) = span(source, at);
        JqError { offset, len, kind }
    }

    pub(super) fn at(offset: usize, len: usize, kind: JqErrorKind) -> Self {
        JqError { offset, len, kind }
    }

    /// Where the problem is: a byte offset into the expression.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// How many bytes the offending token spans (0 at the end of the expression).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the offending part is empty (the problem is at the end of the expression).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What the problem is.
    pub fn kind(&self) -> &JqErrorKind {
        &self.kind
    }
}

/// The ways a jq expression can be wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JqErrorKind {
    /// A token (or a character) that does not fit the grammar there.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What would have fitted.
        expected: String,
        /// What was there (`end of input` at the end).
        found: String,
    },
    /// A `(`, `[`, `{` or `"` that is never closed; the offset is the opening one's.
    #[error("`{0}` is never closed")]
    Unclosed(String),
    /// A filter, variable, label or module the expression uses that is not defined.
    #[error("undefined {what} `{name}`")]
    Undefined {
        /// `filter`, `variable`, `label` or `module`.
        what: &'static str,
        /// The name, with the arity for a filter (`foo/1`).
        name: String,
    },
    /// A name of jq's that eip leaves out, and why.
    #[error("`{name}` is not available: {why}")]
    Unavailable {
        /// The name as written.
        name: &'static str,
        /// Why it is left out.
        why: &'static str,
    },
    /// `reduce` or `foreach` with the wrong number of arguments.
    #[error("`{name}` takes {expected} arguments, found {found}")]
    Arity {
        /// The keyword.
        name: &'static str,
        /// How many it takes.
        expected: &'static str,
        /// How many there were.
        found: usize,
    },
    /// An `import` or `include`: an expression is one self-contained program.
    #[error("modules can not be imported here")]
    Import,
    /// Brackets and chained operators nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    #[error("nested more than {0} levels deep (brackets and chained operators)")]
    TooDeep(usize),
}

/// Running a jq expression on a message failed. The display text is short: it becomes the
/// reason of an invalid or dead-lettered message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The payload is not JSON; `reason` is the parser's, with line and column.
    #[error("payload is not JSON: {reason}")]
    NotJson {
        /// serde_json's message, ending with the position.
        reason: String,
        /// The line (from 1) where parsing stopped.
        line: usize,
        /// The column (from 1) where parsing stopped.
        column: usize,
    },
    /// The expression raised an error with `error(...)`: the value as text (a string as is,
    /// anything else as compact JSON).
    #[error("jq error: {0}")]
    Raised(String),
    /// A type error or another failure inside jq (`cannot use null as iterable`), or `halt`.
    #[error("jq: {0}")]
    Failed(String),
    /// The expression gave another number of outputs than the one expected.
    #[error("expected exactly one output from jq, got {0}")]
    Outputs(usize),
    /// The expression gave more outputs than a step collects.
    #[error("jq gave more than {0} outputs")]
    TooManyOutputs(usize),
    /// An output can not be written as JSON (an object key that is not a string).
    #[error("jq output is not JSON: {0}")]
    OutputNotJson(String),
}

impl RunError {
    pub(crate) fn not_json(e: &serde_json::Error) -> Self {
        RunError::NotJson {
            reason: e.to_string(),
            line: e.line(),
            column: e.column(),
        }
    }
}

/// Cuts a message from jaq to [`MAX_MESSAGE`] bytes (at a character boundary).
pub(crate) fn shorten(mut text: String) -> String {
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The first of jaq's load errors (lexing, parsing, imports), positioned in `source`.
pub(crate) fn from_load(source: &str, errors: load::Errors<&str, ()>) -> JqError {
    let first = errors.into_iter().find_map(|(file, error)| {
        // Errors in the standard library's own definitions can not happen; report those that
        // belong to the expression.
        same_text(file.code, source).then_some(error)
    });
    let at_end = &source[source.len()..];
    match first {
        Some(load::Error::Lex(errors)) => match errors.into_iter().next() {
            Some(error) => from_lex(source, error),
            None => JqError::new(source, at_end, unexpected("token", "")),
        },
        Some(load::Error::Parse(errors)) => match errors.into_iter().next() {
            Some(error) => from_parse(source, error),
            None => JqError::new(source, at_end, unexpected("term", "")),
        },
        Some(load::Error::Io(errors)) => {
            let at = errors.first().map_or(at_end, |(path, _)| *path);
            JqError::new(source, at, JqErrorKind::Import)
        }
        None => JqError::new(source, at_end, unexpected("term", "")),
    }
}

/// The first of jaq's compile errors (undefined names), positioned in `source`.
pub(crate) fn from_compile(source: &str, errors: jaq_core::compile::Errors<&str, ()>) -> JqError {
    let first = errors
        .into_iter()
        .filter(|(file, _)| same_text(file.code, source))
        .flat_map(|(_, errors)| errors)
        .next();
    let Some((name, undefined)) = first else {
        return JqError::new(source, &source[source.len()..], unexpected("term", ""));
    };
    let kind = match (name, undefined) {
        ("reduce", Undefined::Filter(found)) => JqErrorKind::Arity {
            name: "reduce",
            expected: "2",
            found,
        },
        ("foreach", Undefined::Filter(found)) => JqErrorKind::Arity {
            name: "foreach",
            expected: "2 or 3",
            found,
        },
        ("env" | "$ENV", Undefined::Filter(0) | Undefined::Var) => JqErrorKind::Unavailable {
            name: if name == "env" { "env" } else { "$ENV" },
            why: "the process environment may hold secrets",
        },
        ("input" | "inputs", Undefined::Filter(0)) => JqErrorKind::Unavailable {
            name: if name == "input" { "input" } else { "inputs" },
            why: "an expression reads one message, its payload is `.`",
        },
        (_, Undefined::Filter(arity)) => JqErrorKind::Undefined {
            what: "filter",
            name: format!("{name}/{arity}"),
        },
        (_, undefined) => JqErrorKind::Undefined {
            what: undefined.as_str(),
            name: name.to_owned(),
        },
    };
    JqError::new(source, name, kind)
}

fn from_lex(source: &str, (expected, found): lex::Error<&str>) -> JqError {
    // The rest of the input from where lexing stopped: keep its first character.
    let found = first_char(found);
    let expected = match expected {
        lex::Expect::Delim(open) if found.is_empty() => {
            return JqError::new(source, open, JqErrorKind::Unclosed(open.to_owned()));
        }
        lex::Expect::Delim(open) => {
            let (at, _) = span(source, open);
            format!("the end of the `{open}` at byte {at}")
        }
        // `as_str` is total for the other kinds.
        other => other.as_str().to_owned(),
    };
    JqError::new(source, found, unexpected(&expected, found))
}

fn from_parse(source: &str, (expected, found): parse::Error<&str>) -> JqError {
    let expected = match expected {
        parse::Expect::Just(word) => format!("`{word}`"),
        other => other.as_str().to_owned(),
    };
    JqError::new(source, found, unexpected(&expected, found))
}

fn unexpected(expected: &str, found: &str) -> JqErrorKind {
    JqErrorKind::Unexpected {
        expected: expected.to_owned(),
        found: if found.is_empty() {
            "end of input".to_owned()
        } else {
            format!("`{}`", shorten(found.to_owned()))
        },
    }
}

fn first_char(s: &str) -> &str {
    let end = s.char_indices().nth(1).map_or(s.len(), |(i, _)| i);
    &s[..end]
}

/// Whether `a` is the very string `b` (jaq hands back slices of what it was given).
fn same_text(a: &str, b: &str) -> bool {
    std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
}

/// The offset and length of `part` inside `whole`; a slice from elsewhere counts as the end.
fn span(whole: &str, part: &str) -> (usize, usize) {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize);
    match start {
        Some(start) if start + part.len() <= whole.len() => (start, part.len()),
        _ => (whole.len(), 0),
    }
}

/// A jq exception as a [`RunError`]: `error(v)` raised by the expression, or a failure of jaq's.
pub(crate) fn from_exception(exception: jaq_core::Exn<'_, Val>) -> RunError {
    match exception.get_err() {
        Ok(error) => from_error(error),
        Err(other) => match other.get_halt() {
            Ok(code) => RunError::Failed(format!("halt({code}) stops the expression")),
            // Only a `break` without its `label` is left, which the compiler refuses.
            Err(_) => RunError::Failed("break outside its label".to_owned()),
        },
    }
}

fn from_error(error: jaq_core::Error<Val>) -> RunError {
    // jaq keeps a raised value as it was given; its own errors are text with values spliced
    // in. Only a raised value comes back unchanged from `into_val`.
    let value = error.clone().into_val();
    if jaq_core::Error::new(value.clone()) != error {
        return RunError::Failed(shorten(error.to_string()));
    }
    let text = match &value {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
        other => serde_json::to_string(&Json(other)).unwrap_or_else(|_| other.to_string()),
    };
    RunError::Raised(shorten(text))
}
