//! A named parameter and where its value comes from: a JSONPath into the payload, a header,
//! or a top-level field.

use eip_core::predicate::JsonPath;

/// Where a parameter's value comes from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A JSONPath (RFC 9535) into the payload, which must select exactly one value.
    Path(Box<JsonPath>),
    Header(String),
    Field(String),
}

/// A named parameter of a statement.
#[derive(Debug, Clone)]
pub(super) struct Parameter {
    /// As written, for errors: `:$.symbol`.
    pub(super) written: String,
    /// Where its value comes from.
    pub(super) source: Source,
}
