//! Problems found in a flow, and how they are shown to the user. (Stub: being written.)

use crate::spec::Position;

/// One problem in a flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where, when the flow came from a file.
    pub at: Option<Position>,
    /// How to fix it, e.g. "did you mean `trades.requests`?".
    pub help: Option<String>,
}

/// Every problem found in a flow.
#[derive(Debug, Clone)]
pub struct FlowErrors {
    /// The file's name as given (or `<flow>` for a flow made in code).
    pub name: String,
    /// The file's text, for snippets.
    pub source: Option<String>,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}
