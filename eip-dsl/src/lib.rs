//! The flow builder, the flow-file format and the `eip` command-line tool.
//!
//! A flow is declared either in Rust (a builder that reads top to bottom like the pattern
//! diagrams) or in a YAML flow file; both compile into the same runtime graph of eip-core
//! channels and routers. This crate holds the spec → validate → compile → run pipeline and the
//! `eip` binary; they arrive with the flow-file issue.

pub use eip_adapters as adapters;
pub use eip_core as core;
