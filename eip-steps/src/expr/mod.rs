//! jq expressions: the language every value a step computes is written in.
//!
//! A [`Jq`] is a jq program compiled once, when a route is built, by
//! [jaq](https://github.com/01mf02/jaq) with jq's standard library (`map`, `select`, `test`,
//! `@base64`, `todate`, ...). An expression that does not compile is a [`JqError`] giving the byte
//! where it went wrong. Running it on a message never panics: what goes wrong is a [`RunError`].
//!
//! What an expression sees of a message:
//!
//! - `.` is the payload parsed as JSON (strict: no comments, no `NaN`). A payload that is not JSON
//!   is [`RunError::NotJson`] for every expression, whether it reads `.` or not.
//! - `$headers` is an object of the message's headers, by name: a string header is a string, an
//!   integer or a float header a number, a boolean a boolean, and a bytes header a string of its
//!   bytes read as UTF-8 (an invalid sequence becomes U+FFFD), as predicates read them.
//! - `$id` is the message id as a string (`"0190b6a4-…"`).
//!
//! An output is JSON again: a number that is not finite (`nan`, `infinite`) becomes `null`, as
//! in jq; an object key that is not a string is [`RunError::OutputNotJson`]. jq's `env` and
//! `$ENV` are not there (the process environment may hold secrets), nor `input` and `inputs`
//! (an expression reads one message).
//!
//! [`Jq::one`] wants exactly one output, [`Jq::all`] takes every output up to
//! [`MAX_OUTPUTS`] (a splitter's `.items[]`), and [`Jq::one_payload`] writes the one output as a
//! new payload without building a `serde_json::Value` on the way.
//!
//! ```
//! use eip_core::Message;
//! use eip_steps::expr::{Jq, RunError};
//!
//! let total = Jq::compile("{id: $id, total: (.items | map(.price * .qty) | add)}").unwrap();
//! let msg = Message::new(r#"{"items": [{"price": 2, "qty": 3}, {"price": 5, "qty": 1}]}"#);
//! let out = total.one(&msg).unwrap();
//! assert_eq!(out["total"], 11);
//! assert_eq!(out["id"], msg.id().to_string());
//!
//! let err = Jq::compile(".items | mapp(.price)").unwrap_err();
//! assert_eq!(err.offset(), 9);
//! assert_eq!(err.to_string(), "invalid jq expression at byte 9: undefined filter `mapp/1`");
//!
//! let parts = Jq::compile(".items[]").unwrap();
//! assert_eq!(parts.all(&msg).unwrap().len(), 2);
//! assert!(matches!(parts.one(&msg), Err(RunError::Outputs(2))));
//! ```
//!
//! What no bound catches: a program that loops for ever (`def f: f; f`), builds an enormous
//! value (`[range(1e9)]`), or recurses through its own definitions until the thread's stack runs
//! out. Expressions come from the flow's author, not from messages; a payload nests at most 128
//! deep (serde_json's limit, past which it is [`RunError::NotJson`]).

mod demand;
mod depth;
mod error;
mod project;
mod read;
mod template;
mod value;

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use eip_core::Message;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;

pub(crate) use demand::Demand;
pub use error::{JqError, JqErrorKind, RunError};
pub use template::JqPlaceholder;

/// The most outputs [`Jq::all`] collects; one more is [`RunError::TooManyOutputs`].
pub const MAX_OUTPUTS: usize = 1_000_000;

/// How deep an expression may nest, counting brackets and the operators of a chain (`1 + 1 +
/// ...`): jaq parses, compiles and runs an expression by recursion, and one a few hundred deep
/// overflows a 2 MiB thread stack (a tokio worker's), which aborts the process. Real
/// expressions nest a dozen deep; an object's fields and `;`-separated arguments count apart.
pub const MAX_DEPTH: usize = 128;

/// Native filters of jaq's standard library left out: `env` would hand the process
/// environment (tokens, passwords) to whoever writes a flow file.
const LEFT_OUT: &[&str] = &["env"];

/// The variables every expression may read, in the order their values are bound.
const GLOBALS: [&str; 2] = ["$headers", "$id"];

type Data = data::JustLut<Val>;

thread_local! {
    /// The variables of an expression that reads neither `$headers` nor `$id`: the same for
    /// every message, so made once per thread (jaq's values are reference counted, not shared
    /// between threads) rather than allocated for each run.
    static UNREAD: Vars<Val> = Vars::new([Val::Null, Val::Null]);
}

/// A compiled jq expression. Cheap to clone (shared), and shared freely between threads.
#[derive(Clone)]
pub struct Jq {
    program: Arc<Program>,
}

struct Program {
    source: Box<str>,
    filter: jaq_core::Filter<Data>,
    /// Whether the source mentions `$headers` (or `$id`): building the variable costs a copy of
    /// every header, skipped for the many expressions that never look.
    reads_headers: bool,
    reads_id: bool,
    /// The parts of the payload the program can read: only those are built for it.
    demand: Demand,
}

impl Jq {
    /// Parses and compiles a jq expression, with jq's standard library.
    ///
    /// ```
    /// use eip_steps::expr::{Jq, JqErrorKind};
    ///
    /// let err = Jq::compile("{id: .id").unwrap_err();
    /// assert_eq!(err.offset(), 0);
    /// assert_eq!(err.kind(), &JqErrorKind::Unclosed("{".into()));
    /// ```
    pub fn compile(source: &str) -> Result<Jq, JqError> {
        depth::check(source, MAX_DEPTH)?;
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs::<Data>()
            .chain(jaq_std::funs::<Data>())
            .chain(jaq_json::funs::<Data>())
            .filter(|(name, _, _)| !LEFT_OUT.contains(name));
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(
                &arena,
                File {
                    code: source,
                    path: (),
                },
            )
            .map_err(|e| error::from_load(source, e))?;
        let filter = Compiler::default()
            .with_funs(funs)
            .with_global_vars(GLOBALS)
            .compile(modules)
            .map_err(|e| error::from_compile(source, e))?;
        Ok(Jq {
            program: Arc::new(Program {
                source: source.into(),
                filter,
                reads_headers: source.contains("$headers"),
                reads_id: source.contains("$id"),
                demand: demand::of_program(source),
            }),
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.program.source
    }

    /// Whether the program reads the whole payload; if not, only the parts it can read are
    /// built for it (the rest is still checked to be JSON).
    pub fn reads_whole_payload(&self) -> bool {
        self.program.demand.is_all()
    }

    /// The one output over `msg`; none or several is [`RunError::Outputs`].
    pub fn one(&self, msg: &Message) -> Result<serde_json::Value, RunError> {
        let input = value::parse_payload(msg.payload(), &self.program.demand)?;
        to_value(&self.one_val(input, msg)?)
    }

    /// Every output over `msg`, in order (none is an empty list); past [`MAX_OUTPUTS`],
    /// [`RunError::TooManyOutputs`].
    pub fn all(&self, msg: &Message) -> Result<Vec<serde_json::Value>, RunError> {
        let input = value::parse_payload(msg.payload(), &self.program.demand)?;
        self.all_of(input, msg)
    }

    /// [`Jq::all`] with the whole payload built by serde_json, whatever the program reads: the
    /// reference the fuzz target and the tests hold the projected parse (and the reader of
    /// [`read`]) to.
    #[doc(hidden)]
    pub fn all_reading_everything(
        &self,
        msg: &Message,
    ) -> Result<Vec<serde_json::Value>, RunError> {
        let input = value::parse_payload_with_serde(msg.payload(), &Demand::All)?;
        self.all_of(input, msg)
    }

    fn all_of(&self, input: Val, msg: &Message) -> Result<Vec<serde_json::Value>, RunError> {
        let mut values = Vec::new();
        for out in self.run(input, msg) {
            if values.len() == MAX_OUTPUTS {
                return Err(RunError::TooManyOutputs(MAX_OUTPUTS));
            }
            values.push(to_value(&out?)?);
        }
        Ok(values)
    }

    /// The one output over `msg`, written as compact JSON: a new payload.
    pub fn one_payload(&self, msg: &Message) -> Result<Bytes, RunError> {
        let input = value::parse_payload(msg.payload(), &self.program.demand)?;
        to_payload(&self.one_val(input, msg)?)
    }

    /// What the program reads of the payload.
    pub(crate) fn demand(&self) -> &Demand {
        &self.program.demand
    }

    /// The one output over an already parsed payload (for steps that run several expressions
    /// over one message and parse it once).
    pub(crate) fn one_val(&self, input: Val, msg: &Message) -> Result<Val, RunError> {
        let mut outs = self.run(input, msg);
        let first = match outs.next() {
            None => return Err(RunError::Outputs(0)),
            Some(out) => out?,
        };
        let mut count = 1;
        for out in outs {
            out?;
            count += 1;
            if count > MAX_OUTPUTS {
                return Err(RunError::TooManyOutputs(MAX_OUTPUTS));
            }
        }
        match count {
            1 => Ok(first),
            n => Err(RunError::Outputs(n)),
        }
    }

    fn run<'a>(
        &'a self,
        input: Val,
        msg: &Message,
    ) -> impl Iterator<Item = Result<Val, RunError>> + 'a {
        let program = &*self.program;
        let vars = match (program.reads_headers, program.reads_id) {
            (false, false) => UNREAD.with(Vars::clone),
            (reads_headers, reads_id) => {
                let headers = match reads_headers {
                    true => value::headers(msg.headers()),
                    false => Val::Null,
                };
                let id = match reads_id {
                    true => value::text(&msg.id().to_string()),
                    false => Val::Null,
                };
                Vars::new([headers, id])
            }
        };
        let ctx = Ctx::<Data>::new(&program.filter.lut, vars);
        program
            .filter
            .id
            .run((ctx, input))
            .map(|out| out.map_err(error::from_exception))
    }
}

/// The payload parsed as jq sees it, the parts `demand` reads of it built (for steps that run
/// several expressions over one message: the union of their demands, [`Demand::of_all`]).
pub(crate) fn parse(msg: &Message, demand: &Demand) -> Result<Val, RunError> {
    value::parse_payload(msg.payload(), demand)
}

/// A jq value as a `serde_json::Value`.
pub(crate) fn to_value(v: &Val) -> Result<serde_json::Value, RunError> {
    serde_json::to_value(value::Json(v)).map_err(|e| RunError::OutputNotJson(e.to_string()))
}

/// A jq value written as compact JSON.
pub(crate) fn to_payload(v: &Val) -> Result<Bytes, RunError> {
    value::write_payload(v)
}

impl fmt::Debug for Jq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Jq({:?})", self.program.source)
    }
}

impl fmt::Display for Jq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program.source)
    }
}

impl std::str::FromStr for Jq {
    type Err = JqError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Jq::compile(s)
    }
}

impl TryFrom<&str> for Jq {
    type Error = JqError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Jq::compile(s)
    }
}

#[cfg(test)]
mod tests;
