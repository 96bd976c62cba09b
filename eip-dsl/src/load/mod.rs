//! Reading a flow file: YAML text into a [`FlowSpec`], and nothing more; checking it is
//! [validation](crate::validate)'s. [`load_file`] and [`load_str`] (from
//! [`flow_file`](crate::flow_file)) do both, one after the other.
//!
//! The YAML is parsed by serde-saphyr into a tree of nodes that each keep their line, column
//! and byte range, then read into a [`FlowSpec`] by hand, so that every problem is collected
//! rather than only the first: an unknown key (with the closest valid one), a key written
//! twice, a value of the wrong type, a missing required key. Validation then checks the flow
//! as a whole, and both steps' problems come back together, in file order, as one
//! [`FlowErrors`].
//!
//! A flow file is outside data: nothing in it can make the loader panic, and serde-saphyr's
//! parsing budget stays on, so a hostile file (nested ten thousand levels deep, or a "billion
//! laughs" of aliases) is refused with a problem instead of exhausting memory.
//!
//! ```
//! use eip_dsl::load::load_str;
//!
//! let flow = "
//! channels:
//!   orders: {kind: point-to-point}
//!   shipped: {kind: point-to-point}
//! routes:
//!   - {from: orders, to: shiped}
//! ";
//! let errors = load_str(flow, "flow.yaml", ".".as_ref()).unwrap_err();
//! assert_eq!(errors.problems[0].message, "unknown channel or exchange `shiped`");
//! assert_eq!(errors.problems[0].help.as_deref(), Some("did you mean `shipped`?"));
//! ```

mod adapters;
mod flow;
mod node;
mod read;
mod routes;
mod steps;

use serde_saphyr::{MessageFormatter as _, UserMessageFormatter};

use self::node::{Node, RawLocation};
use self::read::Reader;
use crate::diagnostic::{Damage, FlowErrors, Problem};
pub use crate::flow_file::{load_file, load_file_with, load_str, load_str_with};
use crate::spec::FlowSpec;
pub use crate::text_file::{ReadError, read_text_file};

/// The largest flow file read, in bytes. A flow is a page or two of YAML; anything near this
/// is not one.
pub const MAX_FLOW_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Only the reading step (YAML → FlowSpec), every structural problem collected.
pub fn parse_str(source: &str, name: &str) -> Result<FlowSpec, FlowErrors> {
    match read_str(source) {
        Ok((spec, problems, _)) if problems.is_empty() => Ok(spec),
        Ok((_, problems, _)) => Err(FlowErrors::new(name, Some(source.to_owned()), problems)),
        Err(problem) => Err(FlowErrors::new(
            name,
            Some(source.to_owned()),
            vec![*problem],
        )),
    }
}

/// The flow as far as it could be read, the problems met, and what was lost; `Err` when the
/// text is not YAML at all.
pub(crate) fn read_str(source: &str) -> Result<(FlowSpec, Vec<Problem>, Damage), Box<Problem>> {
    let reader = Reader::new(source);
    if source.len() > MAX_FLOW_FILE_BYTES {
        return Err(Box::new(Problem::new(
            format!(
                "the flow file is {} bytes long; at most {MAX_FLOW_FILE_BYTES} are read",
                source.len()
            ),
            None,
        )));
    }
    let root: Node = serde_saphyr::from_str_with_options(source, parse_options())
        .map_err(|e| Box::new(syntax_problem(&reader, &e)))?;
    let mut reader = reader;
    let (spec, damage) = flow::read_flow(&mut reader, &root);
    Ok((spec, reader.problems, damage))
}

/// The document as plain data (no positions, comments or formatting), for telling whether two
/// versions of a flow file say the same; `None` when it is not YAML.
pub(crate) fn document(source: &str) -> Option<serde_json::Value> {
    if source.len() > MAX_FLOW_FILE_BYTES {
        return None;
    }
    serde_saphyr::from_str_with_options(source, parse_options()).ok()
}

/// serde-saphyr's options: repeated keys reach the reader (which reports them with both
/// positions), infinities are values the reader can refuse by name, and the budget is
/// tightened to the size of a flow file.
fn parse_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    options.with_snippet = false;
    let mut budget = options.budget.take().unwrap_or_default();
    budget.max_depth = 32;
    budget.max_events = 200_000;
    budget.max_nodes = 100_000;
    budget.max_documents = 1;
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
    options.alias_limits.max_replay_stack_depth = 16;
    options
}

/// A YAML error as a problem at its position.
fn syntax_problem(reader: &Reader<'_>, error: &serde_saphyr::Error) -> Problem {
    let message: String = UserMessageFormatter
        .format_message(error)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let at = error
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| reader.position_of(RawLocation::from_location(&l)));
    Problem::new(format!("invalid YAML: {message}"), at)
}
